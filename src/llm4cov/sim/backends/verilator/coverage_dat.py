"""Verilator's ``coverage.dat`` -> coverage points (:class:`~llm4cov.sim.coverage.Point`).

Keys are decoded with pyucis's Verilator reader (``VltParser.decode_compact_string``);
the line itself is split here because pyucis's line regex (``C '([^']*)'``) drops every
point whose text contains a quote, e.g. an expression term with ``'d3``. Keys: ``t``
the point type (``fsm_*`` become metric ``fsm``, none ``user``), ``f`` the file, ``l``
the line, ``o`` (or ``bin_type``) the comment, ``h`` the hierarchy, ``S`` the lines a
block covers, ``n`` the column, ``page`` ``v_<kind>/<module>`` the module.
"""

from __future__ import annotations

import re
from pathlib import Path

from ucis.vltcov.vlt_parser import VltParser

from llm4cov.sim.backends.base import CoverageFormat
from llm4cov.sim.coverage import Point

_POINT_LINE = re.compile(r"^C '(?P<key>.*)' (?P<count>\d+)\s*$")


def metric_name(point_type: str) -> str:
    """Our metric name for a Verilator point type (``fsm_state`` -> ``fsm``)."""
    return "fsm" if point_type.startswith("fsm") else point_type or "user"


def parse_coverage_dat(path: Path) -> list[Point]:
    """Parse a ``coverage.dat`` file (non-UTF-8 bytes are replaced).

    Raises:
        OSError: the file cannot be read.
    """
    parser = VltParser()
    points: list[Point] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            match = _POINT_LINE.match(raw.rstrip("\n"))
            if match is None:
                continue
            attrs = parser.decode_compact_string(match["key"])
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
