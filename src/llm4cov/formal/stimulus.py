"""Witness -> stimulus: solver traces as per-cycle input phases of a testbench.

A trace is a list of steps, each the values of the DUT's top-level inputs for one clock
cycle (step 0 has the reset active, see ``closure.py``). A phase replays it: wait for the
falling clock edge, then per step assign every input and wait for the next falling
edge, so the values are stable at the rising edge as in the solver's model (one clock
edge per step; ``#10`` per step for a design without a clock). In the ``compact`` style
(the default) a phase is a table, one packed row of every driven input per step, read
by a loop (its length grows by one literal per step); in the ``vectors`` style every
step is a line of assignments. Registers the reset does
not initialise keep their simulated values, so a replay after other stimulus can
diverge from the witness; the evaluator's observation is the judge.

:func:`merge_phases` appends the phases to an existing testbench just before its final
``$finish`` (in the ``initial`` block with the most code), driving the testbench
variables the DUT instance's ports connect to (named, ``.*`` or ordered connections).
When that is impossible (an input tied to an expression, no ``$finish``), the phases go
into the built-in random testbench instead (:func:`closing_testbench`, ``directed``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pyslang import syntax

from llm4cov.policies.random_stimulus import Style, random_testbench
from llm4cov.tasks.hdl import Port, own_offset, parse_tree
from llm4cov.tasks.model import Task

K = syntax.SyntaxKind


@dataclass(frozen=True)
class Phase:
    """One trace to replay: ``steps`` (input name -> value per cycle) and a comment."""

    title: str
    steps: list[dict[str, int]]


def _literal(port: Port, value: int) -> str:
    text = f"{port.width}'h{value & ((1 << port.width) - 1):x}"
    return f"{port.type_text}'({text})" if port.cast else text


def _free_name(base: str, taken: set[str]) -> str:
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}{n}"
    taken.add(name)
    return name


def _table_phase(phase: Phase, driven: list[Port], conn: dict[str, str], wait: str,
                 taken: set[str], indent: str) -> list[str]:
    """One phase as a table of packed rows (every driven input, first port highest)."""
    width = sum(p.width for p in driven)
    table, t = _free_name("trace", taken), _free_name("t", taken)
    rows = []
    for step in phase.steps:
        row = 0
        for p in driven:
            row = (row << p.width) | (step.get(p.name, 0) & ((1 << p.width) - 1))
        rows.append(f"{width}'h{row:x}")
    lines = [f"{indent}begin",
             f"{indent}  logic [{width - 1}:0] {table} [{len(rows)}] = '{{{', '.join(rows)}}};",
             f"{indent}  {wait}",
             f"{indent}  for (int {t} = 0; {t} < {len(rows)}; {t}++) begin"]
    low = width
    for p in driven:
        low -= p.width
        bits = f"{table}[{t}][{low + p.width - 1}:{low}]"
        value = f"{p.type_text}'({bits})" if p.cast else bits
        lines.append(f"{indent}    {conn[p.name]} = {value};")
    lines += [f"{indent}    {wait}", f"{indent}  end", f"{indent}  {wait}", f"{indent}end"]
    return lines


def phase_code(
    phases: list[Phase], ports: list[Port], conn: dict[str, str], clock: str | None,
    indent: str = "    ", style: Style = "compact", taken: set[str] | None = None,
) -> str:
    """SystemVerilog statements replaying ``phases``; ``conn`` maps a DUT input port to
    the testbench variable driving it, ``clock`` is the DUT clock port (or None);
    ``taken``: identifiers of the testbench the ``compact`` style's table and loop
    variable must not shadow."""
    wait = f"@(negedge {conn[clock]});" if clock else "#10;"
    driven = [p for p in ports if p.direction == "input" and p.name != clock
              and p.name in conn and not p.unpacked]
    names = set(taken or ()) | set(conn.values())
    lines = []
    for phase in phases:
        lines.append(f"{indent}// llm4cov formal: {phase.title} ({len(phase.steps)} steps)")
        if style == "compact" and driven and phase.steps:
            lines += _table_phase(phase, driven, conn, wait, names, indent)
            continue
        lines.append(f"{indent}{wait}")
        for step in phase.steps:
            sets = " ".join(f"{conn[p.name]} = {_literal(p, step.get(p.name, 0))};"
                            for p in driven)
            lines.append(f"{indent}{sets} {wait}")
        lines.append(f"{indent}{wait}")
    return "\n".join(lines) + "\n"


def _dut_instance(testbench: str, task: Task) -> tuple[syntax.SyntaxTree, Any]:
    """The syntax tree of ``testbench`` and its instance of ``task.dut_module_name``
    (the one named ``task.dut_instance_name`` when there are several), or None; keep the
    tree while the instance is used (pyslang frees its nodes with it)."""
    tree = parse_tree(testbench, "tb.sv")
    found: list = []

    def visit(node: object) -> bool:
        if isinstance(node, syntax.HierarchyInstantiationSyntax) and \
                node.type.valueText == task.dut_module_name:
            found.extend(node.instances)
        return True

    tree.root.visit(visit)
    named = [i for i in found if i.decl is not None
             and i.decl.name.valueText == task.dut_instance_name]
    return tree, ((named or found)[0] if (named or found) else None)


def dut_connections(testbench: str, task: Task, ports: list[Port]) -> dict[str, str] | None:
    """DUT input port -> the plain testbench signal connected to it, for the instance of
    ``task.dut_module_name`` (named ``task.dut_instance_name`` when there are several);
    None when an input is connected to anything but a plain name."""
    _tree, inst = _dut_instance(testbench, task)
    if inst is None:
        return None
    conns: dict[str, str] = {}
    ordered = [c for c in inst.connections if getattr(c, "kind", None) == K.OrderedPortConnection]
    for port, c in zip(ports, ordered, strict=False):
        conns[port.name] = str(c.expr).strip()
    for c in inst.connections:
        kind = getattr(c, "kind", None)
        if kind == K.NamedPortConnection:
            name = c.name.valueText
            conns[name] = str(c.expr).strip() if c.expr is not None else name
        elif kind == K.WildcardPortConnection:
            for p in ports:
                conns.setdefault(p.name, p.name)
    inputs = [p.name for p in ports if p.direction == "input"]
    if any(not conns.get(n, "").replace("_", "a").replace("$", "a").isalnum()
           or conns[n][0].isdigit() for n in inputs):
        return None
    return conns


def _finish_offset(testbench: str) -> int | None:
    """Where the statement holding the last ``$finish`` of the largest ``initial``
    block begins (a string index), or None when there is none."""
    tree = parse_tree(testbench, "tb.sv")
    best: tuple[int, int] | None = None  # (block size, offset)

    def visit(node: object) -> bool:
        nonlocal best
        if not isinstance(node, syntax.SystemNameSyntax) or \
                node.getFirstToken().valueText != "$finish":
            return True
        stmt: syntax.SyntaxNode | None = node  # pyslang: the root's parent is None
        while stmt is not None and getattr(stmt.parent, "kind", None) != K.SequentialBlockStatement:
            stmt = stmt.parent
        if stmt is None:
            return True
        block: syntax.SyntaxNode | None = stmt.parent
        while block is not None and getattr(block, "kind", None) != K.InitialBlock:
            block = block.parent
        if block is None:
            return True
        size = block.sourceRange.end.offset - block.sourceRange.start.offset
        offset = own_offset(tree.sourceManager, stmt.getFirstToken(), testbench)
        if offset is None:  # a macro writes it: no insertion point in the text
            return True
        if best is None or (size, offset) >= best:
            best = (size, offset)
        return True

    tree.root.visit(visit)
    return best[1] if best else None


STATE_TAG = "llm4cov_state"
"""Start of each line of a state dump (:func:`dump_code`): ``llm4cov_state K WIDTH
HEX``."""


def dump_code(instance: str, signals: list[str], wait: str, indent: str = "    ") -> str:
    """Statements that wait for the next falling clock edge (``wait``), where the next
    phase would assign its first step, and print each of ``signals`` (expressions
    relative to the DUT instance ``instance``) as a line ``llm4cov_state K WIDTH HEX``
    (``$bits`` of the expression: a reader can tell a value it did not expect)."""
    lines = [f"{indent}// llm4cov formal: state of the DUT for a continuation "
             f"({len(signals)} signals)", f"{indent}{wait}"]
    lines += [f'{indent}$display("{STATE_TAG} {k} %0d %h", $bits({instance}.{expr}), '
              f'{instance}.{expr});' for k, expr in enumerate(signals)]
    return "\n".join(lines) + "\n"


def merge_phases(
    testbench: str, task: Task, ports: list[Port], clock: str | None, phases: list[Phase],
    style: Style = "compact", dump: list[str] | None = None,
) -> str | None:
    """``testbench`` with ``phases`` inserted before its final ``$finish``, or None when
    the DUT's inputs or the ``$finish`` cannot be found (see the module docstring).
    ``dump``: expressions relative to the DUT instance printed after the phases, at the
    falling clock edge where one more phase would start (:func:`dump_code`; needs a
    clock)."""
    conns = dut_connections(testbench, task, ports)
    offset = _finish_offset(testbench)
    if conns is None or offset is None or (clock is not None and clock not in conns):
        return None
    taken = set(re.findall(r"[A-Za-z_]\w*", testbench))
    code = phase_code(phases, ports, conns, clock, style=style, taken=taken) if phases else ""
    if dump is not None:
        _tree, inst = _dut_instance(testbench, task)
        if clock is None or inst is None or inst.decl is None:
            return None
        code += dump_code(inst.decl.name.valueText, dump, f"@(negedge {conns[clock]});")
    code = code.lstrip() + "    "
    return testbench[:offset] + code + testbench[offset:]


def closing_testbench(
    testbench: str | None, task: Task, ports: list[Port], clock: str | None,
    phases: list[Phase], seed: int = 0, style: Style = "compact",
) -> tuple[str, str]:
    """The testbench that replays ``phases``: ``(text, how)`` with ``how`` ``merged``
    (appended to ``testbench``) or ``directed`` (appended to the built-in random
    testbench of ``seed`` in ``style``, when ``testbench`` is None or cannot take them).

    Raises:
        ValueError: the DUT cannot be driven by the random testbench either.
    """
    if testbench is not None:
        merged = merge_phases(testbench, task, ports, clock, phases, style)
        if merged is not None:
            return merged, "merged"
    base = random_testbench(task, seed, style=style)
    merged = merge_phases(base, task, ports, clock, phases, style)
    if merged is None:
        raise ValueError("the built-in testbench cannot take the formal phases")
    return merged, "directed"
