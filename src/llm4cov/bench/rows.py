"""Rows of ``results.jsonl``: one per (arm, task, sample, round).

A row holds the observation summary used for scoring (``status``, ``sim_pass``,
``cov_pass``, ``coverage`` = scored overall percent, 0 when the simulation failed), the
accounting (model, sampling parameters, seeds, simulator, tokens, seconds), and what a
resume needs to replay the round without calling the model or the simulator again:
the raw ``response`` and the full ``observation``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from llm4cov.bench.metrics import Outcome
from llm4cov.policies.base import SamplingParams
from llm4cov.sim.model.observation import EndReason, Observation, Status
from llm4cov.tasks.model import Task
from llm4cov.util.budget import Budget

ROW_SCHEMA_VERSION = 1
ROW_KEY = ("arm", "task_id", "sample", "round")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class ResultRow(BaseModel):
    """One line of ``results.jsonl``. Seconds are wall-clock seconds; ``coverage`` and
    ``measured_overall`` are percent (0-100); ``metrics`` maps a metric to
    ``[covered, total]``; ``observation`` is the full observation as stored (JSON form,
    kept as written so a line reads back byte-identical).

    Raises (``model_validate``):
        ValidationError: a missing or unknown key, or a value of the wrong type.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = ROW_SCHEMA_VERSION
    arm: str
    task_id: str
    sample: int
    round: int
    from_round: int = -1
    model: str
    policy: dict[str, Any]
    params: dict[str, Any] | None
    seed: int | None
    simulator: str
    coverage_options: list[str]
    sim_seed: int
    status: Status
    end_reason: EndReason
    sim_pass: bool
    cov_pass: bool
    coverage: float
    measured_overall: float | None
    metrics: dict[str, list[int]]
    tool_error: bool
    prompt_tokens: int
    completion_tokens: int
    gen_s: float
    build_s: float
    run_s: float
    wall_s: float
    testbench_sha256: str | None
    response: str | None
    observation: dict[str, Any]
    annotations: dict[str, Any] | None = None
    """The policy's facts about its answer (:attr:`~llm4cov.policies.Generation.annotations`,
    e.g. the ``formal`` policy's verdicts); absent from the line when there are none."""

    @property
    def simulated(self) -> bool:
        """Whether the round called the simulator (a response without a testbench
        does not)."""
        return self.testbench_sha256 is not None

    def as_json(self) -> dict[str, Any]:
        """The row as ``results.jsonl`` stores it (:class:`~llm4cov.util.jsonl.ResultLog`)."""
        return self.model_dump(mode="json", exclude={"annotations"} if not self.annotations
                               else None)


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
    annotations: dict[str, Any] | None = None,
) -> ResultRow:
    """One result row. ``response`` is None for the reference testbench (no model).
    ``wall_s`` is seconds from the model request to the observation (queueing included);
    ``gen_s`` the model's part of it; ``annotations`` the policy's (None or empty: none).
    """
    obs = observation
    rep = obs.coverage
    return ResultRow(
        schema_version=ROW_SCHEMA_VERSION,
        arm=arm,
        task_id=task.id,
        sample=sample,
        round=round_,
        from_round=from_round,
        model=model,
        policy=policy or {},
        params=params.as_dict() if params else None,
        seed=seed,
        simulator=obs.simulator or simulator,
        coverage_options=obs.coverage_options,
        sim_seed=obs.seed,
        status=obs.status,
        end_reason=obs.end_reason,
        sim_pass=obs.sim_pass,
        cov_pass=obs.meets(task.targets),
        coverage=obs.overall(),
        measured_overall=rep.overall if rep else None,
        metrics={m: [c.covered, c.total] for m, c in rep.metrics.items()} if rep else {},
        tool_error=obs.tool_error and not obs.tool_error_testbench,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        gen_s=round(gen_s, 3),
        build_s=obs.build_s,
        run_s=obs.run_s,
        wall_s=round(wall_s, 3),
        testbench_sha256=sha256(testbench) if testbench is not None else None,
        response=response,
        observation=obs.model_dump(mode="json"),
        annotations=annotations or None,
    )


def outcome(row: dict[str, Any]) -> Outcome:
    """The scored state of a row."""
    return Outcome(bool(row["sim_pass"]), bool(row["cov_pass"]), float(row["coverage"]))


def simulated(row: dict[str, Any]) -> bool:
    """:attr:`ResultRow.simulated` of a row read as a plain mapping (streaming)."""
    return row["testbench_sha256"] is not None


def charge_prior(budget: Budget, rows: Iterable[dict[str, Any]]) -> None:
    """Charge ``budget`` with what the existing result ``rows`` already spent: the
    samples they started, their simulator calls and their model tokens."""
    started = set()
    for row in rows:
        started.add((row["arm"], row["task_id"], row["sample"]))
        budget.charge(simulated(row), row["prompt_tokens"] + row["completion_tokens"])
    budget.samples += len(started)
