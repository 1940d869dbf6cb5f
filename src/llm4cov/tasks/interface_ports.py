"""A DUT's interface ports as signals a testbench can drive and read (IEEE 1800 25).

A port of an interface type (``bus_if.slave in``) is no signal: the testbench
instantiates the interface (``bus_if in_if (.clk(clk));``), connects it
(``.in(in_if)``), and drives the members the DUT reads. Here each member becomes a
:class:`~llm4cov.tasks.hdl.Port` of its own, named ``<port>_<member>`` (``in_data``,
``in_valid``, ``in_ready``: the names a flat design would have, so the stimulus's
handshake and bus rules read them as they read flat ports), with ``via`` the member's
name in the testbench's instance (``in_if.data``). The testbench joins the two with a
continuous assignment, one way per direction.

A member's direction is the DUT's: its modport's (``input`` the DUT reads, ``output``
it drives); without a modport (a generic or plain interface port), a member is the
DUT's output when anything drives it in the elaborated design (the DUT, or the
interface's own logic), else an input. The interface's own ports (``input logic clk``)
connect to the DUT's port of the same name, else to a new input ``<port>_<name>``.
The interface is instantiated with the parameter values the DUT sees as a top (its
defaults).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyslang import analysis, ast

_DIRECTIONS = {"In": "input", "Out": "output", "InOut": "inout", "Ref": "ref"}


@dataclass(frozen=True)
class InterfacePort:
    """One DUT interface port, flattened (see the module docstring)."""

    name: str
    """The DUT's port (``in``)."""
    interface: str
    """The interface's definition (``bus_if``)."""
    instance: str
    """The testbench's instance of it (``in_if``)."""
    parameters: tuple[tuple[str, str], ...]
    """The interface's parameter values the DUT sees (``(("W", "8"),)``)."""
    connections: tuple[tuple[str, str], ...]
    """The interface's own ports and the testbench signal each takes (``(("clk",
    "clk"),)``)."""

    def instantiation(self) -> str:
        """The testbench's instance of the interface."""
        params = ", ".join(f".{k}({v})" for k, v in self.parameters)
        conns = ", ".join(f".{k}({v})" for k, v in self.connections)
        return f"{self.interface}{f' #({params})' if params else ''} {self.instance}({conns});"


def interface_ports(compilation: Any, top: Any, port_of: Any, taken: set[str]
                    ) -> tuple[list[InterfacePort], list[Any]]:
    """The interface ports of the top instance ``top`` (of ``compilation``) and their
    members as ports (``port_of``: makes one, given the member's type, its name, its
    direction and its ``via``); ``taken``: the names already used (the DUT's other
    ports), extended here.

    Raises:
        ValueError: a port this reading does not flatten (an array of interfaces, a
            member that is an ``inout``, a nested interface or a clocking block).
    """
    if not any(p.kind == ast.SymbolKind.InterfacePort for p in top.body.portList):
        return [], []
    compilation.getAllDiagnostics()  # elaborated, as the analysis needs
    manager = analysis.AnalysisManager()
    manager.analyze(compilation)
    found: list[InterfacePort] = []
    members: list[Any] = []
    real = {p.name for p in top.body.portList if p.kind == ast.SymbolKind.Port}
    for p in top.body.portList:
        if p.kind != ast.SymbolKind.InterfacePort:
            continue
        conn = p.connection
        inst, modport = conn if isinstance(conn, tuple) else (conn, None)
        if not isinstance(inst, ast.InstanceSymbol):
            raise ValueError(f"port {p.name!r} is an array of interfaces or a generic "
                             "interface port (no interface to instantiate)")
        inside = _written(inst)
        instance = _fresh(f"{p.name}_if", taken)
        own = []
        for q in inst.body.portList:
            if q.kind != ast.SymbolKind.Port or _DIRECTIONS.get(q.direction.name) != "input":
                raise ValueError(f"interface {inst.definition.name!r} has a port {q.name!r} "
                                 "that is no input")
            signal = q.name if q.name in real else _fresh(f"{p.name}_{q.name}", taken)
            own.append((q.name, signal))
            if signal not in real:
                members.append(port_of(q.type, signal, "input", ""))
        listed: list[tuple[str, str, Any]]
        if modport is not None:
            listed = [(m.name, _DIRECTIONS.get(m.direction.name, ""), m)
                      for m in modport if isinstance(m, ast.ModportPortSymbol)]
            if any(isinstance(m, ast.ModportClockingSymbol) for m in modport):
                raise ValueError(f"modport {modport.name!r} of port {p.name!r} holds a "
                                 "clocking block")
        else:
            listed = [(m.name, "output" if list(manager.getDrivers(m)) else "input", m)
                      for m in inst.body if isinstance(m, (ast.VariableSymbol, ast.NetSymbol))
                      and m.name not in dict(own)]  # (the DUT's drivers; the interface's: below)
        for name, direction, sym in listed:
            if direction not in ("input", "output"):
                raise ValueError(f"member {name!r} of interface port {p.name!r} is "
                                 f"{direction or 'no signal'}")
            if direction == "input" and name in inside:
                direction = "output"  # the interface's own logic drives it
            members.append(port_of(sym.type, _fresh(f"{p.name}_{name}", taken), direction,
                                   f"{instance}.{name}"))
        params = tuple((q.name, str(q.value)) for q in inst.body.parameters
                       if not q.isLocalParam and isinstance(q, ast.ParameterSymbol))
        found.append(InterfacePort(p.name, inst.definition.name, instance, params,
                                   tuple(own)))
    return found, members


def _written(inst: Any) -> set[str]:
    """The names the interface's own code writes (an ``assign``, an ``always`` block, an
    initial value; not its tasks and functions, which run only where called): slang's
    driver analysis does not visit the interface instance of a top's port."""
    found: set[str] = set()

    def visit(node: Any) -> Any:
        if isinstance(node, ast.SubroutineSymbol):
            return ast.VisitAction.Skip
        if isinstance(node, ast.AssignmentExpression):
            sym = node.left.getSymbolReference()
            if sym is not None:
                found.add(sym.name)
        elif isinstance(node, ast.VariableSymbol) and node.initializer is not None:
            found.add(node.name)
        return True

    inst.body.visit(visit)
    return found


def _fresh(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ... when it is taken; added to ``taken``."""
    out, k = name, 2
    while out in taken:
        out, k = f"{name}_{k}", k + 1
    taken.add(out)
    return out
