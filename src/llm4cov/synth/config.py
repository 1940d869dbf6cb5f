"""Settings of ``llm4cov synth`` and ``llm4cov synth export``: one model per command, on
the shared config layer (:mod:`llm4cov.util.settings`).

Defaults are the paper's values (``../shared/docs/paper.md``, "Learning offline" and
"Stages"); where the paper is silent the field's docstring says so and what we chose.
Precedence: model defaults < the stage preset (:func:`stage_preset`) < a YAML file
< ``--set key.sub=value`` overrides < flags. Unknown keys are errors that list the valid
ones.
Units: ``Cov`` values and margins on them are fractions (0-1); anything named
``*_percent`` is percent (0-100).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from pydantic import Field, model_validator

from llm4cov.policies.base import SamplingParams
from llm4cov.synth.repair import BreakKind
from llm4cov.util.settings import (
    ConfigError,
    Settings,
    merge,
    read_mapping,
    resolve,
    to_mapping,
)

STAGES = (0, 1, 2)
STRATEGIES = ("worst", "best", "median", "uniform")
FAILURE_STATUSES = ("compile_error", "runtime_error", "timeout", "no_coverage", "rejected")


class TraceType(StrEnum):
    """Who fills the two roles ``(M_int, M_trans)`` of a trace (paper, "Learning offline")."""

    FULL_TEACHER = "full_teacher"  # (teacher, teacher)
    IMITATION = "imitation"  # (student, teacher)
    SELF_SAMPLING = "self_sampling"  # (student, student)

    @property
    def roles(self) -> tuple[str, str]:
        """``(M_int, M_trans)`` as ``"student"``/``"teacher"``."""
        return {
            TraceType.FULL_TEACHER: ("teacher", "teacher"),
            TraceType.IMITATION: ("student", "teacher"),
            TraceType.SELF_SAMPLING: ("student", "student"),
        }[self]


class SelectionConfig(Settings):
    """Which sampled intermediate states get transitions (paper, worst-state-prioritized
    synthesis and its Fig. 5 ablation)."""

    strategy: str = "worst"
    """``worst`` (the paper's rule), or the ablation baselines ``best``, ``median``,
    ``uniform``, which select as many states as ``worst`` would (budget matching)."""
    candidates: int = 5
    """K: intermediate states sampled from ``s_0`` with ``M_int`` (paper silent; 5 matches
    Stage 1's 55k student direct samples over 11k repos)."""
    include_failure: bool = True
    """Also select one failed state to learn recovery (paper: "optionally")."""
    failure_priority: tuple[str, ...] = FAILURE_STATUSES
    """Which failed state is that one: first status in this order, then lowest index (ours)."""
    median_margin: float = 0.10
    """Add the median-coverage successful state when its ``Cov`` exceeds the worst one's
    by more than this (fraction; 0.10 = 10 percentage points; paper silent, ours)."""
    max_states: int = 3
    """At most this many states per repo (paper: 3); when fewer, the median state is
    dropped first, then the failure state."""
    states_per_repo: int | None = None
    """Ablation baselines only: states per repo; None = as many as ``worst`` selects on
    the same candidates (ours: the paper says only "equal budgets")."""

    @model_validator(mode="after")
    def _valid(self) -> Self:
        _check(self.strategy in STRATEGIES, f"strategy must be one of {', '.join(STRATEGIES)}")
        _check(self.candidates >= 1, "candidates must be >= 1")
        _check(self.max_states >= 1, "max_states must be >= 1")
        _check(0 <= self.median_margin <= 1, "median_margin is a fraction in [0, 1]")
        _check(self.states_per_repo is None or self.states_per_repo >= 1,
               "states_per_repo must be >= 1 or null")
        unknown = set(self.failure_priority) - set(FAILURE_STATUSES)
        _check(not unknown, f"failure_priority: unknown status {sorted(unknown)}; "
                            f"valid: {', '.join(FAILURE_STATUSES)}")
        return self


class RejectionConfig(Settings):
    """Coverage-guided rejection (paper, "Coverage-guided rejection")."""

    tau_delta: float = 0.01
    """Keep a transition only if ``Cov(o_{t+1}) - Cov(o_t) >= tau_delta`` (fraction;
    paper: 1% = 0.01)."""
    min_overall_percent: float = 0.0
    """Also require ``Cov(o_{t+1})`` >= this (percent; paper, Stage 0: 50)."""

    @model_validator(mode="after")
    def _valid(self) -> Self:
        _check(0 <= self.tau_delta <= 1, "tau_delta is a fraction in [0, 1]")
        _check(0 <= self.min_overall_percent <= 100, "min_overall_percent is in [0, 100]")
        return self


class BudgetConfig(Settings):
    """Limits of one run directory (earlier invocations included); None = no limit.

    ``max_sim_calls`` is never exceeded: a repo starts only when its worst-case number
    of simulator calls fits. ``max_tokens`` (prompt + completion tokens reported by the
    policies) is checked before each repo starts, so repos in flight may pass it.
    """

    max_sim_calls: int | None = None
    max_tokens: int | None = None

    @model_validator(mode="after")
    def _valid(self) -> Self:
        for name in ("max_sim_calls", "max_tokens"):
            value = getattr(self, name)
            _check(value is None or value >= 0, f"{name} must be >= 0 or null")
        return self


class RepairConfig(Settings):
    """Broken states planted in the teacher's best first testbench, repaired by that
    testbench (``synth/repair.py``): agentic transitions where the teacher's own repairs
    gain nothing. Off unless ``kinds`` is set (ours; the paper's teacher is an LLM whose
    first testbenches leave room to repair)."""

    kinds: tuple[BreakKind, ...] = ()
    """Mistakes to plant: module_name, instance_name, missing_pin, misspelled_pin,
    pin_case, short_run, missing_endmodule, glued_declaration, missing_semicolon, truncated."""
    per_repo: int = 2
    """Kinds planted per repo (a rotation of ``kinds`` fixed by the repo id): one
    simulator call each."""
    min_cov: float = 0.5
    """The teacher's testbench must simulate and reach this coverage (fraction; the
    Stage-0 curation floor is 50%)."""

    @model_validator(mode="after")
    def _valid(self) -> Self:
        _check(self.per_repo >= 0, "per_repo must be >= 0")
        _check(0 <= self.min_cov <= 1, "min_cov is a fraction in [0, 1]")
        return self


class SynthConfig(Settings):
    """One synthesis run ``D(k)`` (paper, "Stages")."""

    stage: int = 0
    """Paper stage k (0, 1, 2); picks the preset and is recorded in every data point."""
    trace_type: TraceType = TraceType.FULL_TEACHER
    direct_points: bool = True
    """Also keep direct-inference points ``(s_0, x_1)``: the K ``M_int`` samples from
    ``s_0``, judged by the same rejection rule with ``Cov(s_0) = 0`` (the best one per
    repo is kept). Paper: Stages 0 and 1 add direct samples, Stage 2 does not."""
    transitions: int = 3
    """M: transitions sampled with ``M_trans`` from each selected state (paper silent;
    3 gives about the 6 teacher points per repo of Stage 1)."""
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    rejection: RejectionConfig = Field(default_factory=RejectionConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    syntax_rules: bool = False
    """Add the expert SystemVerilog rules to generation prompts (paper: Stage 0); they
    are never stored in samples or exported."""
    int_sampling: SamplingParams = Field(default_factory=SamplingParams)
    trans_sampling: SamplingParams = Field(default_factory=SamplingParams)
    screen_compile: bool = True
    """Simulate the ``random`` policy's testbench once per repo first and drop repos that
    do not compile under the evaluator or have no coverage points (ours)."""
    contamination_threshold: float = 0.5
    """Drop a repo with a file whose ROUGE-L F-measure against any benchmark file is
    >= this (paper: 50%); used when benchmarks are given."""
    seed: int = 0
    """Base of every per-sample seed and of ``uniform`` selection."""
    concurrency: int = 4
    """Repos in flight at once (simulations are limited by the executor's workers)."""
    repair: RepairConfig = Field(default_factory=RepairConfig)

    @model_validator(mode="after")
    def _valid(self) -> Self:
        _check(self.stage in STAGES, f"stage must be one of {STAGES}")
        _check(self.transitions >= 1, "transitions must be >= 1")
        _check(self.concurrency >= 1, "concurrency must be >= 1")
        _check(0 < self.contamination_threshold <= 1,
               "contamination_threshold is a fraction in (0, 1]")
        return self

    def identity(self) -> dict[str, Any]:
        """Fields that decide the data; a run directory refuses a resume when they differ
        (budgets and concurrency may change between invocations)."""
        values = to_mapping(self)
        values.pop("budget")
        values.pop("concurrency")
        if not self.repair.kinds:
            values.pop("repair")  # off: the identity of runs made before it existed
        return values


class RebalanceConfig(Settings):
    """Stage-0 rebalancing of short-context points (paper, "Stages": keep 1/3 of short
    direct-inference points and 1/2 of short agentic points)."""

    short_tokens: int = 1024
    """A repo is short when its rendered context (spec + RTL as in the prompt) has at most
    this many tokens (paper: "<= 1k tokens"; we read 1k as 1024)."""
    short_direct_keep: float = 1.0
    short_agentic_keep: float = 1.0
    seed: int = 42
    """Seed of the deterministic subsampling."""

    @model_validator(mode="after")
    def _valid(self) -> Self:
        _check(self.short_tokens >= 0, "short_tokens must be >= 0")
        for name in ("short_direct_keep", "short_agentic_keep"):
            _check(0 <= getattr(self, name) <= 1, f"{name} is a fraction in [0, 1]")
        return self


class ExportConfig(Settings):
    """``llm4cov synth export``: curation and the SFT dataset's name."""

    name: str = ""
    """Dataset name in LlamaFactory's ``dataset_info.json``; empty = ``llm4cov_stage<k>``
    (the stage presets set it)."""
    tokenizer: str | None = None
    """Local tokenizer (a ``tokenizer.json`` file or a model directory) for token counts;
    None = the approximate counter (:mod:`llm4cov.synth.tokens`)."""
    rebalance: RebalanceConfig = Field(default_factory=RebalanceConfig)


_STAGE_PRESETS: dict[int, dict[str, Any]] = {
    0: {
        "trace_type": "full_teacher",
        "direct_points": True,
        "transitions": 1,
        "selection": {"candidates": 1},
        "rejection": {"min_overall_percent": 50.0},
        "syntax_rules": True,
    },
    1: {"trace_type": "imitation", "direct_points": True},
    2: {"trace_type": "self_sampling", "direct_points": False},
}
"""Stage 0: one teacher direct sample and one teacher transition per repo (the paper's
87k + 87k samples over 87k repos), absolute coverage >= 50%, syntax rules on."""

_EXPORT_PRESETS: dict[int, dict[str, Any]] = {
    0: {"rebalance": {"short_direct_keep": 1 / 3, "short_agentic_keep": 1 / 2}},
    1: {},
    2: {},
}


def stage_preset(stage: int) -> SynthConfig:
    """The synthesis defaults of paper stage ``stage``.

    Raises:
        ConfigError: ``stage`` is not 0, 1 or 2.
    """
    _check(stage in STAGES, f"stage must be one of {STAGES}")
    return merge(SynthConfig(stage=stage), _STAGE_PRESETS[stage])


def export_preset(stage: int) -> ExportConfig:
    """The export (curation) defaults for data of paper stage ``stage``.

    Raises:
        ConfigError: ``stage`` is not 0, 1 or 2.
    """
    _check(stage in STAGES, f"stage must be one of {STAGES}")
    return merge(ExportConfig(name=f"llm4cov_stage{stage}"), _EXPORT_PRESETS[stage])


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


__all__ = ["FAILURE_STATUSES", "STAGES", "STRATEGIES", "BudgetConfig", "ConfigError",
           "ExportConfig", "RebalanceConfig", "RejectionConfig", "SelectionConfig",
           "SynthConfig", "TraceType", "export_preset", "merge", "read_mapping", "resolve",
           "stage_preset", "to_mapping"]
