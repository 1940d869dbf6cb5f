"""Covergroup bins in UCIS XML, which pyucis's Verilator reader leaves out.

pyucis reads functional coverage only from the ``v_funccov`` pages of older Verilator
builds; Verilator >= 5.050 writes ``v_covergroup`` (:mod:`llm4cov.sim.model.functional`), so
this adds them to pyucis's database before it is written: one instance scope per
covergroup, named after it (pyucis's own convention for Verilator's type coverage),
holding the covergroup, one coverpoint per coverpoint or cross (coverage.dat does not
say which coverpoints a cross crosses), and its bins with their type (``ignore`` and
``illegal`` kept as such; ``default`` bins, which UCIS XML has no type for and which
never count, are left out).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ucis import UCIS_INST_ONCE, UCIS_INSTANCE, UCIS_OTHER, UCIS_VLOG
from ucis.cover_type_t import CoverTypeT
from ucis.scope_type_t import ScopeTypeT
from ucis.source_info import SourceInfo

from llm4cov.sim.model.coverage import Point
from llm4cov.sim.model.functional import FUNCTIONAL_METRIC, covergroup_name

_KINDS = {"": CoverTypeT.CVGBIN, "ignore": CoverTypeT.IGNOREBIN,
          "illegal": CoverTypeT.ILLEGALBIN}


def add_covergroups(db, points: Iterable[Point]) -> int:
    """Add the covergroup bins among ``points`` to the pyucis database ``db``; returns
    how many bins were added."""
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        if p.metric == FUNCTIONAL_METRIC and p.comment in _KINDS:
            groups[p.module].append(p)
    if not groups:
        return 0
    parent = next(iter(db.scopes(ScopeTypeT.DU_MODULE)), None)
    files: dict[str, object] = {}

    def where(p: Point) -> SourceInfo:
        if p.file not in files:
            files[p.file] = db.createFileHandle(p.file, ".")
        return SourceInfo(files[p.file], p.line, p.col)

    added = 0
    for page, mine in sorted(groups.items()):
        name = covergroup_name(page)
        inst = db.createInstance(name, SourceInfo(None, 0, 0), 1, UCIS_OTHER, UCIS_INSTANCE,
                                 parent, UCIS_INST_ONCE)
        group = inst.createCovergroup(name, where(mine[0]), 1, UCIS_VLOG)
        coverpoints = {}
        for p in sorted(mine, key=lambda p: (p.line, p.col, p.hier)):
            point, _, bin_name = p.hier.removeprefix(page + ".").rpartition(".")
            if point not in coverpoints:
                coverpoints[point] = group.createCoverpoint(point, where(p), 1, UCIS_VLOG)
            coverpoints[point].createBin(bin_name, where(p), 1, p.count, bin_name,
                                         kind=_KINDS[p.comment])
            added += 1
    return added
