"""Settings of one ``llm4cov bench`` run and the arms (rows of the results table) it runs.

An *arm* is one row of the table: the model under test, the ``random`` baseline, or
``reference`` (the task's hidden human-written testbench, simulated once per task).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Self

from pydantic import Field, model_validator

from llm4cov.agent.loop import AgentConfig, StartFrom
from llm4cov.exec.settings import SimSettings
from llm4cov.policies.base import SamplingParams
from llm4cov.policies.registry import PolicyOptionsMap
from llm4cov.sim.config import SimConfig
from llm4cov.util.settings import Settings

RANDOM = "random"
REFERENCE = "reference"
BASELINES = (RANDOM, REFERENCE)
SAMPLE_SEED_STRIDE = 1000
"""Sample ``s`` uses policy seed ``seed + 1000 * s``; its round ``r`` uses that plus ``r``."""
_SAMPLING = SamplingParams()
NOT_IDENTITY = ("tasks", "base_url", "executor", "address", "workers", "cache", "sandbox",
                "max_concurrency", "max_samples", "max_sim_calls", "max_total_tokens",
                "simulator", "retry_tool_errors")
"""Fields that do not decide results: where the tasks file, the server and the
simulators are, how fast and how far the run goes. (The tasks themselves enter the
identity as a hash; the simulator, name and version, as the run plan's ``simulator``.)"""


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


class BenchSettings(Settings):
    """The benchmark protocol and budgets of a bench run: everything but the tasks, the
    model, the mode and the simulator (shared by ``llm4cov bench`` and the pipeline's
    ``bench:`` section). Budgets count the whole run directory (earlier invocations
    included); None means no limit."""

    rounds: int = Field(3, ge=1)
    """Rounds per sample in agentic mode."""
    samples: int = Field(5, ge=1)
    """Independent samples per task (n)."""
    baselines: tuple[str, ...] = BASELINES
    """Baseline rows: random, reference (the hidden reference testbench); empty for none."""
    temperature: float = Field(_SAMPLING.temperature, ge=0)
    """Sampling temperature."""
    top_p: float = Field(_SAMPLING.top_p, ge=0, le=1)
    """Nucleus sampling top-p."""
    max_tokens: int = Field(_SAMPLING.max_tokens, ge=1)
    """Max tokens per response."""
    seed: int = 0
    """Policy seed; sample s uses seed + 1000*s."""
    start_from: StartFrom = "latest"
    """Next round starts from the 'latest' or 'best' state."""
    syntax_rules: bool = False
    """Add the expert SystemVerilog rules to prompts."""
    stop_at_full_coverage: bool = True
    """End a sample once a round reaches 100%."""
    ids: tuple[str, ...] = ()
    """Only these task ids (empty: all)."""
    limit: int | None = Field(None, ge=1)
    """Only the first N tasks."""
    max_concurrency: int = Field(16, ge=1)
    """Samples in flight = max concurrent LLM requests."""
    max_samples: int | None = Field(None, ge=0)
    """Budget: sample trajectories in the run directory."""
    max_sim_calls: int | None = Field(None, ge=0)
    """Budget: simulator calls in the run directory."""
    max_total_tokens: int | None = Field(None, ge=0)
    """Budget: model tokens (prompt + completion)."""
    retry_tool_errors: bool = False
    """On a resume, redo every round whose simulation failed in the tool (``tool_error``:
    e.g. a toolchain that changed under a running bench) and the later rounds of its
    sample; their old rows are removed first."""

    @model_validator(mode="after")
    def _valid_baselines(self) -> Self:
        unknown = set(self.baselines) - set(BASELINES)
        if unknown:
            raise ValueError(f"unknown baseline {', '.join(sorted(unknown))}; "
                             f"valid: {', '.join(BASELINES)}")
        return self


class BenchConfig(BenchSettings):
    """Everything that defines a bench run: the tasks, the model, the mode, the
    protocol (:class:`BenchSettings`), the simulator (``sim``: executor, address,
    workers, cache, sandbox, timeouts; :class:`~llm4cov.exec.settings.SimSettings`) and
    the options of the arms' policies (``policies``, by registered policy name; see
    :mod:`llm4cov.policies.registry`).

    :meth:`identity` decides the results; a run directory refuses a resume with a
    different identity. The fields in :data:`NOT_IDENTITY` may change between resumes.
    """

    tasks: str
    """Task JSONL (our schema, raw CVDP cid012 records, CVDP-ECov, CodeV-R1-style) or a
    directory of repo directories: any format of llm4cov.tasks.sources, detected from
    the content."""
    model: str = RANDOM
    """'random' or a served model name."""
    base_url: str | None = None
    """OpenAI-compatible endpoint URL."""
    mode: Mode = Mode.AGENTIC
    """agentic (rounds with feedback) or direct (1 round)."""
    sim: SimSettings = Field(default_factory=SimSettings)
    policies: PolicyOptionsMap = Field(default_factory=dict)

    @model_validator(mode="after")
    def _valid_model(self) -> Self:
        if self.model == REFERENCE:
            raise ValueError(f"{REFERENCE!r} is a baseline, not a model")
        return self

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
        """The policy's sampling parameters."""
        return SamplingParams(self.temperature, self.top_p, self.max_tokens)

    def agent_config(self, sample: int) -> AgentConfig:
        """The agent settings of sample ``sample`` (its own seed, see SAMPLE_SEED_STRIDE)."""
        return AgentConfig(
            rounds=self.agent_rounds,
            start_from=self.start_from,
            stop_at_full_coverage=self.stop_at_full_coverage,
            params=self.params(),
            syntax_rules=self.syntax_rules,
            seed=self.seed + SAMPLE_SEED_STRIDE * sample,
        )

    def sim_config(self) -> SimConfig:
        """The evaluator settings of ``sim``."""
        return self.sim.sim_config()

    def flat(self) -> dict[str, Any]:
        """Every setting as one flat mapping in the order of the ``llm4cov bench``
        flags (the simulator's ``seed`` is ``sim_seed``), then ``policies`` when it
        names any option: the shape of :meth:`identity` and :meth:`command`, unchanged
        since run directories store them."""
        protocol = [(n, getattr(self, n)) for n in BenchSettings.model_fields]
        budgets = [n for n, _ in protocol].index("max_concurrency")
        sim = [("sim_seed" if n == "seed" else n, getattr(self.sim, n))
               for n in SimSettings.model_fields]
        head = [(n, getattr(self, n)) for n in ("tasks", "model", "base_url", "mode")]
        tail = [("policies", self.policies)] if self.policies else []
        return dict(head + protocol[:budgets] + sim + protocol[budgets:] + tail)

    def identity(self) -> dict[str, Any]:
        """The fields that decide the results (JSON-ready)."""
        data = {k: v for k, v in self.flat().items() if k not in NOT_IDENTITY}
        return {**data, "mode": self.mode.value, "baselines": list(self.baselines),
                "ids": list(self.ids)}

    def command(self) -> str:
        """The ``llm4cov bench`` command line that reproduces this run (non-default
        flags only, plus ``--tasks --model --mode --samples``; policy options as
        ``--set policies.NAME.KEY=VALUE``)."""
        defaults = BenchConfig(tasks=self.tasks).flat()
        parts = ["llm4cov", "bench"]
        for name, value in self.flat().items():
            shown = name in ("tasks", "model", "mode", "samples")
            if not shown and value == defaults.get(name):
                continue
            flag = "--" + name.removesuffix("_s").replace("_", "-")
            if name == "policies":
                parts += [a for policy, options in value.items() for key, v in options.items()
                          for a in ("--set", f"policies.{policy}.{key}={json.dumps(v)}")]
            elif name == "ids":
                parts += [a for i in value for a in ("--id", i)]
            elif name == "baselines":
                parts += [flag, ",".join(value)]
            elif isinstance(value, bool):
                parts.append(flag if value else "--no-" + flag[2:])
            else:
                parts += [flag, str(value)]
        return shlex.join(parts)
