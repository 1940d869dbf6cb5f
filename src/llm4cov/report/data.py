"""What a coverage report shows, computed from the raw ``coverage.dat`` points.

The Observation carries only summaries (per-metric counts, a bounded list of misses);
the annotated reports need every point with its file, line and hit count, so they are
built from ``coverage.dat`` itself (:mod:`llm4cov.report.capture` keeps it). Only points
of the DUT subtree in the repo's RTL files count, exactly as the evaluator counts them
(:func:`llm4cov.sim.coverage.summarize`); points matched by exclusion rules are kept
apart and shown as excluded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from llm4cov.sim.coverage import (
    TOGGLE_POINT,
    DesignModules,
    Point,
    bit_ranges,
    dut_points,
    summarize,
    uncovered_items,
)
from llm4cov.sim.exclusions import Rule, split_points
from llm4cov.sim.feedback_terms import SourceIndex
from llm4cov.sim.observation import CoverageReport, UncoveredItem

METRIC_ORDER = ("line", "branch", "expr", "toggle", "fsm", "user")


@dataclass
class Mark:
    """One coverage point shown on a source line (toggles: one per signal)."""

    metric: str
    covered: bool
    label: str
    count: int = 0
    excluded: bool = False
    partial: bool = False  # some but not all of the points it stands for were hit


@dataclass
class SourceLine:
    """A source line with its status: ``covered``, ``uncovered``, ``partial``,
    ``excluded`` or ``""`` (no coverage point on it)."""

    number: int
    text: str
    marks: list[Mark] = field(default_factory=list)

    @property
    def status(self) -> str:
        live = [m for m in self.marks if not m.excluded]
        if not live:
            return "excluded" if self.marks else ""
        hit = sum(m.covered for m in live)
        if hit == len(live):
            return "covered"
        return "uncovered" if hit == 0 and not any(m.partial for m in live) else "partial"


@dataclass
class ToggleRow:
    """Toggle coverage of one signal in one instance (bits x 2 directions)."""

    hier: str
    file: str
    line: int
    signal: str
    bits: str  # e.g. "[7:0]" or "" for a 1-bit signal
    covered: int
    total: int
    missing: list[str]
    excluded: bool = False


@dataclass
class ReportData:
    """Everything the HTML report renders (percentages are percent, 0-100)."""

    dut_hier: str
    summary: CoverageReport | None
    files: dict[str, list[SourceLine]]
    uncovered: list[UncoveredItem]
    toggles: list[ToggleRow]
    excluded: dict[str, int]
    constant_items: list[UncoveredItem]


def build_report_data(
    points: Sequence[Point],
    dut_hier: str,
    sources: Mapping[str, str],
    rules: Sequence[Rule] = (),
    modules: DesignModules | None = None,
) -> ReportData:
    """Gather the report from ``coverage.dat`` points of the whole run.

    ``sources`` maps RTL file names (as ``coverage.dat`` writes them) to their text;
    ``rules`` are exclusion rules (:mod:`llm4cov.sim.exclusions`); ``modules`` (the
    plan's) keeps testbench modules out even when their points claim an RTL file or a
    DUT hierarchy (:func:`llm4cov.sim.coverage.dut_points`, as the evaluator counts).
    """
    mine = dut_points(points, dut_hier, sources.keys(), modules)
    kept, excluded = split_points(mine, rules)
    words = SourceIndex(sources)
    files = {
        name: [SourceLine(i, text) for i, text in enumerate(sources[name].splitlines(), 1)]
        for name in sorted(sources)
    }
    hiers: dict[str, set[str]] = defaultdict(set)
    for p in mine:
        hiers[p.file].add(p.hier)
    for p, is_excluded in [*((p, False) for p in kept), *((p, True) for p in excluded)]:
        if p.metric != "toggle":
            _mark(files[p.file], p, words, is_excluded, len(hiers[p.file]) > 1)
    toggles = _toggle_rows(kept)
    for row in [*toggles, *_toggle_rows(excluded, excluded=True)]:
        _mark_toggle(files[row.file], row, len(hiers[row.file]) > 1)
    summary = summarize(list(kept), dut_hier, sources.keys(), modules) if kept else None
    items, _ = uncovered_items(list(kept), dut_hier, sources, limit=10**9, modules=modules)
    excluded_counts: dict[str, int] = defaultdict(int)
    for p in excluded:
        excluded_counts[p.metric] += 1
    return ReportData(
        dut_hier=dut_hier,
        summary=summary,
        files=files,
        uncovered=items,
        toggles=toggles,
        excluded=dict(sorted(excluded_counts.items())),
        constant_items=[i for i in items if "constant after elaboration" in i.detail],
    )


def _mark(lines: list[SourceLine], p: Point, words: SourceIndex, excluded: bool,
          many_instances: bool) -> None:
    phrase = words.phrase(p.metric, p.file, p.line, p.col, p.comment, p.lines)
    label = phrase.hit_label() + (f" in {p.hier}" if many_instances else "")
    covered = p.count > 0
    if p.metric == "line":
        for n in line_span(p.lines, p.line):
            if 0 < n <= len(lines):
                lines[n - 1].marks.append(Mark("line", covered, label, p.count, excluded))
        return
    if 0 < phrase.line <= len(lines):
        lines[phrase.line - 1].marks.append(Mark(p.metric, covered, label, p.count, excluded))


def line_span(spec: str, default: int) -> list[int]:
    """Verilator's ``S`` key (``19-21``, ``5,7-9``) as line numbers."""
    out: list[int] = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        if first.isdigit():
            out.extend(range(int(first), int(last or first) + 1))
    return out or [default]


def _toggle_rows(points: Sequence[Point], excluded: bool = False) -> list[ToggleRow]:
    groups: dict[tuple[str, str, int, str], dict[int, dict[str, int]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for p in points:
        m = TOGGLE_POINT.match(p.comment) if p.metric == "toggle" else None
        if m is None:
            continue
        bit = int(m["bit"]) if m["bit"] is not None else -1
        groups[(p.hier, p.file, p.line, m["sig"])][bit][m["dir"]] = p.count
    rows = []
    for (hier, file, line, sig), bits in sorted(groups.items()):
        missing_by_dir: dict[str, list[int]] = defaultdict(list)
        for bit, dirs in bits.items():
            for direction in ("0->1", "1->0"):
                if dirs.get(direction, 0) == 0:
                    missing_by_dir[direction].append(bit)
        total = sum(len(d) for d in bits.values())
        covered = sum(1 for d in bits.values() for c in d.values() if c > 0)
        numbered = sorted(b for b in bits if b >= 0)
        width = f"[{numbered[-1]}:{numbered[0]}]" if len(numbered) > 1 else (
            f"[{numbered[0]}]" if numbered else "")
        missing = [f"{bit_ranges(sig, b)} {d}" for d, b in sorted(missing_by_dir.items())]
        rows.append(ToggleRow(hier, file, line, sig, width, covered, total, missing, excluded))
    return rows


def _mark_toggle(lines: list[SourceLine], row: ToggleRow, many_instances: bool) -> None:
    if 0 < row.line <= len(lines):
        label = f"{row.signal}{row.bits} toggles {row.covered}/{row.total}"
        label += f" in {row.hier}" if many_instances else ""
        if row.missing:
            label += " (missing " + "; ".join(row.missing) + ")"
        lines[row.line - 1].marks.append(
            Mark("toggle", row.covered == row.total, label, row.covered, row.excluded,
                 partial=0 < row.covered < row.total)
        )


def metric_names(summary: CoverageReport | None) -> list[str]:
    """The report's metric columns, in the usual order."""
    names = set(summary.metrics) if summary else set()
    return [m for m in METRIC_ORDER if m in names] + sorted(names - set(METRIC_ORDER))
