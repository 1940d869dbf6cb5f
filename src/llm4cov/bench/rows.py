"""Rows of ``results.jsonl``: one per (arm, task, sample, round).

A row holds the observation summary used for scoring (``status``, ``sim_pass``,
``cov_pass``, ``coverage`` = scored overall percent, 0 when the simulation failed), the
accounting (model, sampling parameters, seeds, simulator, tokens, seconds), and what a
resume needs to replay the round without calling the model or the simulator again:
the raw ``response`` and the full ``observation``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from llm4cov.bench.metrics import Outcome
from llm4cov.policies.base import SamplingParams
from llm4cov.sim.observation import Observation
from llm4cov.tasks.model import Task

ROW_SCHEMA_VERSION = 1
ROW_KEY = ("arm", "task_id", "sample", "round")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def make_row(
    *,
    arm: str,
    task: Task,
    sample: int,
    round_: int,
    observation: Observation,
    testbench: str | None,
    simulator: str,
    wall_s: float,
    model: str,
    response: str | None = None,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    gen_s: float = 0.0,
    policy: dict[str, Any] | None = None,
    params: SamplingParams | None = None,
    seed: int | None = None,
    from_round: int = -1,
) -> dict[str, Any]:
    """One result row. ``response`` is None for the reference testbench (no model).
    ``wall_s`` is seconds from the model request to the observation (queueing included);
    ``gen_s`` the model's part of it.
    """
    obs = observation
    rep = obs.coverage
    return {
        "schema_version": ROW_SCHEMA_VERSION,
        "arm": arm,
        "task_id": task.id,
        "sample": sample,
        "round": round_,
        "from_round": from_round,
        "model": model,
        "policy": policy or {},
        "params": params.as_dict() if params else None,
        "seed": seed,
        "simulator": obs.simulator or simulator,
        "coverage_options": obs.coverage_options,
        "sim_seed": obs.seed,
        "status": obs.status.value,
        "end_reason": obs.end_reason.value,
        "sim_pass": obs.sim_pass,
        "cov_pass": obs.meets(task.targets),
        "coverage": obs.overall(),
        "measured_overall": rep.overall if rep else None,
        "metrics": {m: [c.covered, c.total] for m, c in rep.metrics.items()} if rep else {},
        "tool_error": obs.tool_error,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "gen_s": round(gen_s, 3),
        "build_s": obs.build_s,
        "run_s": obs.run_s,
        "wall_s": round(wall_s, 3),
        "testbench_sha256": sha256(testbench) if testbench is not None else None,
        "response": response,
        "observation": obs.model_dump(mode="json"),
    }


def outcome(row: dict[str, Any]) -> Outcome:
    """The scored state of a row."""
    return Outcome(bool(row["sim_pass"]), bool(row["cov_pass"]), float(row["coverage"]))


def simulated(row: dict[str, Any]) -> bool:
    """Whether the row's round called the simulator (a response without a testbench
    does not)."""
    return row["testbench_sha256"] is not None
