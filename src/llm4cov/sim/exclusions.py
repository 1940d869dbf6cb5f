"""Coverage exclusions: points left out of the counts on purpose, reported as excluded.

Two ways to exclude code (documented in ``docs/reports.md``):

1. In the RTL, Verilator's own pragmas: ``/* verilator coverage_off */`` ...
   ``/* verilator coverage_on */``. Verilator emits no points for the region, so it is
   absent from ``coverage.dat`` and from every count.
2. An exclusion file (``--exclude FILE``), applied when counting. One rule a line,
   ``#`` starts a comment:

   - ``FILE:LINE`` or ``FILE:FIRST-LAST``: points of that RTL file (a glob, matched
     against the file name as ``coverage.dat`` writes it) on those lines;
   - ``hier PATTERN``: points whose instance path matches the glob ``PATTERN``
     (``tb.dut.u_dbg``, ``tb.dut.*_bist``), the instance itself and everything below;
   - either form may end with metric names (``line branch expr toggle fsm user``) to
     exclude only those: ``regs.sv:40-48 toggle``.

Excluded points are removed before the per-metric counts (so they change neither the
covered nor the total count) and reported as excluded.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

METRICS = frozenset({"line", "branch", "expr", "toggle", "fsm", "user"})
_LINES = re.compile(r"^(?P<file>[^:\s]+):(?P<first>\d+)(?:-(?P<last>\d+))?$")


class ExclusionError(ValueError):
    """A malformed exclusion rule; the message names the rule's line."""


class _PointLike(Protocol):
    metric: str
    file: str
    line: int
    hier: str


P = TypeVar("P", bound=_PointLike)


@dataclass(frozen=True)
class Rule:
    """One exclusion: a file and line range, or a hierarchy glob; optional metrics."""

    file: str = ""
    first: int = 0
    last: int = 0
    hier: str = ""
    metrics: frozenset[str] = frozenset()

    def matches(self, point: _PointLike) -> bool:
        """True when ``point`` (a :class:`~llm4cov.sim.coverage.Point`) is excluded."""
        if self.metrics and point.metric not in self.metrics:
            return False
        if self.hier:
            return fnmatch.fnmatchcase(point.hier, self.hier) or fnmatch.fnmatchcase(
                point.hier, self.hier + ".*"
            )
        return (
            self.first <= point.line <= self.last
            and (fnmatch.fnmatchcase(point.file, self.file)
                 or fnmatch.fnmatchcase(Path(point.file).name, self.file))
        )


def parse_rules(lines: Iterable[str], source: str = "exclusions") -> tuple[Rule, ...]:
    """Parse exclusion rules (the format above).

    Raises:
        ExclusionError: a line that is not a rule, e.g. ``excl.txt:3: expected
            FILE:LINE[-LAST] or 'hier PATTERN', got 'foo'``.
    """
    rules = []
    for number, raw in enumerate(lines, start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source}:{number}"
        if words[0] == "hier":
            if len(words) < 2:
                raise ExclusionError(f"{where}: 'hier' needs a hierarchy pattern")
            rules.append(Rule(hier=words[1], metrics=_metrics(words[2:], where)))
            continue
        m = _LINES.match(words[0])
        if m is None:
            raise ExclusionError(
                f"{where}: expected FILE:LINE[-LAST] or 'hier PATTERN', got {words[0]!r}"
            )
        first = int(m["first"])
        last = int(m["last"]) if m["last"] else first
        if last < first:
            raise ExclusionError(f"{where}: line range {first}-{last} is reversed")
        rules.append(Rule(file=m["file"], first=first, last=last,
                          metrics=_metrics(words[1:], where)))
    return tuple(rules)


def load_rules(path: Path) -> tuple[Rule, ...]:
    """Read and parse an exclusion file.

    Raises:
        OSError: the file cannot be read.
        ExclusionError: a malformed rule.
    """
    return parse_rules(path.read_text(encoding="utf-8").splitlines(), str(path))


def _metrics(words: Sequence[str], where: str) -> frozenset[str]:
    unknown = [w for w in words if w not in METRICS]
    if unknown:
        raise ExclusionError(
            f"{where}: unknown metric {unknown[0]!r} (one of {', '.join(sorted(METRICS))})"
        )
    return frozenset(words)


def split_points(
    points: Iterable[P], rules: Sequence[Rule]
) -> tuple[list[P], list[P]]:
    """``(kept, excluded)``: the points no rule matches, and those one does."""
    kept: list[P] = []
    excluded: list[P] = []
    for p in points:
        (excluded if any(r.matches(p) for r in rules) else kept).append(p)
    return kept, excluded


def excluded_note(excluded: Iterable[_PointLike]) -> str:
    """A one-line summary, e.g. ``3 points excluded by the exclusion rules (line 1, toggle 2)``;
    empty when nothing was excluded."""
    by_metric = Counter(p.metric for p in excluded)
    if not by_metric:
        return ""
    total = sum(by_metric.values())
    parts = ", ".join(f"{m} {n}" for m, n in sorted(by_metric.items()))
    return f"{total} point{'s' if total != 1 else ''} excluded by the exclusion rules ({parts})"
