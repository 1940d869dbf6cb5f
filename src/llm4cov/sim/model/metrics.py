"""The coverage metrics: one table that every list of metrics reads.

A row (:class:`Metric`) says everything the rest of the tree needs to know about a
metric: its name (the ``Point.metric``, ``UncoveredItem.kind``, the key of
``CoverageReport.metrics``), the simulator's type tag that makes its points (the
``t=`` key of Verilator's ``coverage.dat``), whether it enters the headline
``overall``, whether an exclusion rule may name it, its place in the feedback list,
its LCOV record and UCIS bin, the Verilator flag that turns it on (and whether a build
that crashes Verilator is retried without it), and the words of a missed point's
phrase (``never executed``) and of the metric in prose. The table's order is the
reports' column order.

Adding a metric: one row here, the reader's mapping of its points to a typed construct
(:meth:`llm4cov.sim.model.feedback_terms.SourceIndex.construct`; a named point needs none)
and, for a construct of its own, one phrase (:func:`llm4cov.sim.model.feedback_terms.render`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One coverage metric (see the module docstring).

    - ``name``: the metric's name everywhere (``line``, ``toggle``);
    - ``tag``: the simulator's point type (``coverage.dat`` key ``t``; ``""``: points
      without one, Verilator's ``cover property``); ``tag_prefix``: every type that
      starts with ``tag`` is this metric (``fsm_state``, ``fsm_arc``);
    - ``overall``: enters ``overall`` when it has points (IMC "Overall Average");
    - ``code``: a point of the DUT's code (counted per instance, listed as a miss);
      False for the testbench's covergroup bins (:mod:`llm4cov.sim.model.functional`);
    - ``excludable``: an exclusion rule may name it (:mod:`llm4cov.sim.model.exclusions`);
    - ``conditional``: its points are outcomes of a condition that may read only
      parameters (:func:`llm4cov.sim.model.coverage.constant_dead`);
    - ``feedback_rank``: its place in the feedback list (lower first);
    - ``verilator_flag``: the Verilator option that makes its points (None: another
      row's or none); ``opt_in``: only when asked for (``SimConfig.fsm_coverage``);
      ``crash_retry``: a build that crashes Verilator is tried once more without this
      flag, the rows in this order (lower first; None: the flag is never dropped);
    - ``lcov``: its LCOV record (``DA`` lines, ``BRDA`` branches; None: none);
      ``ucis``: pyucis's XML element holding its bins and the bin element;
    - ``verb``: the word of a miss (``block never executed``, ``... never taken``);
    - ``noun``: the metric in prose (``expression`` coverage; ``""``: ``name``).
    """

    name: str
    tag: str
    tag_prefix: bool = False
    overall: bool = False
    code: bool = True
    excludable: bool = True
    conditional: bool = False
    feedback_rank: int = 9
    verilator_flag: str | None = None
    opt_in: bool = False
    crash_retry: int | None = None
    lcov: str | None = None
    ucis: tuple[str, str] | None = None
    verb: str = "hit"
    noun: str = ""


LINE = Metric("line", "line", overall=True, conditional=True, feedback_rank=0,
              verilator_flag="--coverage-line", lcov="DA", ucis=("statement", "bin"),
              verb="executed")
BRANCH = Metric("branch", "branch", overall=True, conditional=True, feedback_rank=1,
                lcov="BRDA", ucis=("branch", "branchBin"), verb="taken")
EXPR = Metric("expr", "expr", overall=True, conditional=True, feedback_rank=3,
              verilator_flag="--coverage-expr", crash_retry=1, noun="expression")
TOGGLE = Metric("toggle", "toggle", overall=True, feedback_rank=5,
                verilator_flag="--coverage-toggle", verb="toggled")
FSM = Metric("fsm", "fsm", tag_prefix=True, overall=True, feedback_rank=2,
             verilator_flag="--coverage-fsm", opt_in=True, crash_retry=0, noun="FSM")
USER = Metric("user", "", feedback_rank=4, verilator_flag="--coverage-user")
COVERGROUP = Metric("covergroup", "covergroup", code=False, excludable=False)

METRICS: tuple[Metric, ...] = (LINE, BRANCH, EXPR, TOGGLE, FSM, USER, COVERGROUP)
"""Every metric, in the reports' column order."""

BY_NAME = {m.name: m for m in METRICS}

OVERALL_METRICS = tuple(m.name for m in METRICS if m.overall)
"""Metrics that enter ``overall`` when they have points."""
REPORT_ORDER = tuple(m.name for m in METRICS if m.code)
"""The code-coverage metrics in the reports' column order."""
EXCLUDABLE = frozenset(m.name for m in METRICS if m.excludable)
"""The metric names an exclusion rule may end with."""
CONDITIONAL = frozenset(m.name for m in METRICS if m.conditional)
"""Metrics whose misses may be parameter-constant."""
LCOV_RECORDS = {m.name: m.lcov for m in METRICS if m.lcov}
"""Metric -> its LCOV record (``DA``, ``BRDA``)."""
UCIS_BINS = tuple((m.name, *m.ucis) for m in METRICS if m.ucis)
"""``(metric, holder element, bin element)`` of the metrics pyucis's XML has bins for."""


def feedback_rank(name: str) -> int:
    """The place of metric ``name``'s misses in the feedback list (unknown: last)."""
    metric = BY_NAME.get(name)
    return metric.feedback_rank if metric else 9


def verb(name: str) -> str:
    """The word of a missed point of metric ``name`` (``executed``, ``taken``)."""
    metric = BY_NAME.get(name)
    return metric.verb if metric else "hit"


def is_code(name: str) -> bool:
    """Whether metric ``name`` counts the DUT's code (every metric but the covergroup
    bins; a metric no row knows counts)."""
    metric = BY_NAME.get(name)
    return metric is None or metric.code


def metric_of_tag(tag: str) -> str:
    """The metric name of a simulator point type (``fsm_state`` -> ``fsm``, no type ->
    ``user``); a type no row knows keeps its own name."""
    for metric in METRICS:
        if tag == metric.tag or (metric.tag_prefix and tag.startswith(metric.tag)):
            return metric.name
    return tag


def verilator_flags(opted: bool) -> list[str]:
    """The Verilator coverage flags in build order: every row's flag, then those of the
    opt-in rows when ``opted`` (``--coverage-fsm`` with ``SimConfig.fsm_coverage``)."""
    always = [m.verilator_flag for m in METRICS if m.verilator_flag and not m.opt_in]
    asked = [m.verilator_flag for m in METRICS if m.verilator_flag and m.opt_in] if opted else []
    return list(dict.fromkeys([*always, *asked]))


def crash_retries() -> tuple[tuple[str, str], ...]:
    """``(flag, noun)`` of the metrics whose Verilator flag a build that crashes Verilator
    drops, one retry each, in the order they are dropped (``crash_retry``)."""
    rows = sorted((m for m in METRICS if m.crash_retry is not None),
                  key=lambda m: m.crash_retry or 0)
    return tuple((m.verilator_flag, m.noun or m.name) for m in rows if m.verilator_flag)


def opt_in_flags() -> frozenset[str]:
    """The flags of the opt-in metrics (``--coverage-fsm``)."""
    return frozenset(m.verilator_flag for m in METRICS if m.verilator_flag and m.opt_in)


def scored_metrics(options: list[str] | tuple[str, ...]) -> list[str]:
    """The ``overall`` metrics a build with coverage ``options`` measures (an opt-in
    metric only when its flag is among them)."""
    return [m.name for m in METRICS
            if m.overall and (not m.opt_in or m.verilator_flag in options)]
