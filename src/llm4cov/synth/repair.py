"""Broken states worth repairing: realistic mistakes planted in a teacher's testbench.

Stage-0 agentic transitions need states below the teacher's own coverage. When the
teacher's first testbench already reaches (nearly) full coverage its repairs gain
nothing and coverage-guided rejection drops them all (paper, "Learning offline":
``Cov(o_{t+1}) - Cov(o_t) >= tau_delta``). A broken state is the teacher's testbench
with one mistake that small models make, simulated for real; its repair is the
teacher's testbench, and the transition is kept only when it passes ``tau_delta``.

The kinds (:class:`BreakKind`), all planted with pyslang. On the DUT instantiation:

- ``module_name``: the DUT module instantiated under a generic name (``top_module``,
  or ``TopModule`` when the DUT is called ``top_module``): a compile error;
- ``instance_name``: the right module under another instance name (``uut``, or
  ``u_dut`` when ``uut`` is required): the evaluator's "does not instantiate" error;
- ``missing_pin``: the named connection of one input (not a clock or reset) removed;
- ``misspelled_pin``: one named connection's port name misspelled (``a`` -> ``a_i``,
  ``a_i`` -> ``a``): a compile error;
- ``pin_case``: one named connection's port name in the wrong case (``Q`` -> ``q``,
  ``q`` -> ``Q``; SystemVerilog names are case-sensitive): a compile error, seen in the
  v3 student's answers (``JC_counter``'s ``.q``);
- ``short_run``: an extra ``initial #1 $finish;``, a run that ends before the reset is
  released.

In the rest of the testbench, the compile errors seen in a 135M student's own answers
(``experiments/smollm2_cpu/notebook.md``, "Why the other 42 answers fail"):

- ``missing_endmodule``: the testbench's ``endmodule`` removed;
- ``glued_declaration``: a declaration without a range glued to its name
  (``logic rst_n`` -> ``logicrst_n``);
- ``missing_semicolon``: the ``;`` of one procedural statement removed;
- ``truncated``: the answer cut at the end of a line after the DUT instance's first
  line, as a generation stopped by its token limit.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from enum import StrEnum

from pyslang import syntax

from llm4cov.policies.stimulus_plan import Stimulus
from llm4cov.tasks.hdl import parse_tree
from llm4cov.tasks.model import Task

K = syntax.SyntaxKind


class BreakKind(StrEnum):
    """A mistake planted in a teacher's testbench (see the module docstring)."""

    MODULE_NAME = "module_name"
    INSTANCE_NAME = "instance_name"
    MISSING_PIN = "missing_pin"
    MISSPELLED_PIN = "misspelled_pin"
    PIN_CASE = "pin_case"
    SHORT_RUN = "short_run"
    MISSING_ENDMODULE = "missing_endmodule"
    GLUED_DECLARATION = "glued_declaration"
    MISSING_SEMICOLON = "missing_semicolon"
    TRUNCATED = "truncated"


STIMULUS_KINDS = frozenset({BreakKind.MISSING_ENDMODULE, BreakKind.GLUED_DECLARATION,
                            BreakKind.MISSING_SEMICOLON, BreakKind.TRUNCATED})
"""The kinds planted outside the DUT instantiation."""


def _nodes(tree, kind: type) -> list:
    """Every syntax node of class ``kind`` in ``tree``, in source order."""
    found: list = []

    def visit(node: object) -> bool:
        if isinstance(node, kind):
            found.append(node)
        return True

    tree.root.visit(visit)
    return found


def _dut_instance(testbench: str, task: Task):
    """``(tree, instantiation, instance)`` of the DUT in ``testbench`` (the tree keeps
    the nodes alive), or None."""
    tree = parse_tree(testbench, "tb.sv")
    for node in _nodes(tree, syntax.HierarchyInstantiationSyntax):
        if node.type.valueText != task.dut_module_name:
            continue
        for inst in node.instances:
            if inst.decl is not None and inst.decl.name.valueText == task.dut_instance_name:
                return tree, node, inst
    return None


def _replace(text: str, start: int, end: int, new: str) -> str:
    data = text.encode("utf-8", errors="surrogateescape")
    return (data[:start] + new.encode() + data[end:]).decode("utf-8", errors="surrogateescape")


def _span(node) -> tuple[int, int]:
    """Byte offsets of a syntax node or a token."""
    where = node.sourceRange if hasattr(node, "sourceRange") else node.range
    return where.start.offset, where.end.offset


def _cut(text: str, start: int, end: int) -> str:
    """``text`` without bytes ``start:end``, and without the line they leave blank."""
    data = text.encode("utf-8", errors="surrogateescape")
    head, tail = data[:start], data[end:]
    if head.rstrip(b" \t").endswith(b"\n") and tail.lstrip(b" \t").startswith(b"\n"):
        start = len(head.rstrip(b" \t"))  # the bytes had a line of their own
        end = len(data) - len(tail.lstrip(b" \t")) + 1
    return _replace(text, start, end, "")


