"""Settings of one ``llm4cov bench`` run and the arms (rows of the results table) it runs.

An *arm* is one row of the table: the model under test, the ``random`` baseline, or
``reference`` (the task's hidden human-written testbench, simulated once per task).
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any

from llm4cov.agent.loop import AgentConfig
from llm4cov.exec.base import ExecutorKind
from llm4cov.policies.base import SamplingParams
from llm4cov.sim.config import SimConfig

RANDOM = "random"
REFERENCE = "reference"
BASELINES = (RANDOM, REFERENCE)
SAMPLE_SEED_STRIDE = 1000
"""Sample ``s`` uses policy seed ``seed + 1000 * s``; its round ``r`` uses that plus ``r``."""
NOT_IDENTITY = ("tasks", "base_url", "executor", "address", "workers", "cache", "sandbox",
                "max_concurrency", "max_samples", "max_sim_calls", "max_total_tokens")
"""Fields that do not decide results: where the tasks file, the server and the
simulators are, how fast and how far the run goes. (The tasks themselves enter the
identity as a hash.)"""


class Mode(StrEnum):
    """``agentic``: N memoryless rounds with simulator feedback; ``direct``: one round."""

    AGENTIC = "agentic"
    DIRECT = "direct"


class ArmKind(StrEnum):
    AGENT = "agent"
    REFERENCE = "reference"


@dataclass(frozen=True)
class Arm:
    """One row of the results table: ``samples`` trajectories of ``rounds`` rounds per task."""

    name: str
    kind: ArmKind
    samples: int
    rounds: int


@dataclass(frozen=True)
class BenchConfig:
    """Everything that defines a bench run.

    Fields in :meth:`identity` decide the results; a run directory refuses a resume with
    a different identity. The fields in :data:`NOT_IDENTITY` may change between
    resumes. Times are seconds. ``executor``, ``address`` and ``workers`` say where
    simulations run (:func:`llm4cov.exec.get_executor`); ``cache`` turns the
    evaluator's result cache on or off, ``sandbox`` the OS sandbox (``--no-sandbox``).
    Budgets count the whole run directory (earlier invocations included); ``None`` means
    no limit.
    """

    tasks: str
    model: str = RANDOM
    base_url: str | None = None
    mode: Mode = Mode.AGENTIC
    rounds: int = 3
    samples: int = 5
    baselines: tuple[str, ...] = BASELINES
    temperature: float = 0.7
    top_p: float = 0.8
    max_tokens: int = 8192
    seed: int = 0
    start_from: str = "latest"
    syntax_rules: bool = False
    stop_at_full_coverage: bool = True
    ids: tuple[str, ...] = ()
    limit: int | None = None
    compile_timeout_s: float = 300.0
    run_timeout_s: float = 60.0
    sim_seed: int = 1
    fsm: bool = False
    executor: ExecutorKind = ExecutorKind.LOCAL
    address: str | None = None
    workers: int | None = None
    cache: bool = True
    sandbox: bool = True
    max_concurrency: int = 16
    max_samples: int | None = None
    max_sim_calls: int | None = None
    max_total_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.samples < 1:
            raise ValueError("rounds and samples must be >= 1")
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        unknown = set(self.baselines) - set(BASELINES)
        if unknown:
            raise ValueError(f"unknown baseline {', '.join(sorted(unknown))}; "
                             f"valid: {', '.join(BASELINES)}")
        if self.model == REFERENCE:
            raise ValueError(f"{REFERENCE!r} is a baseline, not a model")
        if self.start_from not in ("latest", "best"):
            raise ValueError("start_from must be 'latest' or 'best'")
        object.__setattr__(self, "mode", Mode(self.mode))
        object.__setattr__(self, "executor", ExecutorKind(self.executor))

    @property
    def agent_rounds(self) -> int:
        """Rounds per sample: ``rounds`` in agentic mode, 1 in direct mode."""
        return self.rounds if self.mode is Mode.AGENTIC else 1

    def arms(self) -> list[Arm]:
        """The model's arm, then the baselines (``random`` once even when it is the model)."""
        arms = [Arm(self.model, ArmKind.AGENT, self.samples, self.agent_rounds)]
        if RANDOM in self.baselines and self.model != RANDOM:
            arms.append(Arm(RANDOM, ArmKind.AGENT, self.samples, self.agent_rounds))
        if REFERENCE in self.baselines:
            arms.append(Arm(REFERENCE, ArmKind.REFERENCE, 1, 1))
        return arms

    def params(self) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.max_tokens)

    def agent_config(self, sample: int) -> AgentConfig:
        """The agent settings of sample ``sample`` (its own seed, see SAMPLE_SEED_STRIDE)."""
        return AgentConfig(
            rounds=self.agent_rounds,
            start_from=self.start_from,  # type: ignore[arg-type]
            stop_at_full_coverage=self.stop_at_full_coverage,
            params=self.params(),
            syntax_rules=self.syntax_rules,
            seed=self.seed + SAMPLE_SEED_STRIDE * sample,
        )

    def sim_config(self) -> SimConfig:
        return SimConfig(compile_timeout_s=self.compile_timeout_s,
                         run_timeout_s=self.run_timeout_s, seed=self.sim_seed,
                         fsm_coverage=self.fsm, result_cache=self.cache,
                         sandbox=self.sandbox)

    def identity(self) -> dict[str, Any]:
        """The fields that decide the results (JSON-ready)."""
        data = {k: v for k, v in asdict(self).items() if k not in NOT_IDENTITY}
        return {**data, "mode": self.mode.value, "baselines": list(self.baselines),
                "ids": list(self.ids)}

    def command(self) -> str:
        """The ``llm4cov bench`` command line that reproduces this run (non-default
        flags only, plus ``--tasks --model --mode --samples``)."""
        defaults = BenchConfig(tasks=self.tasks)
        parts = ["llm4cov", "bench"]
        for f in fields(self):
            value = getattr(self, f.name)
            shown = f.name in ("tasks", "model", "mode", "samples")
            if not shown and value == getattr(defaults, f.name):
                continue
            flag = "--" + f.name.removesuffix("_s").replace("_", "-")
            if f.name == "ids":
                parts += [a for i in value for a in ("--id", i)]
            elif f.name == "baselines":
                parts += [flag, ",".join(value)]
            elif isinstance(value, bool):
                parts.append(flag if value else "--no-" + flag[2:])
            else:
                parts += [flag, str(value)]
        return shlex.join(parts)
