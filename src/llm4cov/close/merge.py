"""Per-test coverage merged by point identity, with the counting rules of one run.

A test's run leaves Verilator's ``coverage.dat`` (``Observation.coverage_data``). Each
line is one point: ``C '<key>' <count>``, the key a list of ``\\x01name\\x02value``
attributes (file, line, column, comment, hierarchy, module page, ...). Merging sums
the counts of equal keys (what ``verilator_coverage --write`` does), after two steps
that make keys of different tests comparable and keep exactly what one run counts:

1. only the points that count for the DUT stay (:func:`llm4cov.sim.model.coverage.dut_points`'
   rules: at or below the test's DUT instance, in an RTL file, of an RTL module; never a
   covergroup bin);
2. the DUT instance path is rewritten to the regression's root (``root``): one
   testbench may call its top ``tb`` and another ``tb_top``; the key's attributes are
   written in name order (:func:`identity`).

The merged file is again a ``coverage.dat`` and is read back with the backend's own
reader, so the merged figure is :func:`llm4cov.sim.model.coverage.summarize` of the merged
points, exclusions applied first, as the evaluator counts one run. A point is covered
when its merged count is > 0, i.e. when any test hit it, so the covered set is the
union of the tests' covered sets.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from llm4cov.sim.backends.verilator.coverage_dat import POINT_LINE, decode_key, metric_name
from llm4cov.sim.model.coverage import DesignModules, in_subtree
from llm4cov.sim.model.metrics import is_code

HEADER = "# SystemC::Coverage-3\n"


def encode_key(pairs: Iterable[tuple[str, str]]) -> str:
    """The inverse of :func:`~llm4cov.sim.backends.verilator.coverage_dat.decode_key`, in
    Verilator's form (``\\x01`` before each attribute, none at the end), attributes in
    the order given."""
    return "".join(f"\x01{name}\x02{value}" for name, value in pairs)


def identity(pairs: Iterable[tuple[str, str]]) -> str:
    """A point's identity: its key with the attributes sorted by name (two runs may
    write one point's attributes in another order)."""
    return encode_key(sorted(pairs))


@dataclass(frozen=True)
class RunScope:
    """What one test's run counts: its DUT instance path, the RTL file names and the
    modules its plan found (RTL and testbench)."""

    dut_hier: str
    rtl_files: frozenset[str]
    modules: DesignModules | None = None


def run_points(dat_text: str, scope: RunScope, root: str) -> dict[str, int]:
    """The DUT points of one run's ``coverage.dat`` text, keyed by identity with the
    DUT instance path rewritten to ``root``, and their counts (summed when a key
    repeats, as Verilator's own merge does)."""
    out: dict[str, int] = {}
    for raw in dat_text.splitlines():
        match = POINT_LINE.match(raw)
        if match is None:
            continue
        pairs = list(decode_key(match["key"]).items())
        attrs = dict(pairs)
        kind = attrs.get("t", "")
        hier = attrs.get("h", "")
        module = attrs.get("page", "").partition("/")[2]
        if not is_code(metric_name(kind)) or not in_subtree(hier, scope.dut_hier):
            continue
        if attrs.get("f", "") not in scope.rtl_files:
            continue
        if scope.modules is not None and not scope.modules.is_rtl(module):
            continue
        if scope.dut_hier != root:
            hier = root + hier[len(scope.dut_hier):]
            pairs = [(k, hier if k == "h" else v) for k, v in pairs]
        key = identity(pairs)
        out[key] = out.get(key, 0) + int(match["count"])
    return out


@dataclass
class Merged:
    """The merged coverage of a set of tests (in the order added): the summed counts
    per point key and each test's covered keys."""

    counts: dict[str, int] = field(default_factory=dict)
    hits: dict[str, frozenset[str]] = field(default_factory=dict)

    def new_hits(self, points: Mapping[str, int]) -> frozenset[str]:
        """The keys ``points`` covers that no test here covers yet."""
        return frozenset(k for k, n in points.items() if n > 0 and not self.counts.get(k))

    def add(self, name: str, points: Mapping[str, int]) -> None:
        """Merge test ``name``'s points."""
        for key, n in points.items():
            self.counts[key] = self.counts.get(key, 0) + n
        self.hits[name] = frozenset(k for k, n in points.items() if n > 0)

    def covered(self) -> frozenset[str]:
        return frozenset(k for k, n in self.counts.items() if n > 0)

    def dat_text(self) -> str:
        """The merged ``coverage.dat`` (keys sorted: the same tests give the same file)."""
        return HEADER + "".join(f"C '{k}' {self.counts[k]}\n" for k in sorted(self.counts))

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.dat_text(), encoding="utf-8", errors="surrogateescape")
        return path


def merge_all(tests: Sequence[tuple[str, Mapping[str, int]]]) -> Merged:
    """:class:`Merged` of ``(name, points)`` pairs, in order."""
    merged = Merged()
    for name, points in tests:
        merged.add(name, points)
    return merged


def minimize(hits: Mapping[str, Collection[str]], order: Sequence[str]) -> list[str]:
    """A minimal regression in the greedy sense: repeatedly take the test that covers
    the most points not covered yet (ties: the earlier in ``order``) until no test
    adds any (greedy set cover: the union is that of all tests); then drop, in reverse
    order of taking, every test whose points the others taken still cover. Returns the
    names kept, in ``order`` (none for none)."""
    if not order:
        return []
    left = {name: set(hits[name]) for name in order}
    taken: list[str] = []
    covered: set[str] = set()
    while True:
        best = max(order, key=lambda n: (len(left[n] - covered) if n not in taken else -1,
                                         -order.index(n)))
        if best in taken or not left[best] - covered:
            break
        taken.append(best)
        covered |= left[best]
    for name in reversed(list(taken)):
        others: set[str] = set().union(*(left[o] for o in taken if o != name))
        if left[name] <= others:
            taken.remove(name)
    return [n for n in order if n in taken]


def scope_of(dut_hier: str, rtl_files: Collection[str], rtl_modules: Sequence[str],
             tb_modules: Sequence[str]) -> RunScope:
    """The :class:`RunScope` of a recorded run (no modules recorded: files and path only)."""
    modules = DesignModules(frozenset(rtl_modules), frozenset(tb_modules)) \
        if rtl_modules else None
    return RunScope(dut_hier, frozenset(rtl_files), modules)
