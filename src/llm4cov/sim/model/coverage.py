"""Coverage points -> per-metric coverage of the DUT subtree + feedback items.

The neutral coverage model: a backend reads its simulator's coverage file into
:class:`Point` values (the Verilator backend: ``coverage.dat``,
:mod:`llm4cov.sim.backends.verilator.coverage_dat`). Metrics: ``line`` (basic blocks),
``branch``, ``expr``, ``toggle`` (one point per bit per direction), ``fsm`` (FSM
coverage, opt-in), ``user`` (cover properties, reported but not part of ``overall``)
and ``covergroup`` (functional coverage, :mod:`llm4cov.sim.model.functional`). A point is
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

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from llm4cov.sim.model.construct import TOGGLE_POINT, Construct, ConstructKind, bit_ranges
from llm4cov.sim.model.feedback_terms import SourceIndex, render
from llm4cov.sim.model.metrics import CONDITIONAL, TOGGLE, feedback_rank, is_code
from llm4cov.sim.model.observation import (
    CoverageReport,
    ItemKey,
    MetricCoverage,
    UncoveredItem,
    overall_percent,
)

__all__ = ["TOGGLE_POINT", "DesignModules", "Point", "TypedPoint", "bit_ranges",
           "constant_dead", "constant_misses", "dut_points", "in_subtree",
           "merged_hierarchies", "summarize", "typed_points", "uncovered_items"]


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
class TypedPoint:
    """A :class:`Point` with what it counts (:func:`typed_points`): its typed
    ``construct`` and its own ``line`` (an ``else`` at its keyword; the anchor
    ``point.line`` is where the simulator put it), and its flags: ``constant``, a miss
    the parameters make unreachable (:func:`constant_dead`); ``excluded``, matched by
    an exclusion rule; ``unreachable``, proven unreachable by formal."""

    point: Point
    construct: Construct
    line: int
    constant: bool = False
    excluded: bool = False
    unreachable: bool = False

    @property
    def metric(self) -> str:
        return self.point.metric

    @property
    def file(self) -> str:
        return self.point.file

    @property
    def hier(self) -> str:
        return self.point.hier

    def detail(self) -> str:
        """The point's wording (:func:`llm4cov.sim.model.wording.render`)."""
        return render(self.point.metric, self.point.file, self.construct)


