"""Functional coverage: the bins of testbench covergroups, a metric of its own.

A backend with ``Capabilities.functional_coverage`` reports every covergroup bin as a
point of metric :data:`FUNCTIONAL_METRIC` (Verilator >= 5.050: ``t=covergroup``, page
``v_covergroup/<covergroup>``, hierarchy ``<covergroup>.<coverpoint or cross>.<bin>``;
a covergroup declared in a class is named ``__vlAnonCG_<name>``). They are counted here,
per covergroup and per coverpoint or cross, as bins hit over bins that count, and never
enter code coverage (:func:`llm4cov.sim.model.coverage.dut_points` leaves them out), so the
headline ``overall`` that CVDP-ECov scores is the same with or without covergroups.

Which bins count (IEEE 1800-2017 19.5 and 19.6): ``ignore_bins`` and ``illegal_bins``
are not coverage bins, and a ``default`` bin is not part of the coverage calculation;
such a point's ``comment`` carries its type (``ignore``, ``illegal``, ``default``).
Verilator writes type coverage (one count per bin over every instance of the
covergroup), so ``option.per_instance`` does not split a covergroup here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from llm4cov.sim.model.metrics import COVERGROUP

if TYPE_CHECKING:
    from llm4cov.sim.model.coverage import Point

FUNCTIONAL_METRIC = COVERGROUP.name
"""The metric name of a covergroup bin point (:data:`llm4cov.sim.model.metrics.COVERGROUP`)."""
UNCOUNTED_BINS = frozenset({"ignore", "illegal", "default"})
"""Bin types left out of the counts (IEEE 1800-2017 19.5, 19.6)."""
_CLASS_PREFIX = "__vlAnonCG_"
#: At most this many missed bins are named per coverpoint.
MISSED_NAMED = 8
_UNSAFE = re.compile(r"[^A-Za-z0-9_$\[\]:.,-]")


class BinCount(BaseModel):
    """Bins hit (count > 0) and bins that count; ``missed``: the first
    :data:`MISSED_NAMED` bins never hit, in file order."""

    model_config = ConfigDict(frozen=True)

    covered: int
    total: int
    missed: list[str] = Field(default_factory=list)

    @property
    def pct(self) -> float:
        """Percent of bins hit (0-100); 0 without bins."""
        return 100.0 * self.covered / self.total if self.total else 0.0


class Covergroup(BaseModel):
    """One covergroup: its file and the line of its first bin (coverage.dat has no
    declaration line), its bins, each coverpoint's and cross's."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    bins: BinCount
    coverpoints: dict[str, BinCount]


class FunctionalCoverage(BaseModel):
    """Every covergroup's bins: ``bins`` over all of them (hit / counted), and per
    covergroup (name as declared). Percent is 0-100; never part of ``overall``."""

    model_config = ConfigDict(frozen=True)

    bins: BinCount
    covergroups: dict[str, Covergroup]


def shown(name: str) -> str:
    """A covergroup, coverpoint or bin name as reports show it: characters outside
    identifiers and bin indices written as ``\\xNN`` (an escaped identifier of the
    testbench may hold backticks, pipes or control characters)."""
    return _UNSAFE.sub(lambda m: "".join(f"\\x{b:02x}" for b in m[0].encode()), name)


def covergroup_name(page: str) -> str:
    """The declared name of a covergroup from its page (``__vlAnonCG_`` removed)."""
    return page.removeprefix(_CLASS_PREFIX)


def _count(points: list[Point]) -> BinCount:
    counted = [p for p in points if p.comment not in UNCOUNTED_BINS]
    missed = [p.hier.rpartition(".")[2] for p in counted if p.count == 0]
    return BinCount(covered=sum(p.count > 0 for p in counted), total=len(counted),
                    missed=missed[:MISSED_NAMED])


def functional_coverage(points: Iterable[Point]) -> FunctionalCoverage | None:
    """The covergroup bins among ``points`` (any hierarchy and file), or None when
    there are none."""
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        if p.metric == FUNCTIONAL_METRIC:
            groups[p.module].append(p)
    if not groups:
        return None
    report = {}
    for page, mine in sorted(groups.items()):
        mine.sort(key=lambda p: (p.line, p.col, p.hier))
        by_point: dict[str, list[Point]] = defaultdict(list)
        for p in mine:
            inside = p.hier.removeprefix(page + ".")
            by_point[inside.rpartition(".")[0] or inside].append(p)
        name = covergroup_name(page)
        report[name if name not in groups else page] = Covergroup(  # class vs module
            file=mine[0].file, line=mine[0].line, bins=_count(mine),
            coverpoints={name: _count(ps) for name, ps in by_point.items()})
    every = [p for ps in groups.values() for p in ps]
    return FunctionalCoverage(bins=_count(every), covergroups=report)


def functional_lines(report: FunctionalCoverage | None, limit: int = 12) -> list[str]:
    """Feedback lines: the total, then each coverpoint or cross with its missed bins
    (at most ``limit`` lines of them); empty without covergroups."""
    if report is None:
        return []
    b = report.bins
    out = [f"Functional coverage of the testbench's covergroups (not part of the code "
           f"coverage score): {b.covered}/{b.total} bins ({b.pct:.1f}%)"]
    rows = [(f"{group}.{name}", c) for group, cg in report.covergroups.items()
            for name, c in cg.coverpoints.items()]
    for name, c in rows[:limit]:
        missed = f"; never hit: {', '.join(map(shown, c.missed))}" if c.missed else ""
        more = "" if len(c.missed) >= c.total - c.covered else " ..."
        out.append(f"- `{shown(name)}`: {c.covered}/{c.total} bins{missed}{more}")
    if len(rows) > limit:
        out.append(f"- ... {len(rows) - limit} more coverpoints")
    return out

