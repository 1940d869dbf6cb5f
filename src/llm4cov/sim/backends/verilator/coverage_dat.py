"""Verilator's ``coverage.dat`` -> coverage points (:class:`~llm4cov.sim.model.coverage.Point`).

Keys are decoded as pyucis's Verilator reader decodes them (:func:`decode_key`); the
line itself is split here because pyucis's line regex (``C '([^']*)'``) drops every
point whose text contains a quote, e.g. an expression term with ``'d3``. Keys: ``t``
the point type (``fsm_*`` become metric ``fsm``, none ``user``), ``f`` the file, ``l``
the line, ``o`` (or ``bin_type``) the comment, ``h`` the hierarchy, ``S`` the lines a
block covers, ``n`` the column, ``page`` ``v_<kind>/<module>`` the module.
"""

from __future__ import annotations

import re
from pathlib import Path

from llm4cov.sim.backends.base import CoverageFormat
from llm4cov.sim.model.coverage import Point
from llm4cov.sim.model.metrics import metric_of_tag

POINT_LINE = re.compile(r"^C '(?P<key>.*)' (?P<count>\d+)\s*$")
"""One point line of ``coverage.dat``: its key and its hit count."""


def metric_name(point_type: str) -> str:
    """Our metric name for a Verilator point type (``fsm_state`` -> ``fsm``): the row
    of :data:`llm4cov.sim.model.metrics.METRICS` whose ``tag`` it is."""
    return metric_of_tag(point_type)


def decode_key(compact: str) -> dict[str, str]:
    """A point's key as ``{name: value}``: Verilator writes ``\\001name\\002value``
    pairs. Decoded exactly as pyucis's ``VltParser.decode_compact_string`` does (a name
    runs to the next ``\\002``, a value to the next ``\\001``; text before the first
    ``\\001`` is skipped, a name without ``\\002`` ends the key;
    ``tests/test_coverage_parse.py`` checks the two agree), without importing pyucis
    (0.2 s on every simulating process)."""
    result: dict[str, str] = {}
    pos = compact.find("\001")
    while pos != -1:
        name_end = compact.find("\002", pos + 1)
        if name_end == -1:
            break
        value_end = compact.find("\001", name_end + 1)
        result[compact[pos + 1:name_end]] = compact[
            name_end + 1:value_end if value_end != -1 else len(compact)]
        pos = value_end
    return result


def parse_coverage_dat(path: Path) -> list[Point]:
    """Parse a ``coverage.dat`` file (non-UTF-8 bytes are replaced).

    Raises:
        OSError: the file cannot be read.
    """
    points: list[Point] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            match = POINT_LINE.match(raw.rstrip("\n"))
            if match is None:
                continue
            attrs = decode_key(match["key"])
            points.append(
                Point(
                    metric=metric_name(attrs.get("t", "")),
                    file=attrs.get("f", ""),
                    line=int(attrs["l"]) if attrs.get("l", "").isdigit() else 0,
                    comment=attrs.get("o", "") or attrs.get("bin_type", ""),
                    hier=attrs.get("h", ""),
                    count=int(match["count"]),
                    lines=attrs.get("S", ""),
                    col=int(attrs["n"]) if attrs.get("n", "").isdigit() else 0,
                    module=attrs.get("page", "").partition("/")[2],
                )
            )
    return points


COVERAGE_FORMAT = CoverageFormat(
    kept_name="coverage.dat", max_bytes=64 * 1024**2, read=parse_coverage_dat,
    ucis_format="vltcov")
"""Verilator's ``coverage.dat``, shared by every Verilator build (the reports' reader;
the evaluator's cap and kept name)."""
