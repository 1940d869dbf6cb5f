"""Where a virtual interface handle may point, and which writes through one land in the
DUT: a points-to analysis of the testbench's virtual interface values on pyslang's
elaboration of Verilator's view (``docs/stimulus.md``).

A write through a handle (``vif.data <= d``) has no target before the run. The syntax
reading (:mod:`llm4cov.sim.safety.stimulus_only`) judges it by the member's name: a
member the DUT drives in any instance of any interface. That rejects the common
stream testbench with one interface type on the DUT's input and output side (the
driver's ``vif.data`` is the input instance's, the monitor's the output's; a fourteenth
red team's false positive), and it missed ``this.vif.data <= d`` (a write into the
output side's DUT-driven member, read as a plain name).

Here each handle (a variable, class property, argument, function result, array of
handles; one per declaration: field-based, so two classes' ``vif`` are two handles)
gets the set of interface instances it may hold, from every way a handle's value moves
(an assignment, an initializer, a call's input and output arguments, a default
argument, a ``return``, ``$cast``, a queue's insertion). A write through a handle lands
in the DUT when one of its instances lies in the DUT or has the written member driven
by the DUT (slang's driver analysis of that instance). A value read in a form not
followed here (an interface port, a nested interface, a built-in class's output) makes
its handle "any instance"; a form that moves a handle's value into a place not followed
(a struct member, a module port of handle type, a parameterized class, whose
specializations the elaboration need not visit) makes every handle "any instance", and
the name rule above stands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyslang
from pyslang import ast

from llm4cov.sim.safety.drivers import (
    Calls,
    Elaboration,
    _Sides,
    dut_interface_members,
    visit_by_subroutine,
)

EK = ast.ExpressionKind
#: A value no rule here follows: it may be any instance.
ANY = None
Targets = frozenset[str] | None  # instance paths, or ANY

#: Array methods that return elements of their receiver (``q.pop_front()``).
_ELEMENT_METHODS = frozenset({"pop_front", "pop_back", "find", "find_first", "find_last",
                              "unique", "min", "max"})
#: Array methods that put their other arguments in their receiver.
_INSERT_METHODS = frozenset({"push_back", "push_front", "insert"})
#: Array methods after which an element may sit at another index.
_MOVING_METHODS = frozenset({"pop_front", "pop_back", "push_front", "insert", "delete",
                             "reverse", "sort", "rsort", "shuffle"})
#: Array methods that put nothing new in their receiver (they read, remove or reorder).
_KEEPING_METHODS = _ELEMENT_METHODS | frozenset({
    "size", "num", "exists", "delete", "find_index", "find_first_index", "find_last_index",
    "unique_index", "sum", "product", "and", "or", "xor", "sort", "rsort", "reverse",
    "shuffle"})


_MF = ast.MethodFlags
#: Subroutines whose body is not the code that runs: a built-in class's (``mailbox``'s
#: ``get``, whose body slang leaves empty), an imported one, a modport's view.
_OPAQUE = int(_MF.BuiltIn) | int(_MF.DPIImport) | int(_MF.InterfaceExtern) | \
    int(_MF.ModportImport) | int(_MF.ModportExport)


def _opaque(sub: Any) -> bool:
    return (sub.body is None and not int(sub.flags) & int(_MF.Pure)) or \
        bool(int(sub.flags) & _OPAQUE)


def _holds(t: Any) -> str:
    """How a type holds a virtual interface: ``"handle"`` (one, or an array, queue or
    associative array of them), ``"nested"`` (in a struct or union: not followed) or
    ``""`` (none)."""
    t = t.canonicalType
    while True:
        if t.isVirtualInterface:
            return "handle"
        if t.isUnpackedStruct or t.isUnpackedUnion:
            fields = [m for m in t if isinstance(m, ast.FieldSymbol)]
            return "nested" if any(_holds(f.type) for f in fields) else ""
        index = getattr(t, "associativeIndexType", None) if t.isAssociativeArray else None
        if index is not None and _holds(index):
            return "nested"  # handles as keys: `first(k)` hands one out
        element = getattr(t, "arrayElementType", None) if t.isUnpackedArray or t.isQueue \
            or t.isAssociativeArray or t.isDynamicallySizedArray else None
        if element is None:
            return ""
        t = element.canonicalType


@dataclass
class PointsTo:
    """The instances each handle may hold (see the module docstring); ``gave_up``: a
    value moved into a place not followed, so every handle may hold any instance."""

    elab: Elaboration
    gave_up: bool = False

    def __post_init__(self) -> None:
        self.origin = self.elab.sources.getFullyOriginalLoc
        self.flows: list[tuple[Any, Callable[[], Targets]]] = []  # (handle slot, source)
        self.held: dict[Any, Targets] = {}  # (handle key, element or None) -> instances
        #: Per handle array, the constant indices written (``db["in"] = in_if``): each
        #: is a slot of its own, read by the same constant; None: any other element.
        self.slots: dict[Any, set[Any]] = {}
        #: Handle arrays a method reorders, shifts or shrinks (``pop_front``, ``delete``,
        #: ``reverse``): an element may sit at any index, so a read is of them all.
        self.moved: set[Any] = set()
        self.instances: dict[str, Any] = {}  # path -> InstanceSymbol
        self.methods: dict[str, list[Any]] = {}  # name -> subroutines of that name

    def key(self, sym: Any) -> Any:
        loc = self.origin(sym.location)
        return (sym.name, str(sym.kind), loc.offset, loc.buffer.id)

    def ref(self, sym: Any) -> Callable[[], Targets]:
        """Every instance the handle (all of its elements) may hold."""
        k = self.key(sym)

        def whole() -> Targets:
            return _union([self.slot_ref((k, i)) for i in {None, *self.slots.get(k, ())}])()
        return whole

    def slot_ref(self, slot: Any) -> Callable[[], Targets]:
        return lambda: self.held.get(slot, frozenset())

    def slot(self, expr: Any) -> Any:
        """``(handle key, constant index)`` for a constant select of a handle array
        (``db["in"]``), else None."""
        if expr.kind != EK.ElementSelect:
            return None
        base = expr.value
        sym = base.symbol if base.kind in (EK.NamedValue, EK.HierarchicalValue) else \
            base.member if base.kind == EK.MemberAccess else None
        if not isinstance(sym, ast.VariableSymbol):
            return None
        # its value as a number or a string ("A" is 65 in an int-indexed array; `1'b1`,
        # `8'd1` and `1` are one element); a select slang cannot evaluate is no constant
        value = expr.selector.eval(ast.EvalContext(sym))
        v = value.value
        if v is None or value.hasUnknown():
            return None  # (an x index: Verilator reads it as it likes)
        if isinstance(v, pyslang.SVInt):
            return (self.key(sym), int(v.toString(pyslang.LiteralBase.Decimal, False)))
        return (self.key(sym), v) if isinstance(v, str) else None

    # values

    def value(self, expr: Any) -> Callable[[], Targets]:
        """The instances the expression may be, as a function of :attr:`held`."""
        kind = expr.kind
        if kind == EK.Conversion:
            return self.value(expr.operand)
        if kind == EK.NullLiteral:
            return lambda: frozenset()
        if kind == EK.ArbitrarySymbol:
            sym = expr.symbol
            if isinstance(sym, ast.InstanceSymbol) and sym.isInterface:
                path = sym.hierarchicalPath
                self.instances[path] = sym
                return lambda: frozenset({path})
            return lambda: ANY
        if kind in (EK.NamedValue, EK.HierarchicalValue):
            sym = expr.symbol
            if isinstance(sym, ast.VariableSymbol):  # properties and arguments too
                return self.ref(sym)
            return lambda: ANY  # an interface port, a parameter
        if kind == EK.MemberAccess:
            if isinstance(expr.member, ast.ClassPropertySymbol):
                return self.ref(expr.member)
            return lambda: ANY
        if kind in (EK.ElementSelect, EK.RangeSelect):
            if (slot := self.slot(expr)) is not None:  # its own element, or any element
                whole, key = self.value(expr.value), slot[0]

                def element() -> Targets:  # (every element once a method moved them)
                    if key in self.moved:
                        return whole()
                    return _union([self.slot_ref(slot), self.slot_ref((key, None))])()
                return element
            return self.value(expr.value)
        if kind == EK.ConditionalOp:
            return _union([self.value(expr.left), self.value(expr.right)])
        if kind in (EK.SimpleAssignmentPattern, EK.Concatenation):
            items = list(getattr(expr, "elements", None) or getattr(expr, "operands", []))
            return _union([self.value(e) for e in items])
        if kind == EK.Call:
            return self.call_value(expr)
        return lambda: ANY

    def call_value(self, call: Any) -> Callable[[], Targets]:
        if call.isSystemCall:
            args = list(call.arguments)
            if call.subroutineName in _ELEMENT_METHODS and args:
                return self.value(args[0])
            return lambda: ANY
        sub = call.subroutine

        def results() -> Targets:  # (late: every override is known by then)
            return _union([(lambda: ANY) if _opaque(s) or s.returnValVar is None
                           else self.ref(s.returnValVar) for s in self.callees(sub)
                           if not int(s.flags) & int(_MF.Pure)])()
        return results

    def callees(self, sub: Any) -> list[Any]:
        """The subroutines a call of ``sub`` may run: a virtual method's every override
        (every subroutine of its name), else itself."""
        if getattr(sub, "isVirtual", False):
            return [*self.methods.get(sub.name, []), sub]
        return [sub]

    # flows

    def target(self, expr: Any) -> Any:
        """The handle an lvalue writes, or None when it is no form followed here."""
        kind = expr.kind
        if kind in (EK.NamedValue, EK.HierarchicalValue) and \
                isinstance(expr.symbol, ast.VariableSymbol):
            return expr.symbol
        if kind == EK.MemberAccess and isinstance(expr.member, ast.ClassPropertySymbol):
            return expr.member
        if kind in (EK.ElementSelect, EK.RangeSelect):
            return self.target(expr.value)
        return None

    def flow(self, into: Any, source: Callable[[], Targets]) -> None:
        """``source`` may move into the lvalue ``into`` (an expression)."""
        if (slot := self.slot(into)) is not None:
            self.slots.setdefault(slot[0], set()).add(slot[1])
            self.flows.append((slot, source))
            return
        sym = self.target(into)
        if sym is None:
            self.gave_up = True
        else:
            self.flows.append(((self.key(sym), None), source))

    def collect(self) -> None:
        """Every flow of a handle value in the design."""
        calls: list[Any] = []

        def visit(node: Any) -> bool:
            if isinstance(node, ast.SubroutineSymbol):  # (a class's or not: more is sound)
                self.methods.setdefault(node.name, []).append(node)
            if isinstance(node, ast.GenericClassDefSymbol) or (
                    isinstance(node, ast.PortSymbol) and _holds(node.type)):
                self.gave_up = True  # specializations, port connections: not followed
            elif isinstance(node, ast.ValueSymbol) and (how := _holds(node.type)):
                if how == "nested":
                    self.gave_up = True
                init = getattr(node, "initializer", None)
                if isinstance(node, ast.FormalArgumentSymbol):
                    init = node.defaultValue
                if init is not None and isinstance(node, ast.VariableSymbol):
                    self.flows.append(((self.key(node), None), self.value(init)))
            elif isinstance(node, ast.AssignmentExpression):
                if _holds(node.left.type) and \
                        node.right.kind != EK.EmptyArgument:  # (an output argument's)
                    self.flow(node.left, self.value(node.right))
            elif isinstance(node, ast.CallExpression):
                calls.append(node)
            elif isinstance(node, ast.ReturnStatement) and node.expr is not None and \
                    _holds(node.expr.type):
                returns.append(node)
            return True

        returns: list[Any] = []
        if any(d.isError() for d in self.elab.diagnostics):
            self.gave_up = True  # an expression slang refuses is not in its AST (an
            return               # interface instance in a `?:`), Verilator may build it
        self.elab.compilation.getRoot().visit(visit)
        for call in calls:
            self.call_flows(call)
        self.return_flows(returns)

    def return_flows(self, returns: list[Any]) -> None:
        """A ``return`` moves its value into its function's result: the function is the
        subroutine whose body holds the statement."""
        if not returns:
            return
        at = {self.origin(r.sourceRange.start).offset: r for r in returns}
        found: set[int] = set()

        def visit(node: Any) -> bool:
            if isinstance(node, ast.SubroutineSymbol) and node.returnValVar is not None:
                result = node.returnValVar

                def inner(n: Any) -> bool:
                    if isinstance(n, ast.ReturnStatement):
                        offset = self.origin(n.sourceRange.start).offset
                        if offset in at:
                            found.add(offset)
                            self.flows.append(((self.key(result), None), self.value(n.expr)))
                    return True

                if node.body is not None:
                    node.body.visit(inner)
            return True

        self.elab.compilation.getRoot().visit(visit)
        if len(found) < len(at):
            self.gave_up = True

    def call_flows(self, call: Any) -> None:
        args = list(call.arguments)
        if call.isSystemCall:
            name = call.subroutineName
            held = [a for a in args if _holds(a.type) or (
                a.kind == EK.Assignment and _holds(a.left.type))]
            if not held:
                return
            if args and name in _MOVING_METHODS and (sym := self.target(args[0])) is not None:
                self.moved.add(self.key(sym))
            if name == "$cast" and len(args) == 2:
                self.flow(args[0], self.value(args[1]))
            elif name in _INSERT_METHODS and args:
                self.flow(args[0], _union([self.value(a) for a in args[1:]]))
            else:  # any other may write a handle it is given (`first(k)`): any instance
                for a in held:
                    if a is args[0] and name in _KEEPING_METHODS:
                        continue
                    into = a.left if a.kind == EK.Assignment else a
                    if self.target(into) is not None or a.kind == EK.Assignment:
                        self.flow(into, lambda: ANY)
            return
        for sub in self.callees(call.subroutine):
            formals = list(sub.arguments)
            for arg, formal in zip(args, formals, strict=False):
                if not _holds(formal.type):
                    continue
                direction = formal.direction
                if direction in (ast.ArgumentDirection.In, ast.ArgumentDirection.Ref,
                                 ast.ArgumentDirection.InOut):
                    source = arg.left if arg.kind == EK.Assignment else arg
                    self.flows.append(((self.key(formal), None), self.value(source)))
                if direction != ast.ArgumentDirection.In:
                    into = arg.left if arg.kind == EK.Assignment else arg
                    self.flow(into, (lambda: ANY) if _opaque(sub) else self.ref(formal))

    def solve(self) -> None:
        """:attr:`held` to its fixpoint (every flow's source in its handle)."""
        for _ in range(len(self.flows) + 2):
            changed = False
            for k, source in self.flows:
                old = self.held.get(k, frozenset())
                if old is ANY:
                    continue
                new = source()
                merged = ANY if new is ANY else old | new
                if merged != old:
                    self.held[k] = merged
                    changed = True
            if not changed:
                return
        self.gave_up = True


def _union(parts: list[Callable[[], Targets]]) -> Callable[[], Targets]:
    def joined() -> Targets:
        out: set[str] = set()
        for part in parts:
            got = part()
            if got is ANY:
                return ANY
            out |= got
        return frozenset(out)
    return joined


def points_to(elab: Elaboration) -> PointsTo:
    """The handles of the elaboration and what each may hold (solved)."""
    found = PointsTo(elab)
    found.collect()
    if not found.gave_up:
        found.solve()
    return found


def subroutine_calls(elab: Elaboration, pts: PointsTo | None) -> Calls:
    """Which instance subroutines calls may run (``pts``: the handles, None when the
    testbench has none): :class:`~llm4cov.sim.safety.drivers.Calls`.

    An interface's task is elaborated in every instance: the stream testbench's
    ``in_if.drive(d)`` writes the input instance's ``data``, and the output instance's
    copy of ``drive``, never called, would drive the DUT's output (a false positive):
    an interface instance's subroutine no call runs is idle. And a task in the RTL's
    text, of an instance the testbench made, runs for the testbench when it calls it
    (``out_s.drive(d)`` on the DUT's output-side interface wrote the DUT's register:
    69.05 -> 100 %, a fifteenth red team): every subroutine a call in the testbench's
    text may run, directly or through the subroutines it runs, is the testbench's. A
    call runs the instance's subroutine it names (through a port too), a call through a
    handle the one of each instance the handle may hold; through a handle that may hold
    any instance, every instance's of that name."""
    subs: dict[str, tuple[str, str, bool]] = {}  # path -> (instance, name, an interface's)
    for inst in elab.symbols():
        if isinstance(inst, ast.InstanceSymbol):
            for member in inst.body:
                if isinstance(member, ast.SubroutineSymbol):
                    subs[member.hierarchicalPath] = (inst.hierarchicalPath, member.name,
                                                     inst.isInterface)
    if not subs:
        return Calls()
    by_name: dict[str, set[str]] = {}
    for path, (_, name, _) in subs.items():
        by_name.setdefault(name, set()).add(path)
    runs: dict[str | None, set[str]] = {}  # caller subroutine (None: a process) -> callees
    from_tb: set[str] = set()

    def callees(call: Any) -> set[str]:
        sub: Any = call.subroutine
        this = call.thisClass
        if this is not None and this.type.canonicalType.isVirtualInterface:
            targets = ANY if pts is None or pts.gave_up else pts.value(this)()
            if targets is ANY:
                return by_name.get(sub.name, set())
            return {f"{t}.{sub.name}" for t in targets}
        return {sub.hierarchicalPath}

    def visit(node: Any, within: str | None) -> Any:
        if isinstance(node, ast.CallExpression) and not node.isSystemCall:
            found = callees(node)
            runs.setdefault(within, set()).update(found)
            if elab.in_tb(node.sourceRange.start):
                from_tb.update(found)
        return True

    visit_by_subroutine(elab.compilation.getRoot(), visit)
    called = set().union(*runs.values())
    reached, todo = set(from_tb), list(from_tb)
    while todo:  # what the testbench's calls run, through every call they make
        for more in runs.get(todo.pop(), set()) - reached:
            reached.add(more)
            todo.append(more)
    return Calls(idle=frozenset(p for p, (_, _, iface) in subs.items()
                                if iface and p not in called),
                 from_tb=frozenset(p for p in reached if p in subs))


def dut_subroutine_calls(elab: Elaboration, dut_hier: str) -> list[str]:
    """Reasons (``file:line: ...``) for each call in the testbench's text that runs a
    subroutine of the DUT, whatever its name's form: a ``bind``'s port connection is
    read in the DUT's scope, so ``enc(a | 8'h03)`` there is the DUT's own function,
    called with values its inputs never carry (its expression coverage: 43.89 ->
    60.56 %, an eighteenth red team); the syntax reading names only hierarchical
    calls (``dut.enc(...)``)."""
    origin = elab.sources.getFullyOriginalLoc
    found: list[tuple[int, str]] = []

    def visit(node: Any) -> bool:
        if isinstance(node, ast.CallExpression) and not node.isSystemCall and \
                elab.in_tb(node.sourceRange.start):
            path = getattr(node.subroutine, "hierarchicalPath", "") or ""
            if path.startswith(dut_hier + "."):
                loc = node.sourceRange.start
                found.append((origin(loc).offset, f"{elab.where(loc)}: the call of `{path}` "
                              "runs a subroutine of the DUT (its code counts as the DUT's)"))
        return True

    elab.compilation.getRoot().visit(visit)
    return list(dict.fromkeys(r for _, r in sorted(found)))


@dataclass(frozen=True)
class HandleWrites:
    """Writes through a virtual interface handle: ``reasons`` (``file:line: ...``) for
    each that lands in the DUT; ``cleared``: the testbench-text offsets of the lvalues
    shown to land outside it (the syntax reading's name rule is lifted there)."""

    reasons: list[str]
    cleared: frozenset[int]
    #: :func:`subroutine_calls`.
    calls: Calls = field(default_factory=Calls)


def handle_writes(elab: Elaboration, dut_hier: str) -> HandleWrites:
    """Judge every write of the testbench through a virtual interface handle (see the
    module docstring). ``dut_hier``: the measured DUT instance (``tb.dut``)."""
    side = _Sides(elab, dut_hier, elab.drivers)
    pts = points_to(elab)
    by_type = dut_interface_members(elab, dut_hier)
    origin = elab.sources.getFullyOriginalLoc
    found: list[tuple[int, str]] = []
    verdicts: dict[int, bool] = {}  # lvalue offset -> every write there lands outside
    calls = subroutine_calls(elab, pts)
    for w in elab.writes:
        if not w.tb_text and w.within not in calls.from_tb:
            continue  # an RTL subroutine's, the testbench never runs
        node, what = w.node, w.what
        for leaf in _leaves(w.target):
            through = _through_handle(leaf)
            if through is None:
                continue
            handle, names = through
            targets = ANY if pts.gave_up else pts.value(handle)()
            landing = _landing(elab, side, pts, targets, names, by_type)
            offset = origin(leaf.sourceRange.start).offset
            verdicts[offset] = verdicts.get(offset, True) and landing is None
            if landing is not None:
                loc = node.sourceRange.start
                found.append((origin(loc).offset,
                              f"{elab.where(loc)}: {what} `{_text(leaf)}` writes {landing} "
                              "through a virtual interface: it writes into the DUT"))
    return HandleWrites([r for _, r in sorted(dict.fromkeys(found))],
                        frozenset(o for o, ok in verdicts.items() if ok), calls)


def _leaves(target: Any) -> Iterator[Any]:
    """The lvalues a write target names (each operand of a concatenation or streaming
    concatenation; an output argument's actual)."""
    kind = target.kind
    if kind == EK.Concatenation:
        for op in target.operands:
            yield from _leaves(op)
    elif kind == EK.Streaming:
        for st in target.streams:
            yield from _leaves(st.operand)
    elif kind == EK.Assignment:
        yield from _leaves(target.left)
    else:
        yield target


def _through_handle(leaf: Any) -> tuple[Any, list[str]] | None:
    """``(handle expression, member path)`` when the lvalue writes through a virtual
    interface (``vif.st.q[3]`` -> ``vif``, ``["st", "q"]``), else None."""
    names: list[str] = []
    x = leaf
    while True:
        if x.kind in (EK.ElementSelect, EK.RangeSelect):
            x = x.value
        elif x.kind == EK.MemberAccess:
            names.insert(0, x.member.name)
            if x.value.type.canonicalType.isVirtualInterface:
                return x.value, names
            x = x.value
        else:
            return None


def _landing(elab: Elaboration, side: _Sides, pts: PointsTo, targets: Targets,
             names: list[str], by_type: dict[str, frozenset[str]]) -> str | None:
    """What in the DUT a write of member ``names`` through a handle holding
    ``targets`` may land on (a phrase), or None when no instance gives it to the DUT."""
    if targets is ANY:  # by name, in any interface type (Verilator may hold another)
        kinds = sorted(k for k, members in by_type.items() if names[0] in members)
        if kinds:
            return f"`{names[0]}`, a member the DUT drives in an instance of `{kinds[0]}`"
        return None
    for path in sorted(targets):
        if path == side.dut_hier or path.startswith(side.dut_hier + "."):
            return f"`{path}`, an interface inside the DUT"
        member = _member(pts.instances[path], names)
        if member is None:
            return f"`{path}.{'.'.join(names)}`, a member not followed here"
        if any(side.dut(d) for d in elab.drivers.getDrivers(member)):
            return f"`{member.hierarchicalPath}`, a member the DUT drives"
    return None


def _member(inst: Any, names: list[str]) -> Any:
    """The variable or net the member path names in an interface instance (through
    nested interfaces and clocking blocks; a struct member is its whole variable)."""
    scope: Any = inst
    for name in names:
        if isinstance(scope, ast.InstanceSymbol):
            scope = scope.body
        found = scope.find(name) if hasattr(scope, "find") else None
        if isinstance(found, ast.ClockVarSymbol):
            ref = found.initializer.getSymbolReference() if found.initializer else None
            return ref if isinstance(ref, (ast.VariableSymbol, ast.NetSymbol)) else None
        if isinstance(found, (ast.VariableSymbol, ast.NetSymbol)):
            return found
        if found is None or not isinstance(found, (ast.InstanceSymbol,
                                                   ast.ClockingBlockSymbol)):
            return None
        scope = found
    return None


def _text(expr: Any) -> str:
    syn = getattr(expr, "syntax", None)
    return str(syn).strip() if syn is not None else "?"
