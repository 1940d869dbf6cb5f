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

Points proven unreachable by formal (:class:`ProvenUnreachable`, from the ``formal``
policy or ``llm4cov formal``) are not excluded: they stay in every count and the
reports mark them UNR (Cadence IMC's term) with a separate "unreachable excluded"
figure beside the unchanged headline.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from llm4cov.sim.model.construct import Construct
from llm4cov.sim.model.feedback_terms import SourceIndex
from llm4cov.sim.model.metrics import EXCLUDABLE, TOGGLE
from llm4cov.sim.model.wording import render

if TYPE_CHECKING:
    from llm4cov.sim.model.observation import UncoveredItem

METRICS = EXCLUDABLE
"""The metric names a rule may end with (the excludable rows of
:data:`llm4cov.sim.model.metrics.METRICS`)."""
_LINES = re.compile(r"^(?P<file>[^:\s]+):(?P<first>\d+)(?:-(?P<last>\d+))?$")


class ExclusionError(ValueError):
    """A malformed exclusion rule; the message names the rule's line."""


class _PointLike(Protocol):
    """What a rule reads of a point (read-only: a frozen ``Point`` has it)."""

    @property
    def metric(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def hier(self) -> str: ...


class _Worded(_PointLike, Protocol):  # llm4cov.sim.model.coverage.Point
    """What a proof's match reads of a point besides :class:`_PointLike`'s fields."""

    @property
    def col(self) -> int: ...
    @property
    def comment(self) -> str: ...
    @property
    def lines(self) -> str: ...
    @property
    def count(self) -> int: ...


P = TypeVar("P", bound=_PointLike)
W = TypeVar("W", bound=_Worded)


@dataclass(frozen=True)
class Rule:
    """One exclusion: a file and line range, or a hierarchy glob; optional metrics."""

    file: str = ""
    first: int = 0
    last: int = 0
    hier: str = ""
    metrics: frozenset[str] = frozenset()

    def matches(self, point: _PointLike) -> bool:
        """True when ``point`` (a :class:`~llm4cov.sim.model.coverage.Point`) is excluded."""
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


@dataclass(frozen=True)
class ProvenUnreachable:
    """A coverage goal that k-induction proved no run from reset reaches
    (:mod:`llm4cov.formal`): marked UNR in the reports, never removed from the headline.

    The fields are those of the formal policy's annotation (``unreachable_items`` of
    :func:`llm4cov.policies.formal.verdicts`): the item's ``file``, ``line``, ``kind``,
    wording ``item`` (as the feedback listed it, for the reader) and construct
    ``typed``, the ``goal`` (``then branch``, ``case item``, ``q[3] 0->1``) and its
    ``metric``. A goal is proven in the module's source, so it holds in every instance
    of that module. Which point it stands for: :meth:`matches`.
    """

    file: str
    line: int
    kind: str
    item: str
    goal: str
    metric: str
    typed: Construct | None = field(default=None, kw_only=True)
    """The item's construct (:attr:`llm4cov.sim.model.observation.UncoveredItem.typed`),
    which identifies its point; None in an entry written before entries carried it, or
    for an item whose construct was read back from its wording: such an entry matches
    by its wording ``item``, as entries always did."""

    @classmethod
    def of(cls, item: UncoveredItem, goal: str, metric: str, **more: Any) -> Self:
        """The goal ``goal`` (of ``metric``) standing for ``item`` (``more``: the fields
        of a subclass)."""
        return cls(file=item.file, line=item.line, kind=item.kind, item=item.detail,
                   goal=goal, metric=metric,
                   typed=None if item.typed.from_text else item.typed, **more)

    @classmethod
    def from_annotation(cls, entry: Mapping) -> ProvenUnreachable:
        """One entry of an annotation's ``unreachable_items`` (:meth:`annotation`; an
        entry without ``typed`` is an older one).

        Raises:
            KeyError, ValueError: a field is missing, ``line`` is not a number or
                ``typed`` is not a construct (a ``pydantic.ValidationError``).
        """
        typed = entry.get("typed")
        return cls(file=str(entry["file"]), line=int(entry["line"]), kind=str(entry["kind"]),
                   item=str(entry["item"]), goal=str(entry["goal"]),
                   metric=str(entry["metric"]),
                   typed=Construct.model_validate(typed) if typed else None)

    @property
    def item_key(self) -> tuple[str, int, str, Construct | str]:
        """The item it stands for: ``(file, line, kind, typed)``, or the wording ``item``
        in place of ``typed`` for an entry without one (several goals of one item, e.g.
        toggle bits, share it)."""
        return self.file, self.line, self.kind, self.item if self.typed is None else self.typed

    def annotation(self) -> dict[str, Any]:
        """The goal as an entry of an annotation's ``unreachable_items`` (JSON), read
        back by :meth:`from_annotation`; ``typed`` only when known."""
        entry: dict[str, Any] = {"file": self.file, "line": self.line, "kind": self.kind,
                                 "item": self.item, "goal": self.goal, "metric": self.metric}
        if self.typed is not None:
            entry["typed"] = self.typed.model_dump(mode="json")
        return entry

    def matches(self, point: _Worded, line: int, construct: Construct) -> bool:
        """True when ``point`` is this goal's point; ``line`` and ``construct`` are the
        point's own line and construct (:meth:`llm4cov.sim.model.feedback_terms.
        SourceIndex.construct`). A toggle goal ``q[3] 0->1`` is the point ``q[3]:0->1``
        at the item's line; any other goal's point has the item's line and construct
        (``typed``), or, in an entry without one, the item's wording."""
        if (point.metric, point.file) != (self.metric, self.file):
            return False
        if self.metric == TOGGLE.name:
            ref, _, direction = self.goal.rpartition(" ")
            return point.line == self.line and point.comment == f"{ref}:{direction}"
        if line != self.line:
            return False
        if self.typed is not None:
            return construct == self.typed
        return render(point.metric, point.file, construct) == self.item


def proven_unreachable(annotations: Iterable[Mapping]) -> list[ProvenUnreachable]:
    """Every distinct proven-unreachable goal in policy annotations (each a round's
    ``annotations``; the ``formal`` entry's ``unreachable_items``), in first-seen order.
    A proof is about the RTL, so one found in any round holds for every testbench."""
    found: dict[ProvenUnreachable, None] = {}
    for annotation in annotations:
        for entry in (annotation.get("formal") or {}).get("unreachable_items", ()):
            found.setdefault(ProvenUnreachable.from_annotation(entry))
    return list(found)


G = TypeVar("G", bound=ProvenUnreachable)


def goals_at(points: Iterable[W], goals: Sequence[G], sources: Mapping[str, str]
             ) -> Iterator[tuple[W, list[G]]]:
    """Each uncovered point of ``points`` (in order) that goals of ``goals`` stand for
    (:meth:`ProvenUnreachable.matches`), with those goals. ``sources`` maps the RTL file
    names to their text (for the points' constructs)."""
    by_key: dict[tuple[str, str], list[G]] = defaultdict(list)
    for goal in goals:
        by_key[(goal.file, goal.metric)].append(goal)
    index = SourceIndex(sources)
    for p in points:
        found = by_key.get((p.file, p.metric)) if p.count == 0 else None
        if not found:
            continue
        construct, own = index.construct(p.metric, p.file, p.line, p.col, p.comment, p.lines)
        matching = [g for g in found if g.matches(p, own, construct)]
        if matching:
            yield p, matching


def unreachable_misses(points: Iterable[W], proven: Sequence[ProvenUnreachable],
                       sources: Mapping[str, str]) -> list[W]:
    """The uncovered points among ``points`` that a goal of ``proven`` stands for (in
    order). ``sources`` maps the RTL file names to their text."""
    return [p for p, _ in goals_at(points, proven, sources)]