def _stimulus_mistake(testbench: str, tree, node, kind: BreakKind,
                      rng: random.Random) -> str | None:
    """A mistake of a stimulus-level ``kind`` (the module docstring) planted in
    ``testbench`` (parsed as ``tree``; ``node`` is the DUT instantiation); None when
    there is no place for it."""
    if kind is BreakKind.MISSING_ENDMODULE:
        modules = [m for m in _nodes(tree, syntax.ModuleDeclarationSyntax)
                   if _span(m)[0] <= _span(node)[0] < _span(m)[1]]
        return _cut(testbench, *_span(modules[0].endmodule)) if modules else None
    if kind is BreakKind.GLUED_DECLARATION:
        gaps = [(_span(d.type)[1], _span(d.declarators[0].name)[0])
                for d in _nodes(tree, syntax.DataDeclarationSyntax)
                if isinstance(d.type, syntax.IntegerTypeSyntax) and not d.type.dimensions
                and not d.type.signing.valueText and len(d.declarators)]
        gaps = [(a, b) for a, b in gaps if a < b]
        return _replace(testbench, *gaps[rng.randrange(len(gaps))], "") if gaps else None
    if kind is BreakKind.MISSING_SEMICOLON:
        semis = [_span(n.semi) for n in _nodes(tree, syntax.ExpressionStatementSyntax)]
        return _replace(testbench, *semis[rng.randrange(len(semis))], "") if semis else None
    # TRUNCATED: cut after a whole line, from the DUT instance's first line on
    data = testbench.encode("utf-8", errors="surrogateescape")
    first = data.find(b"\n", _span(node)[0])
    ends = [i + 1 for i in range(first, len(data.rstrip()))
            if data[i:i + 1] == b"\n"]
    return data[:ends[rng.randrange(len(ends))]].decode(
        "utf-8", errors="surrogateescape") if ends else None


def _named_connections(inst) -> list:
    return [c for c in inst.connections if getattr(c, "kind", None) == K.NamedPortConnection]


def break_testbench(testbench: str, task: Task, kind: BreakKind, seed: int = 0) -> str | None:
    """``testbench`` with one mistake of ``kind``; None when the testbench has no place
    for it (no DUT instance under the required name, no named connection, ...).
    ``seed`` picks the pin for the pin kinds. The result always differs from the input.
    """
    found = _dut_instance(testbench, task)
    if found is None:
        return None
    tree, node, inst = found
    rng = random.Random(seed)
    if kind in STIMULUS_KINDS:
        return _stimulus_mistake(testbench, tree, node, kind, rng)
    if kind is BreakKind.MODULE_NAME:
        wrong = "TopModule" if task.dut_module_name == "top_module" else "top_module"
        start, end = _span(node.type)
        return _replace(testbench, start, end, wrong)
    if kind is BreakKind.INSTANCE_NAME:
        wrong = "u_dut" if task.dut_instance_name == "uut" else "uut"
        start, end = _span(inst.decl.name)
        return _replace(testbench, start, end, wrong)
    if kind is BreakKind.SHORT_RUN:
        end = node.sourceRange.end.offset
        return _replace(testbench, end, end, "\n  initial #1 $finish;")
    conns = _named_connections(inst)
    if kind is BreakKind.MISSING_PIN:
        data_inputs = {p.name for p in Stimulus(task, seed).data}
        conns = [c for c in conns if c.name.valueText in data_inputs]
    if kind is BreakKind.PIN_CASE:
        conns = [c for c in conns if c.name.valueText.lower() != c.name.valueText.upper()]
    if not conns:
        return None
    conn = conns[rng.randrange(len(conns))]
    if kind is BreakKind.MISSING_PIN:
        return _without_connection(testbench, conn)
    start, end = _span(conn.name)
    return _replace(testbench, start, end, _wrong_pin(conn.name.valueText, kind))


def _wrong_pin(name: str, kind: BreakKind) -> str:
    """Pin ``name`` written wrong: in the other case (``pin_case``), else with ``_i``
    added or removed (``misspelled_pin``)."""
    if kind is BreakKind.PIN_CASE:
        return name.lower() if name != name.lower() else name.upper()
    return name[:-2] if name.endswith("_i") and len(name) > 2 else f"{name}_i"


def _without_connection(testbench: str, conn: syntax.NamedPortConnectionSyntax) -> str:
    """``testbench`` without the named connection ``conn`` and the comma that separates
    it from its neighbour."""
    start, end = _span(conn)
    data = testbench.encode("utf-8", errors="surrogateescape")
    after = data[end:].lstrip()
    if after.startswith(b","):
        end = len(data) - len(after) + 1
    else:
        before = data[:start].rstrip()
        if before.endswith(b","):
            start = len(before) - 1
    return _cut(testbench, start, end)


def repair_kinds(kinds: Sequence[BreakKind], repo_id: str, per_repo: int) -> list[BreakKind]:
    """The ``per_repo`` kinds a repo gets: a rotation of ``kinds`` that starts at a
    place fixed by the repo id (so every kind is planted about equally often)."""
    if not kinds or per_repo <= 0:
        return []
    start = sum(repo_id.encode()) % len(kinds)
    rotated = [*kinds[start:], *kinds[:start]]
    return rotated[:per_repo]
