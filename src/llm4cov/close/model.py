"""Typed records of a closure run: where a test came from, what each step did, why a
point is left uncovered, and the settings that decide the regression.

Everything the loop decides is read back from these records (``DIR/steps.jsonl``),
never from a rendered file.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.dataclasses import dataclass

from llm4cov.sim.model.exclusions import ProvenUnreachable

Source = Literal["random", "formal", "model"]
#: A test's name: ``t`` and its step number.
TEST_NAME = re.compile(r"t\d{4,9}")
"""What wrote a test: the built-in random policy, formal witnesses, a model's answer."""


class Origin(BaseModel):
    """Where a test came from: its ``source`` (policy kind) and the exact ``policy``
    name, the ``seed``, the stimulus ``length`` (random: clock cycles), the ``step`` of
    the loop that made it and, for a formal test, the ``goals`` its witnesses target
    (``file:line goal``); for a continuation (``policy`` ``formal-continuation``) the
    kept test it continues, ``start`` (its testbench is that test's, phases appended)."""

    model_config = ConfigDict(extra="forbid")

    source: Source
    policy: str
    seed: int
    step: int
    length: int | None = None
    goals: list[str] = Field(default_factory=list)
    start: str | None = None


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class GoalVerdict(ProvenUnreachable):
    """One formal goal's verdict (:class:`llm4cov.formal.GoalResult`, without its
    trace): the goal's fields (:class:`~llm4cov.sim.model.exclusions.ProvenUnreachable`: the
    item it stands for, ``file``, ``line``, ``kind``, wording ``item``, construct
    ``typed`` (None in a step written before verdicts carried it), the ``goal`` and
    ``metric``; its point matcher), the ``status`` (reached, unreachable, unknown,
    error), the ``reason`` and ``depth`` (the reached cycle, or the depth explored)."""

    status: str
    reason: str = ""
    depth: int = 0


class StepRecord(BaseModel):
    """One line of ``DIR/steps.jsonl``: one step of the loop, written durably once it is
    finished (the key is ``step``). A step simulates one test (``name``, ``origin``;
    ``kept`` when it added points to the merged coverage, ``added`` of them) or, for a
    formal analysis that reached nothing, no test at all (``name`` empty). ``verdicts``:
    the formal analysis done in this step; ``analyzed``: the formal items it covered
    (:attr:`~llm4cov.sim.model.observation.UncoveredItem.key_text`), so a rerun does not
    analyze them again (a key of an older run, ``kind|file|line|detail``, matches no
    item: a resumed older run analyzes those items again)."""

    model_config = ConfigDict(extra="forbid")

    step: int
    phase: str = ""
    """The schedule's phase that made it (``random``, ``formal``, ``continue``, ``model``;
    empty in a step written before steps named it)."""
    name: str = ""
    origin: Origin | None = None
    status: str = ""
    scored_overall: float = 0.0
    added: int = 0
    kept: bool = False
    rtl_error: bool = False
    """Its test did not compile because of the design's own error
    (:attr:`~llm4cov.sim.model.observation.Observation.rtl_error`): the loop stops."""
    dut_hier: str = ""
    rtl_modules: list[str] = Field(default_factory=list)
    tb_modules: list[str] = Field(default_factory=list)
    tb_sha256: str = ""
    seal: str = ""
    """The step's HMAC of its record (and, when kept, its testbench and coverage data)
    with this host's key (:func:`llm4cov.util.rundir.seal`): a resume refuses a step
    that does not match."""
    wall_s: float = 0.0
    note: str = ""
    formal_refused: str = ""
    """Why the formal tools could not take the design at all (a DUT interface port): its
    analysis did not run, and the residual says so."""
    verdicts: list[GoalVerdict] = Field(default_factory=list)
    analyzed: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _test_name(cls, name: str) -> str:
        """``t`` and the step number (the test's folder and data file are named so): a
        name read back from ``steps.jsonl`` can name no other path."""
        if name and not TEST_NAME.fullmatch(name):
            raise ValueError(f"not a test name: {name[:40]!r}")
        return name


class Cause(StrEnum):
    """Why a point is left uncovered after closure."""

    UNREACHABLE = "proven_unreachable"
    """A formal proof (k-induction of the stated depth) shows no run from reset reaches it."""
    CONSTANT = "parameter_constant"
    """Its condition reads only parameters, and the other outcome was seen."""
    EXCLUDED = "excluded"
    """A user exclusion rule (``--exclude``) leaves it out of every count."""
    NOT_REACHED = "not_reached"
    """Not reached by the tests within the stated lengths, nor by formal within the
    stated depth and time (or formal did not run on it, and why)."""
    TOOL_ERROR = "tool_error"
    """The formal job that would decide it failed (the tool's first error line)."""


CAUSE_ORDER = (Cause.UNREACHABLE, Cause.CONSTANT, Cause.EXCLUDED, Cause.NOT_REACHED,
               Cause.TOOL_ERROR)


class ResidualPoint(BaseModel):
    """One coverage point left uncovered, with its cause and the reason in words."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    file: str
    line: int
    hier: str
    module: str
    detail: str
    cause: Cause
    reason: str = ""
    proven: bool = False
    """A formal proof shows it unreachable (counts toward closure, whatever ``cause``)."""


class TestContribution(BaseModel):
    """One kept test of the final regression: the points it covers, the points only it
    covers (``unique``) and what it added when it ran (``added``, in run order)."""

    name: str
    origin: Origin
    covered: int
    unique: int
    added: int
    scored_overall: float


class CloseSettings(BaseModel):
    """The settings that decide a closure run (stored in ``run.json``; a rerun with
    other settings on the same directory is refused).

    ``budget_s``: wall seconds for the loop (no new step starts after it; the steps
    already finished count on a rerun); ``lengths``: the random stimulus lengths, in
    order (a length is left after the first test at it that adds nothing);
    ``random_share``: the random phase ends once that share of the budget is spent
    (the recorded seconds of finished steps), leaving the rest to formal and the model;
    ``seed``: the first random seed (test ``k`` uses ``seed + k``); ``formal``: run
    formal analyses (witness tests, unreachability proofs) when the tools are here;
    ``cover_depth``/``prove_depth``/``prove_budget_s``: the formal budgets (engine
    seconds for the prove jobs, :mod:`llm4cov.formal.tools`);
    ``continue_steps``/``continue_budget_s``: the continuation after the analyses (its
    steps, 0: none, and the CPU seconds of its cover jobs, at most half the budget left;
    :class:`~llm4cov.formal.closure.FormalConfig`);
    ``model``/``base_url``: a model server for model tests (``model_tests`` of them at
    most); ``minimize``: the final greedy set-cover pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    budget_s: float = 240.0
    random_share: float = 0.5
    lengths: tuple[int, ...] = (200, 1000, 5000, 20000)
    seed: int = 1
    formal: bool = True
    cover_depth: int = 30
    prove_depth: int = 10
    prove_budget_s: float = 45.0
    formal_rounds: int = 3
    continue_steps: int = 3
    continue_budget_s: float = 60.0
    model: str | None = None
    base_url: str | None = None
    model_tests: int = 3
    minimize: bool = True

    def identity(self) -> dict:
        """What must match for a rerun to resume the run (the budget may change). The
        continuation's fields only when not their defaults: a run directory written
        before they existed resumes (with the continuation)."""
        out = self.model_dump(mode="json", exclude={"budget_s"})
        for name in ("continue_steps", "continue_budget_s"):
            if out[name] == type(self).model_fields[name].default:
                del out[name]
        return out
