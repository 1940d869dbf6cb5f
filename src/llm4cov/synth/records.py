"""Rows of a synthesis run directory (JSON Lines written through ``ResultLog``).

- ``samples.jsonl``: :class:`SampleRow`, one generation + simulation (the costly unit;
  a resumed run reuses every row already there).
- ``points.jsonl``: :class:`DataPoint`, the paper's ``d_t = (s_t, x_{t+1})`` with both
  observations, both coverages, the gain and the rejection verdict.
- ``repos.jsonl``: :class:`RepoRow`, one per finished or skipped repo.

Coverage fields named ``cov`` are the paper's ``Cov(o)`` as a fraction (0-1).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from llm4cov.sim.model.observation import Observation
from llm4cov.synth.config import TraceType
from llm4cov.tasks.model import Task

SCHEMA_VERSION = 1
INITIAL_STATE = "s0"
SAMPLE_KEY = ("repo_id", "role", "parent", "index")
POINT_KEY = ("repo_id", "point_id")
REPO_KEY = ("repo_id",)


class Role(StrEnum):
    """What a sample is: the compile probe, an ``M_int`` state, an ``M_trans`` transition,
    or a broken state planted in an ``M_int`` testbench (``synth/repair.py``)."""

    PROBE = "probe"
    INTERMEDIATE = "int"
    TRANSITION = "trans"
    BROKEN = "broken"


class PointKind(StrEnum):
    """``direct``: from ``s_0`` (no feedback); ``agentic``: from an intermediate state."""

    DIRECT = "direct"
    AGENTIC = "agentic"


class Verdict(StrEnum):
    """Outcome of coverage-guided rejection for one candidate transition."""

    KEPT = "kept"
    NOT_BEST = "not_best"  # passed every rule, another candidate gained more
    BELOW_MIN_COVERAGE = "below_min_coverage"
    BELOW_TAU = "below_tau"
    SIM_FAILED = "sim_failed"


class RepoStatus(StrEnum):
    DONE = "done"
    SKIPPED = "skipped"


class SampleRow(BaseModel):
    """One policy generation and its simulation.

    ``parent`` is the state the prompt showed (``s0`` or ``int/<k>``); ``testbench`` is
    None when the response held no code (then ``simulated`` is False and the
    observation is ``rejected``). The prompt is not stored: it may hold the
    generation-time syntax rules (``syntax_rules`` says whether it did).
    """

    schema_version: int = SCHEMA_VERSION
    repo_id: str
    role: Role
    parent: str
    index: int
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int
    response: str
    testbench: str | None
    observation: Observation
    simulated: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    syntax_rules: bool = False

    @property
    def state_id(self) -> str:
        """The id of the state this sample produced (``int/<k>`` for ``M_int`` samples)."""
        return f"{self.role.value}/{self.index}" if self.parent == INITIAL_STATE else (
            f"{self.parent}>{self.role.value}/{self.index}"
        )


class StateInfo(BaseModel):
    """``s_t`` without the repo: ``x_t``, ``o_t`` (both None for ``s_0``), who wrote
    ``x_t``, why the state was selected, and ``Cov(o_t)`` (fraction)."""

    id: str
    testbench: str | None = None
    observation: Observation | None = None
    model: str | None = None
    selected_as: str = "initial"
    cov: float = 0.0

    @property
    def is_initial(self) -> bool:
        return self.id == INITIAL_STATE


class Transition(BaseModel):
    """``x_{t+1}`` and ``o_{t+1}`` with the generation's settings and ``Cov(o_{t+1})``."""

    sample_id: str
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int
    response: str
    testbench: str | None
    observation: Observation
    cov: float
    prompt_tokens: int = 0
    completion_tokens: int = 0


class DataPoint(BaseModel):
    """The paper's ``d_t = (s_t, x_{t+1})`` with its verdict.

    ``gain`` = ``Cov(o_{t+1}) - Cov(o_t)`` (fraction). ``models`` maps ``int``/``trans``
    to the model names of the trace; ``syntax_rules`` says whether the generation prompt
    had the rules (they are never part of the exported prompt).
    """

    schema_version: int = SCHEMA_VERSION
    repo_id: str
    point_id: str
    stage: int
    trace_type: TraceType
    kind: PointKind
    state: StateInfo
    next: Transition
    gain: float
    verdict: Verdict
    models: dict[str, str]
    syntax_rules: bool = False


class RepoRow(BaseModel):
    """A repo's outcome: ``done`` (with its task, for export) or ``skipped`` with a
    ``reason`` (e.g. ``compile_error``, ``contaminated``, ``ambiguous_top``) and detail."""

    schema_version: int = SCHEMA_VERSION
    repo_id: str
    status: RepoStatus
    reason: str = ""
    detail: str = ""
    task: Task | None = None
    counts: dict[str, int] = Field(default_factory=dict)
