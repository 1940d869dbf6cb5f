"""What one simulator call returns: the paper's observation ``o = (status, coverage, log)``.

Units: coverage percentages are percent (0-100) everywhere in reports;
:meth:`Observation.cov` returns the paper's ``Cov(o)`` as a fraction (0-1).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from llm4cov.sim.model.construct import Construct
from llm4cov.sim.model.functional import FunctionalCoverage
from llm4cov.sim.model.metrics import OVERALL_METRICS

SCHEMA_VERSION = 5
"""2: ``CoverageReport.constant``; expression terms named from their own row.
3: ``Observation.functional`` (testbench covergroups).
4: ``Observation.tb_error_prints``, ``Observation.sim_time_ps``; the fidelity notes
(time-0 edge, a run that ended at time 0; ``sim/analysis/fidelity.py``).
5: ``UncoveredItem.typed`` (the typed construct of a miss; an item stored without
one reads its construct back from its wording, ``Construct.from_text``)."""

__all__ = ["OVERALL_METRICS", "SCHEMA_VERSION", "CoverageData", "CoverageReport",
           "EndReason", "ItemKey", "MetricCoverage", "Observation", "Status", "UncoveredItem",
           "overall_percent", "overall_without"]

ItemKey = tuple[str, str, int, Construct, str]
"""What identifies an uncovered item (:attr:`UncoveredItem.key`): ``(kind, file, line,
typed, words)``."""


class Status(StrEnum):
    """How a simulator call ended (paper: status of ``o``).

    ``success`` is the only status that counts as Sim Pass: the testbench compiled and
    the simulation ended by itself (``$finish``, ``$stop``, or no events left).
    ``tool_error``: the simulator itself failed on the testbench (an internal error of
    Verilator, decided from the tool's own output, never from what the testbench
    prints), also after the retry without the coverage type that triggered it. It is
    not the model's failure: ``bench`` and ``synth`` count it apart and leave it out of
    metric denominators. A ``compile_error`` whose errors all lie in the RTL, which
    fails on its own too, carries :attr:`Observation.rtl_error` (counted apart the same
    way).
    """

    SUCCESS = "success"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    NO_COVERAGE = "no_coverage"
    REJECTED = "rejected"
    TOOL_ERROR = "tool_error"


class EndReason(StrEnum):
    """How the simulation run itself ended (structured signal from the driver).

    - ``finish``: ``$finish``, or a ``$stop`` of the testbench or the RTL (compiled as
      ``$finish``, like Icarus ``vvp -n``'s end; a note says so); ``no_events``: every
      process finished and no clock runs.
    - ``fatal``: ``$fatal`` or a simulator runtime error (e.g. DIDNOTCONVERGE).
    - ``sim_time_limit``: the simulated-time limit stopped a testbench that never ended;
      ``wall_timeout``: the wall-clock limit; ``crashed``: killed by a signal or a
      resource limit; ``not_run``: the run never started (rejected, compile error).
    """

    FINISH = "finish"
    NO_EVENTS = "no_events"
    FATAL = "fatal"
    SIM_TIME_LIMIT = "sim_time_limit"
    WALL_TIMEOUT = "wall_timeout"
    CRASHED = "crashed"
    NOT_RUN = "not_run"


class MetricCoverage(BaseModel):
    """Covered and total points of one metric (covered = hit count > 0)."""

    model_config = ConfigDict(frozen=True)

    covered: int
    total: int

    @property
    def pct(self) -> float:
        """Percent covered (0-100); 0 when there are no points."""
        return 100.0 * self.covered / self.total if self.total else 0.0


def overall_percent(metrics: dict[str, MetricCoverage]) -> float:
    """Mean of the per-metric percentages over the metrics that have points.

    This is Cadence IMC's "Overall Average" semantics (paper, "Evaluator"; CVDP cid012),
    restricted to :data:`OVERALL_METRICS`. Returns percent (0-100); 0 with no points.
    """
    pcts = [m.pct for name, m in metrics.items() if name in OVERALL_METRICS and m.total]
    return sum(pcts) / len(pcts) if pcts else 0.0


def overall_without(metrics: dict[str, MetricCoverage], removed: dict[str, int]) -> float:
    """:func:`overall_percent` (percent) with ``removed[metric]`` uncovered points left out
    of that metric's total (proven-unreachable points: a separate figure beside the
    headline, never the headline itself; a total never drops below the covered count)."""
    return overall_percent({
        name: MetricCoverage(covered=m.covered,
                             total=max(m.covered, m.total - removed.get(name, 0)))
        for name, m in metrics.items()})


class CoverageReport(BaseModel):
    """Coverage of the DUT instance and its subtree.

    ``metrics`` sums every point at or below ``dut_hier`` that comes from the repo's
    RTL files (IMC's view of one instance: its subtree's own points); ``overall`` is
    percent (0-100) over them, see :func:`overall_percent`. ``per_instance`` maps each
    instance hierarchy of that subtree to its own points' metrics (the per-instance
    tree; :meth:`subtree` sums a branch). Hierarchies are exact unless listed in
    ``merged`` (instances Verilator still merged, wildcarded like ``tb.dut.u*``).
    """

    model_config = ConfigDict(frozen=True)

    dut_hier: str
    metrics: dict[str, MetricCoverage]
    per_instance: dict[str, dict[str, MetricCoverage]] = Field(default_factory=dict)
    overall: float
    merged: list[str] = Field(default_factory=list)
    constant: dict[str, int] = Field(default_factory=dict)
    """Uncovered points per metric that the parameters make unreachable: the condition
    reads only parameters and its other outcome was seen
    (:func:`llm4cov.sim.model.coverage.constant_dead`). They stay in ``metrics`` and
    ``overall``; reports show them apart with :meth:`overall_without_constant` as a
    separate figure (as URG/IMC report such items apart)."""

    def overall_without_constant(self) -> float:
        """Overall percent with the :attr:`constant` points left out of their totals (a
        separate figure beside :attr:`overall`, never the headline)."""
        return round(overall_without(self.metrics, self.constant), 4)

    def subtree(self, hier: str) -> dict[str, MetricCoverage]:
        """Metrics of ``hier`` and every instance below it (sums of ``per_instance``)."""
        covered: dict[str, int] = {}
        total: dict[str, int] = {}
        for inst, metrics in self.per_instance.items():
            if inst == hier or inst.startswith(hier + "."):
                for name, m in metrics.items():
                    covered[name] = covered.get(name, 0) + m.covered
                    total[name] = total.get(name, 0) + m.total
        return {n: MetricCoverage(covered=covered[n], total=total[n]) for n in sorted(total)}

    def metric_percent(self, metric: str) -> float:
        """Percent for ``metric`` (``overall`` or a metric name); 0 if it has no points."""
        if metric == "overall":
            return self.overall
        m = self.metrics.get(metric)
        return m.pct if m else 0.0


class UncoveredItem(BaseModel):
    """One coverage miss of the DUT subtree (stable data model).

    - ``kind``: the metric (:data:`llm4cov.sim.model.metrics.METRICS`: ``line`` | ``branch``
      | ``expr`` | ``toggle`` | ``fsm`` | ``user``);
    - ``file``, ``line``: RTL file name (as in the repo) and 1-based line (the miss's
      own line: an ``else`` at its keyword);
    - ``typed``: what was missed, its typed construct
      (:class:`~llm4cov.sim.model.construct.Construct`: the ``if`` arm, case item, expression
      term, toggle bits, ...), which every program reads (formal goals, the
      parameter-constant flag ``param_only``);
    - ``detail``: what was missed in words, rendered from ``typed``
      (:func:`llm4cov.sim.model.wording.render`: ``else branch of the if at f.v:3 never
      taken``, ``q[3] never toggled 0->1``) for the reader only;
    - ``source``: that RTL source line (stripped, at most 160 characters);
    - ``instance``: the exact hierarchy of the (first) instance that missed it;
    - ``instances``: every instance hierarchy that missed it (sorted), and ``copies``:
      how many instances of the DUT subtree have points on that line (IMC per-instance
      view: a miss in 1 of 16 S-boxes names that S-box).

    Identity: :attr:`key` (and :attr:`key_text` in files) is the one rule for "the same
    miss"; ``detail`` never enters it.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    file: str
    line: int
    detail: str
    source: str = ""
    instance: str = ""
    instances: tuple[str, ...] = ()
    copies: int = 1
    typed: Construct

    @model_validator(mode="before")
    @classmethod
    def _typed(cls, data: Any) -> Any:
        """An item given without a construct (written by hand, or stored before items
        carried one) reads it back from its wording
        (:func:`llm4cov.sim.model.wording.read_detail`, ``from_text``)."""
        if isinstance(data, dict) and data.get("typed") is None:
            from llm4cov.sim.model.wording import read_detail

            data = {**data, "typed": read_detail(
                str(data.get("kind", "")), int(data.get("line", 0) or 0),
                str(data.get("detail", "")))}
        return data

    @property
    def key(self) -> ItemKey:
        """The item's identity, the one rule every set, dict and comparison of items
        uses (the merge of a miss's instances, formal's tried and settled items and goal
        matching, ``close``'s analyzed items): ``(kind, file, line, typed, words)``.
        ``words`` is empty: the wording (``detail``) is rendered for the reader and never
        identifies an item, so rewording a phrase changes no identity. The one exception
        is an item whose construct was read back from its wording (``typed.from_text``,
        a lossy reading): that given wording is all it is known by, so ``words`` holds
        it."""
        return (self.kind, self.file, self.line, self.typed,
                self.detail if self.typed.from_text else "")

    @property
    def key_text(self) -> str:
        """:attr:`key` as a stable string, for files (``close``'s ``steps.jsonl``):
        ``kind|file|line|`` then the construct as JSON with sorted keys (fields at their
        default left out, so a new field does not change it), then ``|words`` for an
        item read back from its wording."""
        typed = json.dumps(self.typed.model_dump(mode="json"), sort_keys=True,
                           separators=(",", ":"))
        words = f"|{self.detail}" if self.typed.from_text else ""
        return f"{self.kind}|{self.file}|{self.line}|{typed}{words}"

    @property
    def param_only(self) -> bool:
        """The missed outcome's condition reads only parameters (constant after
        elaboration: likely unreachable)."""
        return self.typed.param_only

    def where(self) -> str:
        """Which instances missed it, when the line belongs to several instances:
        ``in all 4 instances`` or ``in tb.dut.u1, tb.dut.u2``; empty otherwise."""
        if self.copies <= 1:
            return ""
        if len(self.instances) >= self.copies:
            return f"in all {self.copies} instances"
        shown = ", ".join(self.instances[:3])
        more = len(self.instances) - 3
        return f"in {shown}" + (f" and {more} more" if more > 0 else "")

    def render(self) -> str:
        """One line: ``file:line [kind] detail (where) | source``."""
        text = f"{self.file}:{self.line} [{self.kind}] {self.detail}"
        if self.where():
            text += f" ({self.where()})"
        return f"{text} | {self.source.strip()}" if self.source.strip() else text


