"""What a coverage report shows, computed from the raw ``coverage.dat`` points.

The Observation carries only summaries (per-metric counts, a bounded list of misses);
the annotated reports need every point with its file, line and hit count, so they are
built from ``coverage.dat`` itself (the run's own: :mod:`llm4cov.report.capture`).
Only points of the DUT subtree in the repo's RTL files count, exactly as the evaluator
counts them (:func:`llm4cov.sim.model.coverage.summarize`); points matched by exclusion rules
are kept apart and shown as excluded. Two kinds of misses are shown apart, as URG and
IMC do, with the headline unchanged and a separate figure each:

- proven unreachable (``UNR``): goals a formal proof showed no run reaches
  (:class:`llm4cov.sim.model.exclusions.ProvenUnreachable`);
- parameter-constant: conditions that read only parameters, whose other outcome was
  seen (:func:`llm4cov.sim.model.coverage.constant_dead`, ``CoverageReport.constant``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from llm4cov.sim.model.construct import ConstructKind, bit_ranges
from llm4cov.sim.model.coverage import (
    DesignModules,
    Point,
    TypedPoint,
    constant_dead,
    dut_points,
    summarize,
    typed_points,
    uncovered_items,
)
from llm4cov.sim.model.exclusions import ProvenUnreachable, Rule, split_points, unreachable_misses
from llm4cov.sim.model.feedback_terms import SourceIndex
from llm4cov.sim.model.metrics import LINE, REPORT_ORDER, TOGGLE
from llm4cov.sim.model.observation import (
    CoverageReport,
    MetricCoverage,
    UncoveredItem,
    overall_percent,
    overall_without,
)

METRIC_ORDER = REPORT_ORDER
"""The report's metric columns (the code metrics of :data:`llm4cov.sim.model.metrics.METRICS`)."""


@dataclass
class Mark:
    """One coverage point shown on a source line (toggles: one per signal)."""

    metric: str
    covered: bool
    label: str
    count: int = 0
    excluded: bool = False
    partial: bool = False  # some but not all of the points it stands for were hit
    unreachable: bool = False  # every miss it stands for is proven unreachable (UNR)

    @property
    def done(self) -> bool:
        """Hit, or missed only where a proof says no run can reach it."""
        return self.covered or self.unreachable


@dataclass
class SourceLine:
    """A source line with its status: ``covered``, ``uncovered``, ``partial``, ``unr``
    (its misses are all proven unreachable), ``excluded`` or ``""`` (no point on it)."""

    number: int
    text: str
    marks: list[Mark] = field(default_factory=list)

    @property
    def status(self) -> str:
        live = [m for m in self.marks if not m.excluded]
        if not live:
            return "excluded" if self.marks else ""
        if all(m.covered for m in live):
            return "covered"
        if all(m.done for m in live):
            return "unr"
        hit = any(m.covered or m.partial for m in live)
        return "partial" if hit else "uncovered"


@dataclass
class ToggleRow:
    """Toggle coverage of one signal in one instance (bits x 2 directions);
    ``unreachable``: how many of the missing toggles are proven unreachable."""

    hier: str
    file: str
    line: int
    signal: str
    bits: str  # e.g. "[7:0]" or "" for a 1-bit signal
    covered: int
    total: int
    missing: list[str]
    excluded: bool = False
    unreachable: int = 0


@dataclass
class InstanceRow:
    """One instance of the DUT subtree: its own points and its subtree's (IMC view).
    ``depth`` counts levels below the DUT; ``module`` is its RTL module."""

    hier: str
    depth: int
    module: str
    own: dict[str, MetricCoverage]
    subtree: dict[str, MetricCoverage]
    children: int

    @property
    def name(self) -> str:
        """The instance's own name (the last hierarchy component)."""
        return self.hier.rsplit(".", 1)[-1]

    @property
    def subtree_overall(self) -> float:
        """Overall percent of the subtree (mean of its per-metric percentages)."""
        return overall_percent(self.subtree)


