"""Where Verilator's run of a testbench can differ from IEEE 1800 4-state simulation,
said in the observation's notes (issue 45; ``docs/fidelity.md``), and the testbench's
own verdict read from its output.

**The time-0 edge.** A 4-state variable declared without an initializer starts at X.
IEEE 1800 9.4.2 makes ``X -> 0`` a ``negedge`` and ``X -> 1`` a ``posedge``. Verilator
starts every variable two-state at 0 (``+verilator+rand+reset+0``), so a first
assignment at time 0 gives:

========================  ======================  =====================
first value at time 0      4-state (from X)        Verilator (from 0)
========================  ======================  =====================
0                          ``negedge``             no edge
1                          ``posedge``             ``posedge``
========================  ======================  =====================

The runs differ in exactly one case: a DUT input the DUT waits on with ``negedge``
(an active-low asynchronous reset, a falling-edge clock or enable) that the testbench
sets to 0 at time 0, before any delay or event control, with no earlier value. The
``posedge`` case is the same under both (0 -> 1 and X -> 1 are both posedges; 0 and
X -> 0 neither). :func:`time0_edge_notes` finds that case on the syntax of the sources
as Verilator compiles them and names the signal, the testbench line, the cause and
the fix; the run itself is unchanged (the note keeps scores comparable; see the doc).

**The testbench's verdict.** :func:`error_prints` counts the lines of the run's output
that start with ``ERROR``/``FAIL`` (any case; the testbench's own error prints), apart
from the ``$error``/assertion count the driver keeps (``tb_error_count``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from typing import Any

from pyslang import syntax

from llm4cov.tasks.hdl import parse_tree

SK = syntax.SyntaxKind

#: The note of a run that ended at simulated time 0.
TIME0_NOTE = ("the testbench finished at time 0: nothing was simulated (no clock edge, "
              "no delay reached the DUT); put the stimulus after delays or clock edges "
              "before $finish")

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_ZERO = re.compile(r"^(?:0+|'0|\d*\s*'[sS]?[bBoOdDhH]\s*[0_]+)$")
_ALWAYS = frozenset({SK.AlwaysBlock, SK.AlwaysFFBlock, SK.AlwaysLatchBlock,
                     SK.AlwaysCombBlock})
_ASSIGN = frozenset({SK.AssignmentExpression, SK.NonblockingAssignmentExpression})
#: Declared types that start at X (4-state variables).
_FOUR_STATE = frozenset({SK.LogicType, SK.RegType, SK.IntegerType, SK.TimeType,
                         SK.ImplicitType})
#: Error prints: a line of the run's output that starts with ERROR or FAIL (any case),
#: after decorations, a bracketed time (``[120] ERROR:``, ``[120ns]``) or ``TEST``
#: (``TEST FAILED``), not a zero count ("Errors: 0", "errors = 0").
_LEAD = r"^[\s*#>\-]*(?:\[[^\]%]*\][\s:]*)?(?:tests?\s+)?"
_ERROR_LINE = re.compile(_LEAD + r"(?:error|fail(?:ed|ure|s)?)\b", re.IGNORECASE)
_ZERO_COUNT = re.compile(_LEAD + r"(?:errors?|fail(?:ed|ures?|s)?)\s*(?:count)?"
                         r"\s*[:=]?\s*0\b", re.IGNORECASE)


def error_prints(output: str) -> int:
    """The lines of ``output`` that start with ``ERROR``/``Error``/``FAIL``... (any case,
    after spaces or ``*``/``#`` decorations), a zero count such as ``Errors: 0`` left
    out. Verilator's own ``%Error`` lines (``$error``, already in ``tb_error_count``)
    start with ``%`` or ``[time]`` and are not counted."""
    return sum(1 for line in output.splitlines()
               if _ERROR_LINE.match(line) and not _ZERO_COUNT.match(line))


def _children(node: object) -> Iterator[Any]:
    if isinstance(node, syntax.SyntaxNode):
        for child in node:
            if isinstance(child, syntax.SyntaxNode):
                yield child


def _walk(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(_children(n))))


def _ident(node: object) -> str | None:
    text = str(node).strip() if node is not None else ""
    return text if _IDENT.match(text) else None


def _modules(tree: syntax.SyntaxTree) -> dict[str, Any]:
    """The module declarations of the compilation unit by name (top level only)."""
    root = tree.root
    top: list[Any] = [root] if root.kind == SK.ModuleDeclaration else list(_children(root))
    return {m.header.name.valueText: m for m in top if m.kind == SK.ModuleDeclaration}


def _below(modules: dict[str, Any], top: str) -> dict[str, Any]:
    """``top`` and the modules it instantiates, transitively (by declared name)."""
    seen: dict[str, Any] = {}
    todo = [top]
    while todo:
        name = todo.pop()
        if name in seen or name not in modules:
            continue
        seen[name] = modules[name]
        todo.extend(n.type.valueText for n in _walk(modules[name])
                    if n.kind == SK.HierarchyInstantiation)
    return seen


def _ports(module: Any) -> tuple[list[str], set[str]]:
    """The module's port names in order and its input ports."""
    order: list[str] = []
    inputs: set[str] = set()
    direction = ""
    for n in _walk(module.header):
        if n.kind == SK.ImplicitAnsiPort:
            head = str(n.header).split()
            if head and head[0] in ("input", "output", "inout", "ref"):
                direction = head[0]
            name = n.declarator.name.valueText
            order.append(name)
            if direction == "input":
                inputs.add(name)
        elif n.kind == SK.ImplicitNonAnsiPort and (name := _ident(n)):
            order.append(name)
    for n in _walk(module):
        if n.kind == SK.PortDeclaration and str(n.header).split()[:1] == ["input"]:
            inputs.update(d.name.valueText for d in _children(n) if d.kind == SK.Declarator)
    return order, inputs


def _connections(instance: Any, child_order: list[str]
                 ) -> Iterator[tuple[str, str]]:
    """``(child port, connected simple name)`` of one instance."""
    conns: list[Any] = [c for c in instance.connections if isinstance(c, syntax.SyntaxNode)]
    for k, c in enumerate(conns):
        if c.kind == SK.NamedPortConnection:
            port = c.name.valueText
            name = port if c.openParen.rawText != "(" else _ident(c.expr)  # .port: implicit
            if port and name:
                yield port, name
        elif c.kind == SK.OrderedPortConnection and k < len(child_order):
            if name := _ident(c.expr):
                yield child_order[k], name
        elif c.kind == SK.WildcardPortConnection:
            yield from ((p, p) for p in child_order)


def edge_inputs(rtl_text: str, name: str = "rtl.sv") -> dict[str, dict[str, set[str]]]:
    """Per module: its input ports that an ``always`` block of the module, or of a
    module it passes the port to by name, waits on, with the edges (``posedge``,
    ``negedge``, ``edge``)."""
    return _edge_inputs(_modules(parse_tree(rtl_text, name)))


def _edge_inputs(modules: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    ports = {m: _ports(node) for m, node in modules.items()}
    edges: dict[str, dict[str, set[str]]] = {m: {} for m in modules}
    for m, node in modules.items():
        inputs = ports[m][1]
        for block in (n for n in _walk(node) if n.kind in _ALWAYS):
            for ev in (n for n in _walk(block) if n.kind == SK.SignalEventExpression):
                edge, sig = ev.edge.valueText, _ident(ev.expr)
                if edge and sig in inputs:
                    edges[m].setdefault(sig, set()).add(edge)
    for _ in range(len(modules)):  # through instances, to a fixpoint
        changed = False
        for m, node in modules.items():
            for inst in (n for n in _walk(node) if n.kind == SK.HierarchyInstantiation):
                child = inst.type.valueText
                if child not in modules or child == m:
                    continue
                for h in (n for n in _children(inst) if n.kind == SK.HierarchicalInstance):
                    for port, sig in _connections(h, ports[child][0]):
                        got = edges[child].get(port, set())
                        if sig in ports[m][1] and not got <= edges[m].get(sig, set()):
                            edges[m].setdefault(sig, set()).update(got)
                            changed = True
        if not changed:
            break
    return edges


def _time0_assignments(stmt: Any) -> Generator[tuple[str, str, int], None, bool]:
    """``(name, value, offset)`` of the assignments an initial block's statement makes
    at time 0, in order, until the first statement that may wait (or is not a plain
    assignment or a block of them)."""
    if stmt.kind == SK.SequentialBlockStatement:
        for item in _children(stmt):
            if item.kind in (SK.NamedBlockClause,):
                continue
            if item.kind == SK.DataDeclaration:
                continue
            done = yield from _time0_assignments(item)
            if done:
                return True
        return False
    if stmt.kind == SK.ExpressionStatement and stmt.expr.kind in _ASSIGN:
        target = _ident(stmt.expr.left)
        if target is not None:
            yield target, str(stmt.expr.right).strip(), stmt.getFirstToken().location.offset
        return False
    return True  # a delay, an event control, a call, a branch: may leave time 0


def time0_edge_notes(rtl_text: str, tb_text: str, dut_module: str, tb_top: str,
                     dut_instance: str, where: Callable[[int], str],
                     tb_name: str = "tb.sv") -> list[str]:
    """A note per DUT input that waits on ``negedge`` and that the testbench's 4-state
    variable connected to it, declared without an initializer, gets 0 at time 0 in an
    ``initial`` block before anything else sets it (the one case where Verilator's
    two-state start removes an edge a 4-state simulator gives; module docstring).
    ``where(offset)``: ``file:line`` of an offset in ``tb_text``. Only a DUT instance
    directly in the testbench's top is looked at."""
    if "negedge" not in rtl_text:
        return []
    rtl = _modules(parse_tree(rtl_text, "rtl.sv"))
    edges = _edge_inputs(_below(rtl, dut_module)).get(dut_module, {})
    if not any("negedge" in e for e in edges.values()):
        return []
    top = _modules(parse_tree(tb_text, tb_name)).get(tb_top)
    dut = rtl.get(dut_module)
    if top is None or dut is None:
        return []
    order = _ports(dut)[0]
    wired: dict[str, str] = {}  # testbench signal -> DUT port
    for inst in (n for n in _children(top) if n.kind == SK.HierarchyInstantiation
                 and n.type.valueText == dut_module):
        for h in (n for n in _children(inst) if n.kind == SK.HierarchicalInstance):
            if h.decl is not None and h.decl.name.valueText == dut_instance:
                for port, sig in _connections(h, order):
                    if "negedge" in edges.get(port, set()):
                        wired[sig] = port
    if not wired:
        return []
    bare: set[str] = set()  # 4-state variables declared without an initializer
    for decl in (n for n in _children(top) if n.kind == SK.DataDeclaration):
        if decl.type.kind not in _FOUR_STATE:
            continue
        declarators: list[Any] = [n for n in decl.declarators
                                  if isinstance(n, syntax.SyntaxNode)]
        for d in (n for n in declarators if n.kind == SK.Declarator):
            if d.name.valueText in wired and d.initializer is None:
                bare.add(d.name.valueText)
    firsts: dict[str, list[tuple[str, int]]] = {}
    for block in (n for n in _children(top) if n.kind == SK.InitialBlock):
        seen: set[str] = set()
        for sig, value, offset in _time0_assignments(block.statement):
            if sig in bare and sig not in seen:
                seen.add(sig)
                firsts.setdefault(sig, []).append((value, offset))
    notes = []
    for sig, sets in firsts.items():
        if not all(_ZERO.match(v) for v, _ in sets):
            continue  # another value at time 0 (an order IEEE 1800 leaves open)
        port = wired[sig]
        notes.append(
            f"`{sig}` (the DUT's input `{port}`, which the DUT waits on with `negedge`) "
            f"is declared without an initial value and first set to 0 at time 0 "
            f"({where(sets[0][1])}): under IEEE 1800 4-state simulation it starts at X "
            f"and X -> 0 is a negedge, so the DUT sees that edge (an asynchronous reset "
            f"is applied); Verilator starts two-state at 0, so there is no edge and the "
            f"DUT never sees it. Drive it after time 0, or start it at the inactive "
            f"level, e.g. `{sig} = 1; #1 {sig} = 0;`")
    return notes
