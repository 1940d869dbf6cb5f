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
applied, as everywhere else. LCOV has no quoting, so no record can be forged: the test
name keeps only ``[A-Za-z0-9_.-]`` (every other character becomes ``_``) and a source
path with a control character is refused (task ids and file names are checked when
they are loaded, ``tasks/model.py``; this is the writer's own check). LCOV has no field
for a proven-unreachable point, so UNR points keep their plain record there. UCIS XML
is pyucis's conversion of the whole ``coverage.dat`` (its Verilator reader skips point
names that contain a quote; characters XML cannot hold are shown escaped first);
:func:`mark_unreachable_ucis` then sets UCIS's ``excluded``/``excludedReason``
attributes on the statement and branch bins of proven-unreachable points (pyucis
keeps their file, line and column; toggle bins lose their signal names, so a UNR
toggle is not marked there) There are no
covergroup bins in LCOV (it knows lines, branches and functions only); UCIS XML gets
the covergroup bins pyucis does not read (:mod:`llm4cov.report.ucis_functional`).
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from llm4cov.report.data import line_span
from llm4cov.sim.backends import CoverageFormat
from llm4cov.sim.model.coverage import DesignModules, Point, dut_points
from llm4cov.sim.model.exclusions import Rule, split_points
from llm4cov.sim.model.feedback_terms import SourceIndex
from llm4cov.sim.model.metrics import LCOV_RECORDS, UCIS_BINS