@dataclass
class ModuleRow:
    """One RTL module: the points of all its instances together (URG's module view)."""

    module: str
    instances: int
    metrics: dict[str, MetricCoverage]

    @property
    def overall(self) -> float:
        """Overall percent of the module's points."""
        return overall_percent(self.metrics)


@dataclass(frozen=True)
class TestRow:
    """One simulation behind the report (a round of ``gen``, the testbench of ``sim``):
    ``overall`` is the scored percent (0 unless Sim Pass); ``best``: the report's run."""

    name: str
    status: str
    overall: float
    testbench: str = ""
    note: str = ""
    best: bool = False


@dataclass(frozen=True)
class ResidualRow:
    """One point a regression leaves uncovered, with its cause (``llm4cov close``)."""

    cause: str
    module: str
    metric: str
    where: str
    instance: str
    detail: str
    reason: str


@dataclass
class ReportData:
    """Everything the HTML report renders (percentages are percent, 0-100).

    ``uncovered`` holds the misses that are neither proven unreachable
    (``unreachable_items``, counted per metric in ``unreachable``) nor parameter-constant
    (``constant_items``)."""

    dut_hier: str
    summary: CoverageReport | None
    files: dict[str, list[SourceLine]]
    uncovered: list[UncoveredItem]
    toggles: list[ToggleRow]
    excluded: dict[str, int]
    constant_items: list[UncoveredItem]
    unreachable_items: list[UncoveredItem] = field(default_factory=list)
    unreachable: dict[str, int] = field(default_factory=dict)
    instances: list[InstanceRow] = field(default_factory=list)
    modules: list[ModuleRow] = field(default_factory=list)
    tests: list[TestRow] = field(default_factory=list)
    figures: list[tuple[str, float]] = field(default_factory=list)
    """Further named figures beside the headline (``close``: the closure figure)."""
    residual: list[ResidualRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What the run should tell its user first (``gen``: :mod:`llm4cov.agent.warnings`,
    each message with its lever)."""
    """Every missed point with its cause (``close``), listed by cause and module."""

    def residual_groups(self) -> list[tuple[str, str, int]]:
        """``(cause, module, points)`` of :attr:`residual`, in the order first seen."""
        return [(c, m, n) for (c, m), n in Counter((r.cause, r.module)
                                                    for r in self.residual).items()]

    def overall_unreachable_excluded(self) -> float | None:
        """Overall percent with the proven-unreachable points left out of their totals
        (a separate figure; None without a proof or without points)."""
        if self.summary is None or not self.unreachable:
            return None
        return round(overall_without(self.summary.metrics, self.unreachable), 4)

    def overall_constant_excluded(self) -> float | None:
        """Overall percent with the parameter-constant misses left out (None without)."""
        if self.summary is None or not self.summary.constant:
            return None
        return self.summary.overall_without_constant()


def build_report_data(
    points: Sequence[Point],
    dut_hier: str,
    sources: Mapping[str, str],
    rules: Sequence[Rule] = (),
    modules: DesignModules | None = None,
    proven: Sequence[ProvenUnreachable] = (),
    tests: Sequence[TestRow] = (),
) -> ReportData:
    """Gather the report from ``coverage.dat`` points of the whole run.

    ``sources`` maps RTL file names (as ``coverage.dat`` writes them) to their text;
    ``rules`` are exclusion rules (:mod:`llm4cov.sim.model.exclusions`); ``modules`` (the
    plan's) keeps testbench modules out even when their points claim an RTL file or a
    DUT hierarchy (:func:`llm4cov.sim.model.coverage.dut_points`, as the evaluator counts);
    ``proven``: goals proven unreachable (marked UNR); ``tests``: the runs listed.
    """
    mine = dut_points(points, dut_hier, sources.keys(), modules)
    kept, excluded = split_points(mine, rules)
    unr = set(unreachable_misses(kept, proven, sources))
    words = SourceIndex(sources)
    files = {
        name: [SourceLine(i, text) for i, text in enumerate(sources[name].splitlines(), 1)]
        for name in sorted(sources)
    }
    sites: dict[tuple, list[Point]] = defaultdict(list)  # one point's site, all instances
    for p, is_excluded in [*((p, False) for p in kept), *((p, True) for p in excluded)]:
        if p.metric != TOGGLE.name:
            sites[(p.file, p.metric, p.line, p.col, p.comment, p.lines, is_excluded)].append(p)
    for (file, *_, is_excluded), group in sites.items():
        _mark(files[file], group, words, is_excluded, unr)
    toggles = _toggle_rows(kept, unr)
    signals: dict[tuple, list[ToggleRow]] = defaultdict(list)
    for row in [*toggles, *_toggle_rows(excluded, excluded=True)]:
        signals[(row.file, row.line, row.signal, row.excluded)].append(row)
    for (file, *_), rows in signals.items():
        _mark_toggle(files[file], rows)
    summary = summarize(list(kept), dut_hier, sources, modules) if kept else None
    dead = constant_dead(kept, sources) - unr
    missed = {t.point: t for t in typed_points([p for p in kept if p.count == 0], sources,
                                               constant=dead, unreachable=unr, words=words)}

    def words_of(select: Callable[[TypedPoint], bool]) -> list[UncoveredItem]:
        return uncovered_items(list(kept), dut_hier, sources, limit=10**9, modules=modules,
                               select=lambda p: select(missed[p]))[0]

    return ReportData(
        dut_hier=dut_hier,
        summary=summary,
        files=files,
        uncovered=words_of(lambda t: not t.unreachable and not t.constant),
        toggles=toggles,
        excluded=dict(sorted(Counter(p.metric for p in excluded).items())),
        constant_items=words_of(lambda t: t.constant),
        unreachable_items=words_of(lambda t: t.unreachable),
        unreachable=dict(sorted(Counter(p.metric for p in unr).items())),
        instances=_instance_rows(summary, kept, modules),
        modules=_module_rows(kept, modules),
        tests=list(tests),
    )


_NAMED = 3  # instances named in a mark's label before "and N more"


def _instances_note(missed: list[str], total: int) -> str:
    """`` missed in tb.dut.u1, tb.dut.u2 of 16 instances`` ('' for one instance)."""
    if total <= 1:
        return ""
    if not missed:
        return f" (all {total} instances)"
    more = f" and {len(missed) - _NAMED} more" if len(missed) > _NAMED else ""
    return f" (missed in {', '.join(missed[:_NAMED])}{more} of {total} instances)"


def _mark(lines: list[SourceLine], group: list[Point], words: SourceIndex, excluded: bool,
          unr: set[Point]) -> None:
    """One mark for a point site in every instance that has it (IMC merges a module's
    instances the same way in its source view; the hierarchy keeps them apart)."""
    p = group[0]
    phrase = words.phrase(p.metric, p.file, p.line, p.col, p.comment, p.lines)
    missed = sorted(q.hier for q in group if q.count == 0)
    mark = Mark(p.metric, not missed, phrase.hit_label() + _instances_note(missed, len(group)),
                sum(q.count for q in group), excluded, partial=0 < len(missed) < len(group),
                unreachable=all(q.count > 0 or q in unr for q in group))
    spots = line_span(p.lines, p.line) if p.metric == LINE.name else [phrase.line]
    for n in spots:
        if 0 < n <= len(lines):
            lines[n - 1].marks.append(mark)


def line_span(spec: str, default: int) -> list[int]:
    """Verilator's ``S`` key (``19-21``, ``5,7-9``) as line numbers."""
    out: list[int] = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        if first.isdigit():
            out.extend(range(int(first), int(last or first) + 1))
    return out or [default]


def _toggle_rows(points: Sequence[Point], unr: set[Point] | frozenset = frozenset(),
                 excluded: bool = False) -> list[ToggleRow]:
    groups: dict[tuple[str, str, int, str], dict[int, dict[str, Point]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for t in typed_points([p for p in points if p.metric == TOGGLE.name], {}):
        c = t.construct
        if c.kind is ConstructKind.TOGGLE and c.bits:
            groups[(t.hier, t.file, t.point.line, c.signal)][c.bits[0]][c.direction] = t.point
    rows = []
    for (hier, file, line, sig), bits in sorted(groups.items()):
        missing_by_dir: dict[str, list[int]] = defaultdict(list)
        for bit, dirs in bits.items():
            for direction in ("0->1", "1->0"):
                if direction not in dirs or dirs[direction].count == 0:
                    missing_by_dir[direction].append(bit)
        total = sum(len(d) for d in bits.values())
        covered = sum(1 for d in bits.values() for p in d.values() if p.count > 0)
        numbered = sorted(b for b in bits if b >= 0)
        width = f"[{numbered[-1]}:{numbered[0]}]" if len(numbered) > 1 else (
            f"[{numbered[0]}]" if numbered else "")
        missing = [f"{bit_ranges(sig, b)} {d}" for d, b in sorted(missing_by_dir.items())]
        proven = sum(1 for d in bits.values() for p in d.values() if p in unr)
        rows.append(ToggleRow(hier, file, line, sig, width, covered, total, missing, excluded,
                              proven))
    return rows


def _mark_toggle(lines: list[SourceLine], rows: list[ToggleRow]) -> None:
    """One mark for a signal's toggles in every instance that has it."""
    first = rows[0]
    if not 0 < first.line <= len(lines):
        return
    covered, total = sum(r.covered for r in rows), sum(r.total for r in rows)
    proven = sum(r.unreachable for r in rows)
    label = f"{first.signal}{first.bits} toggles {covered}/{total}"
    if len(rows) > 1:
        label += f" in {len(rows)} instances"
        missing = [f"{r.hier}: {'; '.join(r.missing)}" for r in rows if r.missing]
    else:
        missing = first.missing
    if missing:
        more = f"; {len(missing) - _NAMED} more" if len(missing) > _NAMED else ""
        label += " (missing " + "; ".join(missing[:_NAMED]) + more + ")"
    if proven:
        label += f", {proven} proven unreachable"
    lines[first.line - 1].marks.append(
        Mark(TOGGLE.name, covered == total, label, covered, first.excluded,
             partial=0 < covered < total, unreachable=covered + proven == total))


def _owner(module: str, modules: DesignModules | None) -> str:
    """The RTL module a Verilator page module (``sat_add__Pz1``: a parameter-specialized
    copy) belongs to."""
    if modules is not None and (owner := modules.owner(module)):
        return owner
    return module.split("__", 1)[0]


def _instance_rows(summary: CoverageReport | None, points: Sequence[Point],
                   modules: DesignModules | None) -> list[InstanceRow]:
    if summary is None:
        return []
    module_of = {p.hier: _owner(p.module, modules) for p in points}
    depth0 = summary.dut_hier.count(".")
    hiers = list(summary.per_instance)
    return [InstanceRow(
        hier=h, depth=h.count(".") - depth0, module=module_of.get(h, ""),
        own=summary.per_instance[h], subtree=summary.subtree(h),
        children=sum(1 for o in hiers if o.startswith(h + ".") and "." not in o[len(h) + 1:]))
        for h in hiers]


def _module_rows(points: Sequence[Point], modules: DesignModules | None) -> list[ModuleRow]:
    covered: dict[str, Counter] = defaultdict(Counter)
    total: dict[str, Counter] = defaultdict(Counter)
    where: dict[str, set[str]] = defaultdict(set)
    for p in points:
        name = _owner(p.module, modules)
        total[name][p.metric] += 1
        covered[name][p.metric] += p.count > 0
        where[name].add(p.hier)
    return [ModuleRow(name, len(where[name]), {
        m: MetricCoverage(covered=covered[name][m], total=n) for m, n in sorted(t.items())})
        for name, t in sorted(total.items())]


def metric_names(summary: CoverageReport | None) -> list[str]:
    """The report's metric columns, in the usual order."""
    names = set(summary.metrics) if summary else set()
    return [m for m in METRIC_ORDER if m in names] + sorted(names - set(METRIC_ORDER))
