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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from pyslang import syntax

from llm4cov.agent.response import extract_testbench
from llm4cov.tasks.hdl import ParseLimitError, parse_tree

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

    Never raises on bad text: an answer pyslang cannot parse (nesting too deep) holds a
    testbench but no DUT instance.
    """
    tb = extract_testbench(response or "", dut_module)
    if tb is None:
        return AnswerChecks()
    try:
        instances = _dut_instances(tb, dut_module)
    except ParseLimitError:
        instances = []
    if not instances:
        return AnswerChecks(testbench=True)
    named = [i for i in instances if dut_instance is None or i.name == dut_instance]
    inst = (named or instances)[0]
    ports = set(dut_ports) if dut_ports is not None else None
    if ports is None or not set(inst.named) <= ports or inst.ordered > len(ports):
        return AnswerChecks(True, True, bool(named))
    complete = inst.wildcard or set(inst.named) == ports or inst.ordered == len(ports)
    return AnswerChecks(True, True, bool(named), True, complete)


class CheckCounts:
    """How many answers passed each check, summed while streaming rows."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(("answers", *CHECKS), 0)

    def add(self, checks: AnswerChecks) -> None:
        self.counts["answers"] += 1
        for name, passed in asdict(checks).items():
            self.counts[name] += passed

    def as_dict(self) -> dict[str, int]:
        """``{"answers": n, <check>: answers that passed it, ...}``."""
        return dict(self.counts)

    @classmethod
    def total(cls, parts: Iterable[CheckCounts]) -> CheckCounts:
        """The counts of ``parts`` added up."""
        out = cls()
        for part in parts:
            for name, n in part.counts.items():
                out.counts[name] += n
        return out
