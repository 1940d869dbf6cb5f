"""Coverage points -> per-metric coverage of the DUT subtree + feedback items.

The neutral coverage model: a backend reads its simulator's coverage file into
:class:`Point` values (the Verilator backend: ``coverage.dat``,
:mod:`llm4cov.sim.backends.verilator.coverage_dat`). Metrics: ``line`` (basic blocks),
``branch``, ``expr``, ``toggle`` (one point per bit per direction), ``fsm`` (FSM
coverage, opt-in), ``user`` (cover properties, reported but not part of ``overall``)
and ``covergroup`` (functional coverage, :mod:`llm4cov.sim.functional`). A point is
covered when its count is > 0.

Which points count (as Cadence IMC reports an instance): a point counts when its
hierarchy is the DUT instance path or lies below it, and it comes from one of the
repo's RTL files and one of its RTL modules (``Point.module``, see
:class:`DesignModules`: a testbench module bound into the DUT never counts, whatever
`` `line`` says); never a testbench file, and never a wildcard that could only match
the DUT path by pattern (``tb.*``, the merge of two copies of the DUT module).
The pinned Verilator merges the instances of a module into one wildcarded hierarchy
(``tb.dut.stage_*``); the evaluator avoids that by elaborating one copy per instance
(``instances.py``), so hierarchies are exact. Where it could not (an instance array,
a design over the size bound), a merged hierarchy strictly below the DUT still counts,
once, and :func:`merged_hierarchies` names it for a note.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from llm4cov.sim.feedback_terms import CONSTANT_NOTE, SourceIndex
from llm4cov.sim.functional import FUNCTIONAL_METRIC
from llm4cov.sim.observation import (
    CoverageReport,
    MetricCoverage,
    UncoveredItem,
    overall_percent,
)


@dataclass(frozen=True)
class Point:
    """One coverage point: its ``metric`` (module docstring), source ``file`` and
    ``line``, the simulator's ``comment`` on it (what it counts), the instance
    hierarchy ``hier``, its hit ``count``; ``lines``: the source lines a block covers
    (e.g. ``"12-14,16"``, empty when unknown); ``col``: the column of the construct
    (0 = unknown); ``module``: the module the simulator elaborated it in (decides
    which points are the RTL's, :class:`DesignModules`)."""

    metric: str
    file: str
    line: int
    comment: str
    hier: str
    count: int
    lines: str = ""
    col: int = 0
    module: str = ""


@dataclass(frozen=True)
class DesignModules:
    """Which module names are the repo's RTL and which the testbench declares.

    A point's file and hierarchy can be forged (a testbench module after
    `` `line 1 "dut.sv" ``, bound into the DUT with ``bind``); its module
    (``Point.module``) is what the simulator elaborated, so it decides. A
    parameter-specialized copy is named ``<module>__<suffix>`` (Verilator:
    ``counter__Lz2``, ``top__W8``): the longest declared name that equals the point's
    module or prefixes it with ``__`` owns it, and the point counts only when that
    owner is an RTL module.
    """

    rtl: frozenset[str]
    testbench: frozenset[str] = frozenset()

    def owner(self, module: str) -> str | None:
        """The declared module (RTL or testbench) that the elaborated module
        ``module`` is, or is a parameter-specialized copy of; None when none is."""
        owners = [m for m in (*self.rtl, *self.testbench)
                  if module == m or module.startswith(m + "__")]
        return max(owners, key=len) if owners else None

    def is_rtl(self, module: str) -> bool:
        """True when the elaborated module ``module`` is (a copy of) an RTL module."""
        return self.owner(module) in self.rtl


def in_subtree(hier: str, root: str) -> bool:
    """True when a point hierarchy is ``root`` or lies below it (a wildcard counts only
    when it lies below ``root`` as written: ``tb.*`` never matches ``tb.dut``)."""
    return hier == root or hier.startswith(root + ".")


def dut_points(
    points: Iterable[Point],
    dut_hier: str,
    rtl_files: Collection[str] | None = None,
    modules: DesignModules | None = None,
) -> list[Point]:
    """The code-coverage points that count for the DUT: at or below ``dut_hier`` and,
    when ``rtl_files`` is given, from one of those files (never the testbench's) and,
    when ``modules`` is given, of an RTL module (:meth:`DesignModules.is_rtl`).
    Covergroup bins never count here (:mod:`llm4cov.sim.functional`)."""
    return [p for p in points if p.metric != FUNCTIONAL_METRIC and in_subtree(p.hier, dut_hier)
            and (rtl_files is None or p.file in rtl_files)
            and (modules is None or modules.is_rtl(p.module))]


def merged_hierarchies(points: Iterable[Point]) -> list[str]:
    """Wildcarded hierarchies (instances Verilator merged into one counter set)."""
    return sorted({p.hier for p in points if "*" in p.hier})


def _tally(points: Iterable[Point]) -> dict[str, MetricCoverage]:
    covered: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for p in points:
        total[p.metric] += 1
        covered[p.metric] += p.count > 0
    return {m: MetricCoverage(covered=covered[m], total=total[m]) for m in sorted(total)}


def summarize(
    points: list[Point],
    dut_hier: str,
    rtl_files: Collection[str] | Mapping[str, str] | None = None,
    modules: DesignModules | None = None,
) -> CoverageReport | None:
    """Coverage of ``dut_hier`` and below (:func:`dut_points`); None when the DUT has no
    points at all. ``per_instance`` holds each instance's own points. When
    ``rtl_files`` maps the file names to their text, ``constant`` counts the misses
    that the parameters make unreachable (:func:`constant_dead`)."""
    mine = dut_points(points, dut_hier, rtl_files, modules)
    if not mine:
        return None
    by_inst: dict[str, list[Point]] = defaultdict(list)
    for p in mine:
        by_inst[p.hier].append(p)
    metrics = _tally(mine)
    return CoverageReport(
        dut_hier=dut_hier,
        metrics=metrics,
        per_instance={h: _tally(ps) for h, ps in sorted(by_inst.items())},
        overall=round(overall_percent(metrics), 4),
        merged=merged_hierarchies(mine),
        constant=constant_misses(mine, rtl_files) if isinstance(rtl_files, Mapping) else {},
    )


def constant_misses(points: Iterable[Point], sources: Mapping[str, str]) -> dict[str, int]:
    """:func:`constant_dead` counted per metric."""
    counts: dict[str, int] = defaultdict(int)
    for p in constant_dead(points, sources):
        counts[p.metric] += 1
    return dict(sorted(counts.items()))


def constant_dead(points: Iterable[Point], sources: Mapping[str, str]) -> set[Point]:
    """Misses that cannot be hit under the elaborated parameters: the condition reads
    only parameters (the wording ends with
    :data:`~llm4cov.sim.feedback_terms.CONSTANT_NOTE`; a syntactic check) and the run
    saw its other outcome in the same instance (the other arm of the ``if``/``?:``, at
    the same or the next column; another row of the same expression). A constant
    condition whose code never ran is left out: which arm is dead is then unknown.
    ``points`` are already the DUT's."""
    points = list(points)
    hit: dict[tuple, list[Point]] = defaultdict(list)
    for p in points:
        if p.count > 0 and p.metric in ("line", "branch", "expr"):
            hit[(p.hier, p.file, p.metric, p.line)].append(p)
    words = SourceIndex(sources)
    dead = set()
    for p in points:
        if p.count or p.metric not in ("line", "branch", "expr") or p.file not in sources:
            continue
        near = 0 if p.metric == "expr" else 1
        seen = [q for q in hit.get((p.hier, p.file, p.metric, p.line), ())
                if abs(q.col - p.col) <= near and q.comment != p.comment]
        if seen and words.phrase(p.metric, p.file, p.line, p.col, p.comment,
                                 p.lines).detail.endswith(CONSTANT_NOTE):
            dead.add(p)
    return dead


#: A toggle point's comment: ``sig[bit]:0->1`` (``sig:1->0`` for 1-bit signals).
TOGGLE_POINT = re.compile(r"^(?P<sig>.*?)(\[(?P<bit>\d+)\])?:(?P<dir>0->1|1->0)$")
_KIND_ORDER = {"line": 0, "branch": 1, "fsm": 2, "expr": 3, "user": 4, "toggle": 5}


def uncovered_items(
    points: list[Point],
    dut_hier: str,
    sources: Mapping[str, str],
    limit: int = 40,
    modules: DesignModules | None = None,
    select: Callable[[Point], bool] | None = None,
) -> tuple[list[UncoveredItem], int]:
    """Missed points of the DUT subtree, most useful first, at most ``limit`` items.

    Structural misses (blocks never executed, branches never taken) come first, then
    FSM, expression terms and toggles. Toggle misses of one signal are merged into one
    item with a bit range (``q[7:4] never toggled 0->1``). Returns the items and how
    many more were left out. ``sources`` maps each RTL file name to its text: only
    points of those files count. The same miss in several instances of one module is
    one item: ``instances`` lists where it was missed, ``copies`` how many instances
    have that source line (see :class:`UncoveredItem`). ``modules``: see
    :func:`dut_points`. ``select``: only the missed points it accepts become items
    (the reports word the proven-unreachable misses apart).
    """
    mine = dut_points(points, dut_hier, sources.keys(), modules)
    hiers_at: dict[tuple[str, int], set[str]] = defaultdict(set)
    for p in mine:
        hiers_at[(p.file, p.line)].add(p.hier)
    missed = [p for p in mine if p.count == 0 and (select is None or select(p))]
    lines = {name: text.splitlines() for name, text in sources.items()}
    words = SourceIndex(sources)
    items: list[UncoveredItem] = []
    toggles: dict[tuple[str, int, str, str], dict[int, set[str]]] = defaultdict(
        lambda: defaultdict(set)
    )
    for p in missed:
        if p.metric == "toggle" and (m := TOGGLE_POINT.match(p.comment)):
            bit = int(m["bit"]) if m["bit"] is not None else -1
            toggles[(p.file, p.line, m["sig"], p.hier)][bit].add(m["dir"])
            continue
        phrase = words.phrase(p.metric, p.file, p.line, p.col, p.comment, p.lines)
        hiers_at[(p.file, phrase.line)] |= hiers_at[(p.file, p.line)]  # an else's own line
        items.append(_item(replace(p, line=phrase.line), phrase.detail, lines))
    for (file, line, sig, hier), bit_dirs in toggles.items():
        point = Point("toggle", file, line, "", hier, 0)
        by_dirs: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for bit, seen in bit_dirs.items():
            by_dirs[tuple(sorted(seen))].append(bit)
        for dirs, bits in sorted(by_dirs.items()):
            how = "never toggled" if len(dirs) == 2 else f"never toggled {dirs[0]}"
            items.append(_item(point, f"{bit_ranges(sig, bits)} {how}", lines))
    grouped: dict[tuple[str, str, int, str], list[UncoveredItem]] = defaultdict(list)
    for item in items:
        grouped[(item.kind, item.file, item.line, item.detail)].append(item)
    merged = []
    for (_, file, line, _), group in grouped.items():
        where = tuple(sorted(i.instance for i in group))
        merged.append(group[0].model_copy(update={
            "instance": where[0], "instances": where,
            "copies": len(hiers_at.get((file, line), ())) or 1,
        }))
    merged.sort(key=lambda i: (_KIND_ORDER.get(i.kind, 9), i.file, i.line, i.detail))
    return merged[:limit], max(0, len(merged) - limit)


def _item(p: Point, detail: str, lines: Mapping[str, list[str]]) -> UncoveredItem:
    text = lines.get(p.file, [])
    source = text[p.line - 1].strip() if 0 < p.line <= len(text) else ""
    return UncoveredItem(
        kind=p.metric, file=p.file, line=p.line, detail=detail, source=source[:160],
        instance=p.hier,
    )


def bit_ranges(sig: str, bits: list[int]) -> str:
    """``sig`` with its toggle bits as descending ranges (``q[7:4,1]``); ``[-1]``: a
    1-bit signal, shown bare."""
    if bits == [-1]:
        return sig
    bits = sorted(set(b for b in bits if b >= 0), reverse=True)
    runs: list[str] = []
    start = prev = bits[0]
    for b in [*bits[1:], None]:
        if b is not None and b == prev - 1:
            prev = b
            continue
        runs.append(f"{start}" if start == prev else f"{start}:{prev}")
        if b is not None:
            start = prev = b
    return f"{sig}[{','.join(runs)}]"