class CoverageData(BaseModel):
    """The raw coverage of one run, for the reports (``docs/reports.md``): the run's own
    ``coverage.dat`` (zlib-compressed; at most the backend's read cap before
    compression), the DUT instance path and which modules are the repo's RTL and which
    the testbench's (:class:`llm4cov.sim.model.coverage.DesignModules`). It travels with the
    observation of a :class:`~llm4cov.sim.model.call.SimCall` that asked for it
    (``keep_coverage``) and is never serialized with it."""

    model_config = ConfigDict(frozen=True)

    dat_zlib: bytes
    dut_hier: str
    rtl_modules: tuple[str, ...] = ()
    tb_modules: tuple[str, ...] = ()


class Observation(BaseModel):
    """Result of ``Sim(repo, testbench)``; a failure is data, never an exception.

    ``coverage`` may be present even when ``status`` is not ``success`` (a ``$fatal`` or
    a simulated-time-limit stop keeps what was collected, for feedback), but
    :meth:`cov` scores every non-success as 0, as the paper does.

    ``tool_error`` marks failures of the simulator or the machine (a Verilator internal
    error, a failed fork), not of the testbench: harnesses retry or report them apart.
    ``rtl_error`` marks a ``compile_error`` that is the design's own: every located
    error lies in an RTL file and the RTL alone (a testbench that only instantiates the
    DUT) fails too (``sim/analysis/rtl_check.py``); the first note says so, naming the RTL file
    and line. No testbench can pass: ``gen`` stops (exit 2), ``sim`` exits 2,
    ``bench`` and ``synth`` count it apart and leave it out of metric denominators.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    status: Status
    end_reason: EndReason = EndReason.NOT_RUN
    coverage: CoverageReport | None = None
    functional: FunctionalCoverage | None = None
    """The testbench's covergroup bins, where the backend counts them; never part of
    ``coverage`` or of any score (:mod:`llm4cov.sim.model.functional`)."""
    log: str = ""
    uncovered: list[UncoveredItem] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    tb_error_count: int = 0
    """``$error`` calls and failed assertions the run reported (never fatal)."""
    tb_error_prints: int = 0
    """Lines of the run's output that start with ``ERROR``/``FAIL`` (any case): the
    testbench's own error prints (:func:`llm4cov.sim.analysis.fidelity.error_prints`)."""
    tool_error: bool = False
    tool_error_testbench: bool = False
    """With ``tool_error``: the RTL alone does not fail in the simulator with the same
    options (it builds, or cannot be a top), so this testbench's code brings the
    simulator's failure out; a benchmark counts the sample
    as failed (a testbench could crash the simulator on purpose to leave its task's
    denominators: a twenty-third red team)."""
    rtl_error: bool = False
    simulator: str = ""
    backend: str = ""
    """The simulator backend's registry name (``--simulator``)."""
    coverage_options: list[str] = Field(default_factory=list)
    seed: int = 0
    build_s: float = 0.0
    run_s: float = 0.0
    sim_time: str = ""
    sim_time_ps: int | None = None
    """The simulated time the run reached, in picoseconds (rounded down when the
    design's precision is finer); None when unknown or not run. ``sim_time`` is the
    same time as text in the design's unit."""
    cached: bool = False
    """Served from the result cache (``cache.py``): every other field is the stored
    observation's, ``build_s``/``run_s`` included (the original call's timing)."""

    coverage_data: CoverageData | None = Field(default=None, exclude=True, repr=False)
    """The run's raw coverage, only when the call asked for it (``SimCall.keep_coverage``);
    left out of every dump (round records, the result cache, ``comparable``)."""

    TIMING_FIELDS: ClassVar[frozenset[str]] = frozenset({"build_s", "run_s", "cached"})

    def comparable(self) -> dict:
        """The observation without wall-clock timing (and cache) fields: what must be
        identical for identical inputs (the evaluator is deterministic)."""
        return self.model_dump(exclude=set(self.TIMING_FIELDS))

    @property
    def sim_pass(self) -> bool:
        """Sim Pass (CVDP-ECov): compiled and the simulation ended by itself."""
        return self.status is Status.SUCCESS

    def overall(self) -> float:
        """Overall coverage in percent (0-100) as scored: 0 unless ``sim_pass``."""
        if not self.sim_pass or self.coverage is None:
            return 0.0
        return self.coverage.overall

    def cov(self) -> float:
        """The paper's ``Cov(o)``: overall coverage as a fraction (0-1), 0 on failure."""
        return self.overall() / 100.0

    def meets(self, targets: list) -> bool:
        """Cov Pass: simulation passed and every target metric reached its percentage."""
        if not self.sim_pass or self.coverage is None:
            return False
        return all(
            self.coverage.metric_percent(t.metric) >= t.target_percentage for t in targets
        )