def typed_points(points: Iterable[Point], sources: Mapping[str, str], *,
                 constant: Collection[Point] = (), excluded: Collection[Point] = (),
                 unreachable: Collection[Point] = (),
                 words: SourceIndex | None = None) -> list[TypedPoint]:
    """``points`` with their constructs (read from ``sources``, the RTL texts by file
    name) and flags: a point in ``constant``, ``excluded`` or ``unreachable`` has that
    flag set."""
    words = words or SourceIndex(sources)
    out = []
    for p in points:
        construct, own = words.construct(p.metric, p.file, p.line, p.col, p.comment, p.lines)
        out.append(TypedPoint(p, construct, own, constant=p in constant,
                              excluded=p in excluded, unreachable=p in unreachable))
    return out


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
    #: The RTL modules at or below the DUT module (its instantiations in the RTL alone).
    dut_tree: frozenset[str] = frozenset()

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
    Covergroup bins never count here (:mod:`llm4cov.sim.model.functional`)."""
    return [p for p in points if is_code(p.metric) and in_subtree(p.hier, dut_hier)
            and (rtl_files is None or p.file in rtl_files)
            and (modules is None or modules.is_rtl(p.module))]


def merged_outside(points: Iterable[Point], dut_hier: str, modules: DesignModules
                   ) -> list[str]:
    """The merged counter sets (Verilator's wildcarded hierarchies) of a module that has
    an instance in the DUT (:attr:`DesignModules.dut_tree`) and is named above the DUT
    (``tb.*``): the DUT's instance shares one counter set with instances outside it (the
    testbench's own copies), so the DUT's points are neither counted apart nor its own.
    Verilator names a merged set by the common prefix of its instances' paths, so a set
    of DUT instances alone is named at or below ``dut_hier``. Empty: none."""
    below = dut_hier + "."
    found = set()
    for p in points:
        if "*" not in p.hier or in_subtree(p.hier, dut_hier):
            continue
        owner = modules.owner(p.module)
        if below.startswith(p.hier.split("*", 1)[0]) and owner in modules.dut_tree:
            found.add(f"{p.hier} ({owner})")
    return sorted(found)


def dut_absent(points: Iterable[Point], dut_hier: str, modules: DesignModules,
               dut_module: str) -> bool:
    """Whether the run measured points in the DUT's subtree (``dut_hier`` and below)
    but none of the DUT module's own: what Verilator names ``dut_hier`` is then not the
    DUT (a testbench generate block of that name holding RTL instances of its choice,
    the DUT itself left out: 76.97 -> 100 %)."""
    inside = [p for p in points if in_subtree(p.hier, dut_hier)]
    return bool(inside) and all(modules.owner(p.module) != dut_module for p in inside)


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
    only parameters (the construct is ``param_only``; a syntactic check) and the run
    saw its other outcome in the same instance (the other arm of the ``if``/``?:``, at
    the same or the next column; another row of the same expression). A constant
    condition whose code never ran is left out: which arm is dead is then unknown.
    ``points`` are already the DUT's."""
    points = list(points)
    hit: dict[tuple, list[Point]] = defaultdict(list)
    for p in points:
        if p.count > 0 and p.metric in CONDITIONAL:
            hit[(p.hier, p.file, p.metric, p.line)].append(p)
    words = SourceIndex(sources)
    dead = set()
    for p in points:
        if p.count or p.metric not in CONDITIONAL or p.file not in sources:
            continue
        construct, _ = words.construct(p.metric, p.file, p.line, p.col, p.comment, p.lines)
        near = 0 if construct.kind is ConstructKind.EXPR_TERM else 1
        seen = [q for q in hit.get((p.hier, p.file, p.metric, p.line), ())
                if abs(q.col - p.col) <= near and q.comment != p.comment]
        if seen and construct.param_only:
            dead.add(p)
    return dead


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
    points of those files count. The same miss (one :attr:`UncoveredItem.key`, never
    its wording) in several instances of one module is one item: ``instances`` lists
    where it was missed, ``copies`` how many instances have that source line. ``modules``: see
    :func:`dut_points`. ``select``: only the missed points it accepts become items
    (the reports word the proven-unreachable misses apart).
    """
    mine = dut_points(points, dut_hier, sources.keys(), modules)
    hiers_at: dict[tuple[str, int], set[str]] = defaultdict(set)
    for p in mine:
        hiers_at[(p.file, p.line)].add(p.hier)
    missed = [p for p in mine if p.count == 0 and (select is None or select(p))]
    lines = {name: text.splitlines() for name, text in sources.items()}
    items: list[UncoveredItem] = []
    toggles: dict[tuple[str, int, str, str], dict[int, set[str]]] = defaultdict(
        lambda: defaultdict(set)
    )
    for t in typed_points(missed, sources):
        c, p = t.construct, t.point
        if c.kind is ConstructKind.TOGGLE and c.bits:  # merged per signal below
            toggles[(p.file, p.line, c.signal, p.hier)][c.bits[0]].add(c.direction)
            continue
        hiers_at[(p.file, t.line)] |= hiers_at[(p.file, p.line)]  # an else's own line
        items.append(_item(p.metric, p.file, t.line, p.hier, c, lines))
    for (file, line, sig, hier), bit_dirs in toggles.items():
        by_dirs: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for bit, seen in bit_dirs.items():
            by_dirs[tuple(sorted(seen))].append(bit)
        for dirs, bits in sorted(by_dirs.items()):
            signal = Construct(kind=ConstructKind.TOGGLE, signal=sig,
                               bits=tuple(sorted(bits, reverse=True)),
                               direction=dirs[0] if len(dirs) == 1 else "")
            items.append(_item(TOGGLE.name, file, line, hier, signal, lines))
    grouped: dict[ItemKey, list[UncoveredItem]] = defaultdict(list)
    for item in items:  # one miss shown once: its instances merged by its identity
        grouped[item.key].append(item)
    merged = []
    for group in grouped.values():
        where = tuple(sorted(i.instance for i in group))
        merged.append(group[0].model_copy(update={
            "instance": where[0], "instances": where,
            "copies": len(hiers_at.get((group[0].file, group[0].line), ())) or 1,
        }))
    merged.sort(key=lambda i: (feedback_rank(i.kind), i.file, i.line, i.detail))
    return merged[:limit], max(0, len(merged) - limit)


def _item(metric: str, file: str, line: int, hier: str, construct: Construct,
          lines: Mapping[str, list[str]]) -> UncoveredItem:
    """The item of a miss at ``file``:``line`` (its own line) in instance ``hier``: its
    construct, and its wording and source line for the reader."""
    text = lines.get(file, [])
    source = text[line - 1].strip() if 0 < line <= len(text) else ""
    return UncoveredItem(
        kind=metric, file=file, line=line, detail=render(metric, file, construct),
        typed=construct, source=source[:160], instance=hier,
    )
