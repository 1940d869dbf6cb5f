"""Per-answer copy checks: does a model's answer name the task's DUT right?

A small model that copies a testbench template often gets the design's names wrong: the
module it instantiates, the instance name the task asks for, the pins. These checks
read one answer's text alone (a pyslang syntax tree; nothing is preprocessed,
elaborated or simulated), so they say *which* name was wrong even where the evaluator
stopped at the first compile error. They count every model answer of a bench arm
(every round of every sample) in ``summary.json`` (``answer_checks``).

The checks of one answer, each a bool (:class:`AnswerChecks`):

- ``testbench``: the answer holds a module
  (:func:`~llm4cov.agent.response.extract_testbench`);
- ``dut_module``: a module of that testbench instantiates the DUT module by name;
- ``dut_instance``: one of those instances has the task's instance name (any name
  counts when the task asks for none);
- ``pins_valid``: that instance (the one with the right name, else the first) names
  only ports the DUT has, and lists no more positional connections than it has ports;
- ``pins_complete``: it connects every DUT port (by name, by ``.*`` or positionally).

``dut_module`` implies ``testbench``; ``dut_instance`` and both pin checks imply
``dut_module`` (pins are read only on a DUT instance); ``pins_complete`` implies
``pins_valid``.

The answer is untrusted text parsed in llm4cov's process: pyslang never opens an
`` `include`` there (:func:`llm4cov.tasks.hdl.parse_tree`), and a testbench that uses
the preprocessor (whose macros could expand without bound) is parsed in a child
process instead, bounded in CPU time per answer and in memory, in the OS sandbox where
it runs (:class:`Deferred`: one child for every such answer of a report, resumed after
an answer that broke a bound). An answer that cannot be parsed (nesting too deep, past
a bound) counts as holding a testbench but no DUT instance, and as ``unparsed``
(:attr:`AnswerChecks.unparsed`; ``summary.json`` counts it only when there is one).
Scoring a report therefore always finishes.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass

from pyslang import syntax

from llm4cov.agent.response import extract_testbench
from llm4cov.tasks.hdl import USES_MACROS, ParseLimitError, parse_tree

CHECKS = ("testbench", "dut_module", "dut_instance", "pins_valid", "pins_complete")
"""The checks, in the order reports list them."""


@dataclass(frozen=True)
class AnswerChecks:
    """The copy checks of one answer (see the module docstring)."""

    testbench: bool = False
    dut_module: bool = False
    dut_instance: bool = False
    pins_valid: bool = False
    pins_complete: bool = False
    unparsed: bool = False
    """pyslang could not parse the testbench (nesting too deep, or past a bound of the
    child that parses answers using the preprocessor)."""


UNPARSED = AnswerChecks(testbench=True, unparsed=True)
"""The checks of an answer whose testbench could not be parsed."""


@dataclass(frozen=True)
class AnswerLimits:
    """Bounds on the child that parses answers using the preprocessor: CPU seconds per
    answer, address space, and wall seconds per child (``wall_s`` plus 1 s per answer)."""

    cpu_s: int = 5
    memory_bytes: int = 512 << 20
    wall_s: float = 60.0


@dataclass(frozen=True)
class _Instance:
    name: str
    named: tuple[str, ...]  # ports connected by name (`.a(x)`, `.a`)
    ordered: int  # positional connections
    wildcard: bool  # `.*`


def _dut_instances(text: str, dut_module: str) -> list[_Instance]:
    """Every instance of ``dut_module`` in ``text``, in source order."""
    found: list[_Instance] = []

    def visit(node: object) -> bool:
        if isinstance(node, syntax.HierarchyInstantiationSyntax) and \
                node.type.valueText == dut_module:
            for inst in node.instances:
                if not isinstance(inst, syntax.HierarchicalInstanceSyntax):
                    continue  # the commas between `m a(...), b(...);`
                conns = list(inst.connections)
                found.append(_Instance(
                    inst.decl.name.valueText if inst.decl is not None else "",
                    tuple(c.name.valueText for c in conns
                          if isinstance(c, syntax.NamedPortConnectionSyntax)),
                    sum(isinstance(c, syntax.OrderedPortConnectionSyntax) for c in conns),
                    any(isinstance(c, syntax.WildcardPortConnectionSyntax) for c in conns)))
        return True

    parse_tree(text, "answer.sv").root.visit(visit)
    return found


def check_answer(response: str | None, dut_module: str, dut_instance: str | None,
                 dut_ports: Sequence[str] | None) -> AnswerChecks:
    """The copy checks of one model ``response`` (raw answer text) against the task's
    DUT module name, instance name (None = any) and port names (None = unknown: both pin
    checks are then False).

    Never raises on bad text: an answer pyslang cannot parse (nesting too deep, past a
    bound) holds a testbench but no DUT instance (:data:`UNPARSED`). A testbench that
    uses the preprocessor is parsed in a bounded child (:class:`Deferred`).
    """
    tb = extract_testbench(response or "", dut_module)
    if tb is None:
        return AnswerChecks()
    if not USES_MACROS.search(tb):
        return testbench_checks(tb, dut_module, dut_instance, dut_ports)
    with Deferred() as deferred:
        deferred.add(0, tb, dut_module, dut_instance, dut_ports)
        return next(checks for _key, checks in deferred.results())


def testbench_checks(tb: str, dut_module: str, dut_instance: str | None,
                     dut_ports: Sequence[str] | None) -> AnswerChecks:
    """The copy checks of an extracted testbench, parsed in this process (bounded only
    when it does not use the preprocessor: see the module docstring)."""
    try:
        instances = _dut_instances(tb, dut_module)
    except (ParseLimitError, ValueError, TypeError, MemoryError, RecursionError):
        return UNPARSED  # untrusted text: whatever pyslang refuses, the report goes on
    if not instances:
        return AnswerChecks(testbench=True)
    named = [i for i in instances if dut_instance is None or i.name == dut_instance]
    inst = (named or instances)[0]
    ports = set(dut_ports) if dut_ports is not None else None
    if ports is None or not set(inst.named) <= ports or inst.ordered > len(ports):
        return AnswerChecks(True, True, bool(named))
    complete = inst.wildcard or set(inst.named) == ports or inst.ordered == len(ports)
    return AnswerChecks(True, True, bool(named), True, complete)


class Deferred:
    """Answers whose testbench uses the preprocessor, parsed in one bounded child after
    they were all added (:class:`llm4cov.sim.safety.bounded.Batch`: per answer ``cpu_s`` CPU
    seconds, ``memory_bytes`` of address space, the OS sandbox where it runs; an answer
    the child dies on is :data:`UNPARSED`, the next child goes on after it). Use as a
    context manager."""

    def __init__(self, limits: AnswerLimits = AnswerLimits(),
                 workdir_root: str | None = None) -> None:
        from llm4cov.sim.safety.bounded import Batch, BatchLimits

        self.keys: list[Hashable] = []
        self._batch = Batch(__name__, BatchLimits(limits.cpu_s, limits.memory_bytes,
                                                  limits.wall_s), workdir_root)

    def __enter__(self) -> Deferred:
        return self

    def __exit__(self, *exc: object) -> None:
        self._batch.close()

    def add(self, key: Hashable, tb: str, dut_module: str, dut_instance: str | None,
            dut_ports: Sequence[str] | None) -> None:
        """Queue the testbench ``tb`` of an answer, returned later under ``key``."""
        self._batch.add([tb, dut_module, dut_instance,
                         list(dut_ports) if dut_ports is not None else None])
        self.keys.append(key)

    def results(self) -> Iterator[tuple[Hashable, AnswerChecks]]:
        """``(key, checks)`` of every answer added, in order."""
        for key, value in zip(self.keys, self._batch.results(), strict=True):
            yield key, (AnswerChecks(**{k: bool(value.get(k)) for k in _FIELDS})
                        if isinstance(value, dict) else UNPARSED)


_FIELDS = tuple(AnswerChecks.__dataclass_fields__)


def _child_checks(item: list) -> dict[str, bool]:
    tb, module, instance, ports = item
    return asdict(testbench_checks(tb, module, instance, ports))


class CheckCounts:
    """How many answers passed each check, summed while streaming rows."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(("answers", *CHECKS, "unparsed"), 0)

    def add(self, checks: AnswerChecks) -> None:
        self.counts["answers"] += 1
        for name, passed in asdict(checks).items():
            self.counts[name] += passed

    def as_dict(self) -> dict[str, int]:
        """``{"answers": n, <check>: answers that passed it, ...}``, and ``"unparsed"``
        (answers pyslang could not parse) when there is one."""
        return {k: n for k, n in self.counts.items() if k != "unparsed" or n}

    @classmethod
    def total(cls, parts: Iterable[CheckCounts]) -> CheckCounts:
        """The counts of ``parts`` added up."""
        out = cls()
        for part in parts:
            for name, n in part.counts.items():
                out.counts[name] += n
        return out


if __name__ == "__main__":  # the child of a Deferred batch
    from llm4cov.sim.safety.bounded import serve

    serve(sys.argv[2:], _child_checks)
