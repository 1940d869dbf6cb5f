"""Exports other tools read: LCOV tracefiles (``genhtml``) and UCIS XML (pyucis).

LCOV (``geninfo`` tracefile format, ``man geninfo``) has line and branch records only:

- ``DA:<line>,<count>``: every line a Verilator line point covers (its ``S`` span, else
  its own line), with the largest count of the points on that line;
- ``BRDA:<line>,<block>,<branch>,<count>``: Verilator's branch points (``if``/``else``,
  ``case`` items come as line points, ``?:`` arms as ``cond_then``/``cond_else``); one
  block per construct (its line and column), the branch's own line as in the feedback
  (an ``else`` at its ``else`` keyword);
- expression terms and toggles have no LCOV record and are left out (the HTML report
  shows them).

Only the DUT subtree's points in the repo's RTL files count, with the exclusion rules
applied, as everywhere else. UCIS XML is pyucis's conversion of the whole
``coverage.dat`` (its Verilator reader skips point names that contain a quote), plus
the covergroup bins it does not read (:mod:`llm4cov.report.ucis_functional`).
Covergroups have no LCOV record either (LCOV knows lines, branches and functions only).
"""

from __future__ import annotations

import contextlib
import io
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from llm4cov.report.data import line_span
from llm4cov.report.ucis_functional import add_covergroups
from llm4cov.sim.coverage import DesignModules, Point, dut_points, parse_coverage_dat
from llm4cov.sim.exclusions import Rule, split_points
from llm4cov.sim.feedback_terms import SourceIndex

_ELSE_ARMS = ("else", "cond_else")


def lcov_text(
    points: Sequence[Point],
    dut_hier: str,
    sources: Mapping[str, str],
    source_paths: Mapping[str, Path],
    rules: Sequence[Rule] = (),
    test_name: str = "llm4cov",
    modules: DesignModules | None = None,
) -> str:
    """The LCOV tracefile text; ``source_paths`` maps each RTL file name to the path
    written in its ``SF:`` record (genhtml reads the source from there). The points
    are the DUT's as the evaluator counts them (:func:`llm4cov.sim.coverage.dut_points`
    with ``modules``)."""
    mine = dut_points(points, dut_hier, sources.keys(), modules)
    kept, _ = split_points(mine, rules)
    words = SourceIndex(sources)
    out: list[str] = []
    for name in sorted(sources):
        lines: dict[int, int] = {}
        branches: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for p in (p for p in kept if p.file == name):
            if p.metric == "line":
                for n in line_span(p.lines, p.line):
                    lines[n] = max(lines.get(n, 0), p.count)
            elif p.metric == "branch":
                own = words.phrase(p.metric, p.file, p.line, p.col, p.comment, p.lines).line
                col = p.col - 1 if p.comment in _ELSE_ARMS else p.col
                branches[(p.line, col)].append((own, p.count))
        if not lines and not branches:
            continue
        out += [f"TN:{test_name}", f"SF:{source_paths[name]}"]
        for block, (_, arms) in enumerate(sorted(branches.items())):
            out += [f"BRDA:{line},{block},{i},{count}" for i, (line, count) in enumerate(arms)]
        arms = [a for group in branches.values() for a in group]
        out += [f"BRF:{len(arms)}", f"BRH:{sum(c > 0 for _, c in arms)}"]
        out += [f"DA:{n},{c}" for n, c in sorted(lines.items())]
        out += [f"LF:{len(lines)}", f"LH:{sum(c > 0 for c in lines.values())}",
                "end_of_record"]
    return "\n".join(out) + "\n" if out else ""


def write_ucis_xml(coverage_dat: Path, out: Path) -> int:
    """Convert ``coverage.dat`` to UCIS XML at ``out`` with pyucis; returns how many
    points pyucis's reader skipped (it prints a warning per point to stdout, which is
    captured here so that ``--json`` output stays valid).

    Raises:
        Exception: whatever pyucis raises for a file it cannot read.
    """
    from ucis.rgy import FormatRgy

    rgy = FormatRgy.inst()
    chatter = io.StringIO()
    with contextlib.redirect_stdout(chatter):
        db = rgy.getDatabaseDesc("vltcov").fmt_if().read(str(coverage_dat))
        try:
            add_covergroups(db, parse_coverage_dat(coverage_dat))
            rgy.getDatabaseDesc("xml").fmt_if().write(db, str(out))
        finally:
            db.close()
    return chatter.getvalue().count("Failed to parse line")