_ELSE_ARMS = ("else", "cond_else")
_NOT_IN_TEST_NAME = re.compile(r"[^A-Za-z0-9_.-]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NOT_XML = re.compile(r"[\x00\x03-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")


def lcov_test_name(name: str) -> str:
    """``name`` as an LCOV test name (``TN:``): ``[A-Za-z0-9_.-]`` only, every other
    character replaced by ``_`` (``rtllm/accu`` -> ``rtllm_accu``)."""
    return _NOT_IN_TEST_NAME.sub("_", name) or "llm4cov"


def _source_record(path: Path) -> str:
    """The ``SF:`` record of ``path``.

    Raises:
        ValueError: the path holds a control or line-separator character (it would
            end the record and start another).
    """
    text = str(path)
    if not text or _CONTROL.search(text):
        raise ValueError(f"LCOV: cannot write a source record for the path {text[:80]!r} "
                         "(a control character would start a forged record)")
    return f"SF:{text}"


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
    are the DUT's as the evaluator counts them (:func:`llm4cov.sim.model.coverage.dut_points`
    with ``modules``); ``test_name`` goes through :func:`lcov_test_name`.

    Raises:
        ValueError: a source path holds a control character (:func:`_source_record`).
    """
    mine = dut_points(points, dut_hier, sources.keys(), modules)
    kept, _ = split_points(mine, rules)
    words = SourceIndex(sources)
    out: list[str] = []
    for name in sorted(sources):
        lines: dict[int, int] = {}
        branches: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for p in (p for p in kept if p.file == name):
            record = LCOV_RECORDS.get(p.metric)
            if record == "DA":
                for n in line_span(p.lines, p.line):
                    lines[n] = max(lines.get(n, 0), p.count)
            elif record == "BRDA":
                _, own = words.construct(p.metric, p.file, p.line, p.col, p.comment, p.lines)
                col = p.col - 1 if p.comment in _ELSE_ARMS else p.col
                branches[(p.line, col)].append((own, p.count))
        if not lines and not branches:
            continue
        out += [f"TN:{lcov_test_name(test_name)}", _source_record(source_paths[name])]
        for block, (_, arms) in enumerate(sorted(branches.items())):
            out += [f"BRDA:{line},{block},{i},{count}" for i, (line, count) in enumerate(arms)]
        arms = [a for group in branches.values() for a in group]
        out += [f"BRF:{len(arms)}", f"BRH:{sum(c > 0 for _, c in arms)}"]
        out += [f"DA:{n},{c}" for n, c in sorted(lines.items())]
        out += [f"LF:{len(lines)}", f"LH:{sum(c > 0 for c in lines.values())}",
                "end_of_record"]
    return "\n".join(out) + "\n" if out else ""


def xml_safe_coverage(text: str) -> str:
    """``coverage.dat`` text with every character XML 1.0 cannot hold, and DEL and C1,
    shown as ``\\xNN`` (a testbench chooses names and `` `line`` file names that end up
    there); Verilator's own field separators ``\\x01``/``\\x02``, TAB, LF and CR stay."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def write_ucis_xml(coverage_dat: Path, out: Path, fmt: CoverageFormat) -> int:
    """Convert the coverage file ``coverage_dat`` of format ``fmt`` (Verilator's
    ``coverage.dat``, read by pyucis's ``fmt.ucis_format`` reader after
    :func:`xml_safe_coverage`) to UCIS XML at ``out`` with pyucis, whose lxml writer
    escapes markup (no DOCTYPE, entity or processing instruction can come from a name);
    returns how many points pyucis's reader skipped (it prints a warning per point to
    stdout, which is captured here so that ``--json`` output stays valid).

    Raises:
        ValueError: ``fmt`` has no UCIS reader.
        Exception: whatever pyucis raises for a file it cannot read.
    """
    if fmt.ucis_format is None:
        raise ValueError(f"no UCIS export for {fmt.kept_name} files")
    from ucis.rgy import FormatRgy

    rgy = FormatRgy.inst()
    chatter = io.StringIO()
    text = coverage_dat.read_text(encoding="utf-8", errors="replace")
    with tempfile.TemporaryDirectory(prefix="llm4cov-ucis-") as tmp:
        clean = Path(tmp) / "coverage.dat"
        clean.write_text(xml_safe_coverage(text), encoding="utf-8")
        with contextlib.redirect_stdout(chatter):
            db = rgy.getDatabaseDesc(fmt.ucis_format).fmt_if().read(str(clean))
            try:
                from llm4cov.report.ucis_functional import add_covergroups  # pyucis: slow

                add_covergroups(db, fmt.read(clean))
                rgy.getDatabaseDesc("xml").fmt_if().write(db, str(out))
            finally:
                db.close()
    return chatter.getvalue().count("Failed to parse line")


UNR_REASON = "UNR: proven unreachable by k-induction (llm4cov formal)"


def mark_unreachable_ucis(ucis_xml: Path, unreachable: Sequence[Point]) -> int:
    """Mark the bins of ``unreachable`` (uncovered line and branch points) in a UCIS
    XML file written by :func:`write_ucis_xml`: ``excluded="true"`` with
    :data:`UNR_REASON`, on every instance's bin at the point's file, line and column
    (a proof about a module's source holds in each of its instances). Returns how many
    bins were marked.

    Raises:
        OSError, xml.etree.ElementTree.ParseError: the file cannot be read or parsed.
    """
    bins = {metric for metric, *_ in UCIS_BINS}
    wanted = {(p.metric, p.file, p.line, p.col) for p in unreachable if p.metric in bins}
    if not wanted:
        return 0
    tree = ET.parse(ucis_xml)
    root = tree.getroot()
    files = {f.get("id"): f.get("fileName") for f in root.iter("sourceFiles")}
    marked = 0
    for metric, holder, bin_tag in UCIS_BINS:
        for elem in root.iter(holder):
            where, bin_elem = elem.find("id"), elem.find(bin_tag)
            if where is None or bin_elem is None:
                continue
            key = (metric, files.get(where.get("file")), int(where.get("line", "0")),
                   int(where.get("inlineCount", "0")))
            count = bin_elem.find("contents")
            if key in wanted and count is not None and count.get("coverageCount") == "0":
                bin_elem.set("excluded", "true")
                bin_elem.set("excludedReason", UNR_REASON)
                marked += 1
    tree.write(ucis_xml, encoding="utf-8", xml_declaration=False)
    return marked
