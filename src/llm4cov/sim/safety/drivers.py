"""The stimulus-only rule read a second way: on pyslang's elaboration of Verilator's view
(its RTL part and its testbench part, one compilation unit, the testbench's top as the
only top) and slang's driver analysis (``pyslang.analysis.AnalysisManager``), not on
the testbench's syntax (``docs/stimulus.md``; the syntactic reading is
:mod:`llm4cov.sim.safety.stimulus_only`).

The syntax names a write by its form (an assignment, a port, a task argument); every new
form was a new way around it: a clocking block's output drive, a variable passed to a
testbench module's ``ref`` or second ``output`` port, an interface member the DUT drives
through a modport, a package variable the DUT reads (a fifth red team, 72.64 -> 95.83 %
and 86.07 -> 99.29 %). The elaboration knows every driver of every variable and net,
whatever its form. A driver is the **DUT's** when the scope it lies in is the measured
DUT instance or below it (its RTL code, an output port of it collapsed with a
testbench variable); it is **foreign** when it lies outside the DUT and in the
testbench's text or in an instance (a testbench module, or an RTL module the testbench
instantiates beside the DUT). A testbench is ``rejected`` when

- a **variable the DUT drives** also has a foreign driver on a bit the DUT drives
  (one connected to a DUT output by a part select may have its other bits written,
  IEEE 1800 6.5; slang's driver ranges tell them apart): the testbench (or a second
  register it instantiates) writes the DUT's own signal (IEEE 1800 6.5: Verilator
  merges the drivers). So has a **net** a DUT output port drives: Verilator merges it
  with the DUT's signal and the testbench's driver wins, whatever its strength (an
  ``assign`` on the output net the DUT's checker reads: 44.14 -> 74.66 %; a testbench
  module's output port on it: 50.35 -> 76.04 %). Only a net the DUT drives through an
  ``inout`` port (a bidirectional bus) may have a foreign continuous driver, no other
  (a clocking block's drive of it: 51.04 -> 95.14 %);
- a **variable of the DUT** (in its subtree, or in an RTL package or compilation unit)
  has a foreign driver;
- the measured name (``dut_hier``) is **not an instance of the DUT module** in the
  elaboration, or is nowhere in it (a generate block of that name holding RTL instances
  of the testbench's choice: 76.97 -> 100 %; a testbench that instantiates itself in a
  dead branch was never elaborated: 51.04 -> 90.28 %);
- the elaboration of the testbench's text stopped at one of pyslang's limits (instance
  depth, generate steps, constant evaluation), where Verilator goes on: the code past it
  is not checked (a ``ref`` chain 130 modules deep wrote the DUT's
  variable at the bottom).

Not drivers: a declaration's initial value of zero or all ``x``/``z`` (the value the
run starts every variable at), and a clocking block's ``output`` that nothing drives
through it. A driver is placed by its source buffer (the RTL part's or the testbench
part's; a macro expansion's, in the file that expanded it). Costs one elaboration and
one analysis per testbench.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyslang
from pyslang import analysis, ast, syntax

from llm4cov.sim.safety.precheck import code_name
from llm4cov.sim.safety.subroutines import IN_PLACE_METHODS, INDEX_METHODS, OUTPUT_ARGUMENTS
from llm4cov.tasks.hdl import VIRTUAL_ROOT, bounded_symbols, isolated_source_manager, parse_unit

#: The name of the RTL part's buffer in the compilation.
RTL_PART = "llm4cov_rtl_part.sv"
#: Diagnostics after which part of the testbench's design is not elaborated, where
#: Verilator goes on (its limits are others). A name neither resolves is left to the
#: build: pyslang's ``UndeclaredIdentifier`` agrees with Verilator's error (measured,
#: ``precheck.SURE_CODES``), now that both read one compilation unit.
UNCHECKED_CODES = frozenset({
    "MaxInstanceDepthExceeded", "MaxGenerateStepsExceeded", "MaxInstanceArrayExceeded",
    "ConstEvalExceededMaxSteps", "ConstEvalExceededMaxCallDepth", "ConstEvalExceededMaxSize",
    "InfinitelyRecursiveHierarchy",
})


@dataclass(frozen=True)
class Calls:
    """Which instance subroutines calls may run
    (:func:`~llm4cov.sim.safety.handles.subroutine_calls`), by hierarchical path:
    ``idle``, an interface instance's no call runs (its drivers are none); ``from_tb``,
    those a call in the testbench's text may run, directly or through the subroutines
    they call (their drivers are the testbench's, whatever text they lie in)."""

    idle: frozenset[str] = frozenset()
    from_tb: frozenset[str] = frozenset()


@dataclass
class Elaboration:
    """One compilation of the RTL part and the testbench part of Verilator's view."""

    compilation: Any  # pyslang.ast.Compilation, elaborated
    sources: pyslang.SourceManager
    tb_buffer: Any  # the testbench part's pyslang BufferID
    diagnostics: list[Any]  # every diagnostic of the elaboration
    #: Every symbol of the elaborated design, packages included, in visit order.
    all_symbols: list[Any]

    @classmethod
    def of(cls, rtl_text: str, tb_text: str, tb_name: str, top: str | None = None,
           overrides: Mapping[str, str] | None = None) -> Elaboration:
        """Elaborate ``rtl_text`` and ``tb_text`` as one compilation unit, with ``top``
        as the only top (None: pyslang's choice) and the top's parameter ``overrides``
        (the build's ``-G``s), no file ever opened.

        Raises:
            ParseLimitError: pyslang cannot parse the texts (nesting too deep).
            ElaborationLimitError: the design has too many symbols to elaborate here
                (:func:`~llm4cov.tasks.hdl.bounded_symbols`, before it is all made).
        """
        sm = isolated_source_manager()
        options = ast.CompilationOptions()
        if top is not None:
            options.topModules = {top}
        if overrides:
            options.paramOverrides = [f"{k}={v}" for k, v in overrides.items()]
        tree, (_, tb_buffer) = parse_unit([(RTL_PART, rtl_text), (tb_name, tb_text)], sm,
                                          [options])
        comp = ast.Compilation(pyslang.Bag([options]))
        comp.addSyntaxTree(tree)
        symbols = bounded_symbols(comp)  # before the whole design is made
        return cls(comp, sm, tb_buffer, list(comp.getAllDiagnostics()), symbols)

    def in_tb(self, loc: Any) -> bool:
        """Whether the location lies in the testbench part (a macro expansion's, in
        the file that expanded it)."""
        return self.sources.getFullyOriginalLoc(loc).buffer == self.tb_buffer

    def where(self, loc: Any) -> str:
        """``file:line`` of a location (the view's `` `line`` markers applied)."""
        loc = self.sources.getFullyOriginalLoc(loc)
        # a buffer's name is its virtual path, as pyslang writes it (maybe relative)
        name = self.sources.getFileName(loc).split(VIRTUAL_ROOT.strip("/") + "/")[-1]
        return f"{name}:{self.sources.getLineNumber(loc)}"

    def symbols(self) -> Iterator[Any]:
        """:attr:`all_symbols`, in order."""
        return iter(self.all_symbols)

    @functools.cached_property
    def read_only_refs(self) -> frozenset[int]:
        """Source offsets of the actual arguments the testbench binds to a ``ref`` or
        ``inout`` formal that its subroutine never writes: slang lists each as a driver
        of the actual (``wait_high(wrap)``, a task that only waits on ``wrap``)."""
        origin = self.sources.getFullyOriginalLoc
        found: set[int] = set()

        def visit(node: Any) -> bool:
            if isinstance(node, ast.CallExpression) and not node.isSystemCall and \
                    self.in_tb(node.sourceRange.start):
                formals = list(getattr(node.subroutine, "arguments", None) or [])
                for arg, formal in zip(node.arguments, formals, strict=False):
                    if formal.direction in (ast.ArgumentDirection.Ref,
                                            ast.ArgumentDirection.InOut) and \
                            not _writes(formal, self.written_formals, node.subroutine):
                        found.add(origin(arg.sourceRange.start).offset)
            return True

        self.compilation.getRoot().visit(visit)
        return frozenset(found)

    @functools.cached_property
    def written_formals(self) -> frozenset[Any]:
        """The ``ref``/``inout`` formals (:func:`formal_key`) whose subroutine writes
        them (:func:`written_formals`)."""
        return written_formals(self.compilation.getRoot())

    @functools.cached_property
    def writes(self) -> list[Write]:
        """:func:`tb_writes` of this elaboration (walked once)."""
        return tb_writes(self)

    @functools.cached_property
    def packages(self) -> frozenset[str]:
        """The names of the compilation's packages."""
        return frozenset(p.name for p in self.compilation.getPackages())

    @functools.cached_property
    def drivers(self) -> Any:
        """slang's driver analysis of the compilation (``AnalysisManager``, run once)."""
        manager = analysis.AnalysisManager()
        manager.analyze(self.compilation)
        return manager

    def unelaborated(self) -> list[str]:
        """``file:line: message`` of every other error pyslang reports in the testbench's
        text (an instance of a module it does not know aside: a data model Verilator
        finds on its search path): slang leaves that code out of its AST (a statement
        with a real argument to ``$clog2``), so no check here sees what it writes, and
        Verilator may build it (a fifteenth red team: 53.57 -> 75.00 %)."""
        engine = pyslang.DiagnosticEngine(self.sources)
        return [f"{self.where(d.location)}: {engine.formatMessage(d)}"
                for d in self.diagnostics
                if d.isError() and self.in_tb(d.location)
                and code_name(d.code) not in UNCHECKED_CODES | {"UnknownModule"}]

    def unchecked(self) -> list[str]:
        """``file:line: message`` of every :data:`UNCHECKED_CODES` error in the
        testbench's text."""
        engine = pyslang.DiagnosticEngine(self.sources)
        return [f"{self.where(d.location)}: {engine.formatMessage(d)}"
                for d in self.diagnostics
                if d.isError() and code_name(d.code) in UNCHECKED_CODES
                and self.in_tb(d.location)]


def driver_reasons(elab: Elaboration, tb_name: str, dut_module: str, dut_hier: str,
                   calls: Calls = Calls()) -> list[str]:
    """Reasons (``file:line: ...``, in source order, one per written variable) the
    testbench's coverage is not its stimulus's own, on the elaboration of the view (see
    the module docstring); empty when none. ``dut_hier``: where the DUT instance is
    measured (``tb.dut``); ``calls``: the subroutines no call runs, whose drivers are
    none, and those the testbench runs, whose drivers are its own."""
    symbols = list(elab.symbols())
    if unchecked := elab.unchecked():
        return [f"{where}; the design past it is not elaborated, so what the testbench "
                "writes there cannot be checked" for where in unchecked[:5]]
    at = [s for s in symbols if getattr(s, "hierarchicalPath", None) == dut_hier
          and not isinstance(s, ast.ValueSymbol)]
    if not any(isinstance(s, ast.InstanceSymbol) and s.definition.name == dut_module
               for s in at):
        what = _kind(at[0]) if at else "nothing in the elaborated design"
        return [f"{tb_name}: `{dut_hier}`, where the DUT is measured, is not an instance of "
                f"`{dut_module}` but {what}: its coverage would not be the DUT's"]
    manager = elab.drivers
    side = _Sides(elab, dut_hier, manager, calls.from_tb)
    found: list[tuple[int, str]] = []
    origin = elab.sources.getFullyOriginalLoc
    for sym in symbols:
        if not isinstance(sym, (ast.VariableSymbol, ast.NetSymbol)) or \
                isinstance(sym, ast.ClockVarSymbol):
            continue
        drivers = list(manager.getDrivers(sym))
        owned = side.owned(sym)
        foreign = [d for d in drivers
                   if (side.foreign(d, sym) or (owned and _wired(d, elab)))
                   and getattr(d.containingSymbol, "hierarchicalPath", None) not in calls.idle]
        if isinstance(sym, ast.NetSymbol) and not owned and not any(
                side.dut(d) and int(d.flags) & int(analysis.DriverFlags.OutputPort)
                for d in drivers):  # the DUT's side is an inout: a bus both drive
            foreign = [d for d in foreign if d.kind != analysis.DriverKind.Continuous
                       or int(d.flags) & int(analysis.DriverFlags.ClockVar)]
        if not owned:  # only the bits the DUT drives (IEEE 1800 6.5: per longest static prefix)
            bits = [d.bounds for d in drivers if side.dut(d)]
            foreign = [d for d in foreign if any(_overlap(d.bounds, b) for b in bits)]
        if foreign:  # a ref actual its subroutine only reads is no write (walked if needed)
            foreign = [d for d in foreign
                       if origin(d.sourceRange.start).offset not in elab.read_only_refs]
        if not foreign:
            continue
        noun = "net" if isinstance(sym, ast.NetSymbol) else "variable"
        if owned:
            what = f"a {noun} of the DUT"
        elif any(side.dut(d) for d in drivers):
            what = f"a {noun} the DUT drives"
        else:
            continue
        loc = foreign[0].sourceRange.start
        found.append((elab.sources.getFullyOriginalLoc(loc).offset,
                      f"{elab.where(loc)}: the testbench drives `{sym.hierarchicalPath}`, "
                      f"{what} ({_how(foreign[0])}): it writes into the DUT"))
    return [reason for _, reason in sorted(found)]


def unrecorded_writes(elab: Elaboration, dut_hier: str, calls: Calls = Calls()) -> list[str]:
    """Reasons (``file:line: ...``, in source order) for the testbench's writes that
    slang's driver analysis does not list, each judged by its whole variable: a
    ``force``/``release``/procedural ``assign``/``deassign``, an assignment in a
    concurrent assertion's or cover's action block, a system task's output argument
    (``$random(seed)``, ``$sscanf``, ...: :data:`~llm4cov.sim.safety.subroutines.OUTPUT_ARGUMENTS`)
    and a subroutine's ``output``/``inout``/``ref`` argument, found on the elaborated
    AST whatever the name's form (a ``$unit`` or package variable, an implicit net, a
    full-width select: a twelfth red team, 48.33 -> 86.67 % and 65.17 -> 99.64 %).
    Rejected when the variable is the DUT's or a DUT driver drives any of its bits.
    ``calls.idle``: the subroutines no call runs (an interface instance's task the
    testbench calls on another instance only), whose writes are none; a write in an
    RTL subroutine counts when the testbench runs it (``calls.from_tb``: slang's
    analysis lists no driver for an interface task called through a handle)."""
    manager = elab.drivers
    side = _Sides(elab, dut_hier, manager)
    origin = elab.sources.getFullyOriginalLoc
    found: list[tuple[int, str]] = []

    def judge(node: Any, target: Any, what: str) -> None:
        for sym in _lvalue_symbols(target):
            drivers = list(manager.getDrivers(sym))
            start = origin(target.sourceRange.start).offset
            end = origin(target.sourceRange.end).offset
            if any(start <= origin(d.sourceRange.start).offset <= end for d in drivers):
                continue  # listed: driver_reasons judged it by its bits
            if side.owned(sym) or any(side.dut(d) for d in drivers):
                loc = node.sourceRange.start
                found.append((origin(loc).offset,
                              f"{elab.where(loc)}: {what} `{sym.hierarchicalPath}` writes into "
                              "the DUT (a variable of the DUT, or one a DUT output drives)"))

    for w in elab.writes:
        if (w.within not in calls.idle) if w.tb_text else (w.within in calls.from_tb):
            judge(w.node, w.target, w.what)
    return list(dict.fromkeys(reason for _, reason in sorted(found)))


@dataclass(frozen=True)
class Write:
    """One write in the testbench's code: the construct, its lvalue, what it is (for a
    reason's words) and the hierarchical path of the subroutine it lies in (None: a
    process, a declaration)."""

    node: Any
    target: Any
    what: str
    within: str | None
    #: In the testbench's text (else in an RTL subroutine: a write only when the
    #: testbench runs it, :attr:`Calls.from_tb`).
    tb_text: bool = True


def tb_writes(elab: Elaboration) -> list[Write]:
    """Every write in the testbench's code, in visit order: a ``force``/``release``/
    procedural ``assign``/``deassign``, an assignment (not a force's own), an increment,
    a call's written arguments (see :func:`unrecorded_writes`), a system timing check's
    notifier and delayed signals (IEEE 1800 31.3.1 and 31.9: the simulator writes them;
    the pinned Verilator builds ``$setuphold``'s delayed signals as continuous
    assignments, a twenty-fifth red team: a DUT output's net, 40.27 -> 45.06 %; slang's
    driver analysis lists none of them); and those in the
    RTL's subroutines (``tb_text`` False: the testbench may run them). The code of an
    RTL module the testbench includes is the RTL's (Verilator keeps the RTL's
    declaration)."""
    origin = elab.sources.getFullyOriginalLoc
    out: list[Write] = []
    within: list[str | None] = [None]
    forces: set[int] = set()  # assignments of a force/assign, judged as such
    rtl_names = {d.name for d in elab.compilation.getDefinitions()
                 if not elab.in_tb(d.location)}

    def tb_code(node: Any) -> bool:
        """In the testbench's text, and not in a copy of an RTL module it includes
        (`` `include "counter.sv"``: Verilator keeps the RTL's declaration)."""
        if not elab.in_tb(node.sourceRange.start):
            return False
        syn = getattr(node, "syntax", None)
        while syn is not None and syn.kind not in _UNITS:
            syn = syn.parent
        return syn is None or syn.header.name.valueText not in rtl_names

    def add(node: Any, target: Any, what: str) -> None:
        out.append(Write(node, target, what, within[0], mine[0]))

    mine = [True]  # the node being judged lies in the testbench's code

    def ours(node: Any) -> bool:
        mine[0] = tb_code(node)
        return mine[0] or within[0] is not None

    def visit(node: Any, sub: str | None) -> Any:
        within[0] = sub
        if isinstance(node, ast.ProceduralAssignStatement):
            if ours(node):
                forces.add(origin(node.assignment.sourceRange.start).offset)
                add(node, getattr(node.assignment, "left", node.assignment),
                    "the `force` of" if node.isForce else "the procedural `assign` of")
        elif isinstance(node, ast.AssignmentExpression):
            if origin(node.sourceRange.start).offset not in forces and ours(node):
                add(node, node.left, "the assignment to")
        elif isinstance(node, ast.UnaryExpression) and node.op in _STEPS:
            if ours(node):
                add(node, node.operand, "the increment of")
        elif isinstance(node, ast.ProceduralDeassignStatement):
            if ours(node):
                add(node, node.lvalue, "the `release`/`deassign` of")
        elif isinstance(node, ast.CallExpression) and ours(node):
            for arg, what in _written_arguments(node, elab.written_formals):
                add(node, arg, what)
        elif isinstance(node, ast.SystemTimingCheckSymbol):
            for arg in node.arguments:  # a notifier, a delayed signal: bound as assignments
                if isinstance(arg.expr, ast.AssignmentExpression) and ours(arg.expr.left):
                    add(arg.expr.left, arg.expr.left,
                        f"the `${node.timingCheckKind.name.lower()}` timing check's output")
        return True

    visit_by_subroutine(elab.compilation.getRoot(), visit)
    return out


def visit_by_subroutine(root: Any, on_node: Callable[[Any, str | None], Any]) -> None:
    """Visit every node below ``root`` (a pyslang symbol) in pyslang's order, calling
    ``on_node(node, within)``: ``within`` is the hierarchical path of the innermost
    subroutine whose declaration holds the node (None: a process, a declaration). As in
    pyslang's ``visit``, ``on_node`` returns True to go on into the node's children or
    ``ast.VisitAction.Skip`` not to."""
    within: list[str | None] = [None]

    def visit(node: Any) -> Any:
        if isinstance(node, ast.SubroutineSymbol) and within[0] != node.hierarchicalPath:
            outer, within[0] = within[0], node.hierarchicalPath
            node.visit(visit)  # (entered again with its path set: its body)
            within[0] = outer
            return ast.VisitAction.Skip
        return on_node(node, within[0])

    root.visit(visit)


def _written_arguments(call: Any, written: frozenset[Any]) -> list[tuple[Any, str]]:
    """The arguments a call writes: a system task's output arguments, a subroutine's
    ``output`` ones and the ``inout``/``ref`` ones it writes (``written``:
    :func:`written_formals`)."""
    args = list(call.arguments)
    if call.isSystemCall:
        name = call.subroutineName
        if name in IN_PLACE_METHODS and args:  # the receiver, reordered in place
            return [(args[0], f"the in-place `{name}` of")]
        if name in INDEX_METHODS and len(args) > 1:  # `aa.first(k)` writes k (a
            return [(args[1], f"the `{name}` index of")]  # thirty-third red team)
        if name not in OUTPUT_ARGUMENTS:
            return []
        first, last = OUTPUT_ARGUMENTS[name]
        return [(a, f"the {name} output") for a in args[first:None if last is None else last + 1]]
    sub = call.subroutine
    formals = list(getattr(sub, "arguments", None) or [])
    return [(a, f"the call of `{sub.name}` ({f.direction.name.lower()} argument `{f.name}`) "
                "with") for a, f in zip(args, formals, strict=False) if _writes(f, written, sub)]


def _writes(formal: Any, written: frozenset[Any], sub: Any) -> bool:
    """Whether a subroutine writes its formal argument: an ``output`` always; a ``ref``
    (not ``const ref``) or ``inout`` when its body writes it (``task wait_high(ref
    logic sig)`` only reads the signal it waits on; ``written``:
    :func:`written_formals`), a built-in's or another body-less subroutine's always
    (a ``mailbox``'s ``peek``/``get``, an associative array's ``first``). ``sub``: the
    formal's subroutine (the call's)."""
    if formal.direction == ast.ArgumentDirection.Out:
        return True
    if formal.direction not in (ast.ArgumentDirection.InOut, ast.ArgumentDirection.Ref) or \
            int(formal.flags) & int(ast.VariableFlags.Const):
        return False
    if isinstance(sub, ast.SubroutineSymbol) and (sub.body is None or int(sub.flags) & int(
            ast.MethodFlags.BuiltIn | ast.MethodFlags.DPIImport)):
        return True
    return formal_key(formal) in written


def formal_key(formal: Any) -> tuple:
    """A formal argument's identity across pyslang's wrappers (its name and place)."""
    return (formal.name, formal.location.offset, formal.location.buffer.id)


def written_formals(root: Any) -> frozenset[Any]:
    """The ``ref``/``inout`` formals (:func:`formal_key`) of the design's subroutines
    that their body writes, by any write form (an assignment, an increment, a
    ``force``, a system task's output, an in-place method) or by passing it on to a
    formal that is written (to a fixed point). slang's driver analysis lists no driver
    of an automatic subroutine's formal (a twenty-eighth red team: ``task automatic
    set_flag(ref logic x); x = 1;`` on a variable a DUT output drives, 70.42 ->
    82.50 %), so the AST is read instead."""
    direct: set[Any] = set()
    passes: list[tuple[Any, Any]] = []  # (callee formal, caller formal it is bound to)
    methods: dict[str, list[Any]] = {}  # subroutines by name

    def mark(target: Any, into: set[Any]) -> None:
        into.update(formal_key(s) for s in _lvalue_symbols(target)
                    if isinstance(s, ast.FormalArgumentSymbol))

    def visit(node: Any) -> bool:
        if isinstance(node, ast.SubroutineSymbol):
            methods.setdefault(node.name, []).append(node)
        if isinstance(node, ast.AssignmentExpression):
            mark(node.left, direct)
        elif isinstance(node, ast.UnaryExpression) and node.op in _STEPS:
            mark(node.operand, direct)
        elif isinstance(node, ast.ProceduralAssignStatement):
            mark(getattr(node.assignment, "left", node.assignment), direct)
        elif isinstance(node, ast.ProceduralDeassignStatement):
            mark(node.lvalue, direct)
        elif isinstance(node, ast.CallExpression):
            args = list(node.arguments)
            if node.isSystemCall:
                for arg, _ in _written_arguments(node, frozenset()):
                    mark(arg, direct)
            else:
                formals = list(getattr(node.subroutine, "arguments", None) or [])
                for arg, f in zip(args, formals, strict=False):
                    if _writes(f, frozenset(), node.subroutine):
                        mark(arg, direct)
                    elif f.direction in (ast.ArgumentDirection.InOut,
                                         ast.ArgumentDirection.Ref):
                        passes.extend((formal_key(f), formal_key(s)) for s in _lvalue_symbols(arg)
                                      if isinstance(s, ast.FormalArgumentSymbol))
        return True

    root.visit(visit)
    # a call of a virtual method runs any override: the formal at one place is written
    # in all of them when one writes it (a thirty-third red team: the base `setit(ref x)`
    # only displayed x, the object's override wrote it, 63.94 -> 71.63 %); all the
    # subroutines of a name one of them declares virtual are taken as one (more is sound)
    slots = [[[formal_key(f) for f in m.arguments] for m in group]
             for group in methods.values() if len(group) > 1 and any(
                 getattr(m, "isVirtual", False) for m in group)]
    written = set(direct)
    grew = True
    while grew:
        grew = False
        for callee, caller in passes:
            if callee in written and caller not in written:
                written.add(caller)
                grew = True
        for group in slots:
            for place in range(max(len(keys) for keys in group)):
                same = {keys[place] for keys in group if place < len(keys)}
                if same & written and not same <= written:
                    written |= same
                    grew = True
    return frozenset(written)


_UNITS = frozenset({syntax.SyntaxKind.ModuleDeclaration, syntax.SyntaxKind.InterfaceDeclaration,
                    syntax.SyntaxKind.ProgramDeclaration})
_STEPS = frozenset({ast.UnaryOperator.Preincrement, ast.UnaryOperator.Predecrement,
                    ast.UnaryOperator.Postincrement, ast.UnaryOperator.Postdecrement})


def _lvalue_symbols(expr: Any) -> list[Any]:
    """The variables and nets an lvalue expression writes (through selects, member
    accesses and conversions; each operand of a concatenation or streaming
    concatenation; a clocking block's signal for its clock variable)."""
    kind = expr.kind
    if kind == ast.ExpressionKind.Concatenation:
        return [s for op in expr.operands for s in _lvalue_symbols(op)]
    if kind == ast.ExpressionKind.Streaming:
        return [s for st in expr.streams for s in _lvalue_symbols(st.operand)]
    if kind == ast.ExpressionKind.Assignment:  # `a = b` as an argument: its target
        return _lvalue_symbols(expr.left)
    sym = expr.getSymbolReference()
    if isinstance(sym, ast.ClockVarSymbol) and sym.initializer is not None:
        return _lvalue_symbols(sym.initializer)  # `cb.q <= ...` drives q
    return [sym] if isinstance(sym, (ast.VariableSymbol, ast.NetSymbol)) else []


def dut_interface_members(elab: Elaboration, dut_hier: str) -> dict[str, frozenset[str]]:
    """Per interface type, its members that the DUT drives in some instance of it (a
    modport ``output`` of the DUT's interface port, nested interfaces included): a
    write through a virtual interface may land there, a target the elaboration cannot
    follow (a handle to the testbench's own instance: 78.33 -> 100 %)."""
    manager = elab.drivers
    side = _Sides(elab, dut_hier, manager)
    found: dict[str, set[str]] = {}
    for inst in elab.symbols():
        if not isinstance(inst, ast.InstanceSymbol) or not inst.isInterface:
            continue
        for member in inst.body:
            if isinstance(member, (ast.VariableSymbol, ast.NetSymbol)) and any(
                    side.dut(d) for d in manager.getDrivers(member)):
                found.setdefault(inst.definition.name, set()).add(member.name)
    return {k: frozenset(v) for k, v in found.items()}


@dataclass
class _Sides:
    """Whose a driver is: the DUT's, foreign (the testbench's), or neither (an RTL
    package's initial value)."""

    elab: Elaboration
    dut_hier: str
    manager: Any
    #: Subroutines the testbench's calls run (:attr:`Calls.from_tb`).
    from_tb: frozenset[str] = frozenset()

    def below_dut(self, sym: Any) -> bool:
        path = getattr(sym, "hierarchicalPath", "") or ""
        return path == self.dut_hier or path.startswith(self.dut_hier + ".")

    def dut(self, driver: Any) -> bool:
        """The DUT's: below the DUT instance, and its RTL code or an output port of it
        (the port's connection lies in the testbench's text); the code of a testbench
        unit bound into the DUT is not (a checker that counts its own changes had its
        variable read as DUT-driven, a nineteenth red team's false positive)."""
        return self.below_dut(driver.containingSymbol) and (
            not self.elab.in_tb(driver.sourceRange.start)
            or bool(int(driver.flags) & int(analysis.DriverFlags.OutputPort)))

    def foreign(self, driver: Any, sym: Any) -> bool:
        if self.dut(driver) or _starts_unset(driver, sym) or self._idle_clockvar(driver) \
                or (_pull(driver) and not self.owned(sym)):  # (on the DUT's own net: a
            return False                               # value for an undriven one)
        holder = driver.containingSymbol
        return (self.elab.in_tb(driver.sourceRange.start)
                or isinstance(holder, ast.InstanceSymbol)
                or getattr(holder, "hierarchicalPath", None) in self.from_tb)

    def owned(self, sym: Any) -> bool:
        """A variable of the DUT: in its subtree, or an RTL package's or compilation
        unit's (declared in the RTL part, outside any instance)."""
        if self.below_dut(sym):
            return not self.elab.in_tb(sym.location)  # a testbench model the RTL holds
        # declared in a package (`pkg::v`) or the compilation unit (`v`); not a class's
        # copy of an interface through a virtual handle (`drv::bus_if.rst`, also of a
        # class at file scope: the handle rule's)
        path = sym.hierarchicalPath
        head, sep, rest = path.partition("::")
        return not self.elab.in_tb(sym.location) and (
            "." not in path if not sep else head in self.elab.packages and "." not in rest)

    def _idle_clockvar(self, driver: Any) -> bool:
        """A clocking block's ``output`` that nothing drives through it: slang records a
        driver of the signal at every output clock variable's declaration (the driver's
        range starts at the clock variable's name)."""
        if not int(driver.flags) & int(analysis.DriverFlags.ClockVar):
            return False
        origin = self.elab.sources.getFullyOriginalLoc
        at = origin(driver.sourceRange.start).offset
        for cv in driver.containingSymbol:
            if isinstance(cv, ast.ClockVarSymbol) and origin(cv.location).offset == at:
                return not list(self.manager.getDrivers(cv))
        return False


def _wired(driver: Any, elab: Elaboration) -> bool:
    """An output port's driver whose connection the testbench's text writes: onto a
    variable of the DUT it is the testbench's wiring, whoever's the port (the DUT's own
    ``.echo(dut.u_fsm.tm)`` or ``.echo(cfg_pkg::tm_en)``: an output that mirrors an
    input drove an internal input the RTL leaves unconnected, 76.09 -> 89.56 %, a
    twenty-first red team)."""
    return bool(int(driver.flags) & int(analysis.DriverFlags.OutputPort)) and \
        elab.in_tb(driver.sourceRange.start)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two drivers' bit ranges (slang's ``bounds``: ``(low, high)`` of the
    variable's flattened bits, a dynamic index widened to the whole) share a bit."""
    return a[0] <= b[1] and b[0] <= a[1]


def _pull(driver: Any) -> bool:
    """A ``pullup``/``pulldown`` of the testbench: it gives a net its value only where
    every other driver is ``z`` (an open-drain output's board model; measured: a
    pulldown on a net the DUT drives 0/1 changes nothing)."""
    prim = driver.containingSymbol
    return isinstance(prim, ast.PrimitiveInstanceSymbol) and \
        prim.primitiveType.name in ("pullup", "pulldown")


def _starts_unset(driver: Any, sym: Any) -> bool:
    """Whether a driver is a variable declaration's initial value of zero or all
    ``x``/``z``: the value every variable starts at in the run
    (``+verilator+rand+reset+0``), so no write (``reg done = 0;`` on a DUT output is
    common in testbenches). A net's declaration assignment is a continuous driver (IEEE
    1800 6.7.1: ``wire [3:0] cw = 0;`` held a DUT output at zero, 81.11 -> 92.22 %)."""
    if not int(driver.flags) & int(analysis.DriverFlags.Initializer) or \
            isinstance(sym, ast.NetSymbol):
        return False
    init = getattr(sym, "initializer", None)
    if init is None or not _plain_start(init):
        return False  # a call, an operator: slang's 4-state value may not be Verilator's
    value = init.eval(ast.EvalContext(sym))  # slang bounds the steps
    if isinstance(value.value, pyslang.SVInt):  # no bit a known 1: x and z start at 0
        return value.value.countOnes() == 0
    return bool(value.isFalse())  # a bad value is not false


def _plain_start(expr: Any) -> bool:
    """Whether an initial value is read as written: a literal or a fill (`'0`, `'x`),
    converted or not (a function's x-merged result was "unset" to slang and
    32'hC000_0000 to Verilator: 65.17 -> 80.65 %, a thirteenth red team)."""
    kind = expr.kind
    if kind == ast.ExpressionKind.Conversion:
        return _plain_start(expr.operand)
    if kind == ast.ExpressionKind.Replication:  # `{WIDTH{1'b0}}`: the count is no value
        return _plain_start(expr.concat)
    if kind == ast.ExpressionKind.Concatenation:
        return all(_plain_start(op) for op in expr.operands)
    if kind in (ast.ExpressionKind.SimpleAssignmentPattern,
                ast.ExpressionKind.StructuredAssignmentPattern,
                ast.ExpressionKind.ReplicatedAssignmentPattern):
        default = getattr(expr, "defaultSetter", None)
        return all(_plain_start(e) for e in expr.elements) and (
            default is None or _plain_start(default))
    return kind in (ast.ExpressionKind.IntegerLiteral,
                    ast.ExpressionKind.UnbasedUnsizedIntegerLiteral)


def _how(driver: Any) -> str:
    flags = int(driver.flags)
    if flags & int(analysis.DriverFlags.ClockVar):
        return "a clocking block's output"
    if flags & int(analysis.DriverFlags.OutputPort):
        inst = driver.containingSymbol
        return f"an output port of `{getattr(inst, 'hierarchicalPath', inst.name)}`"
    if flags & int(analysis.DriverFlags.ViaIndirectPort):
        return "through a ref or interface port"
    if flags & int(analysis.DriverFlags.Initializer):
        return "its declaration's initial value"
    kind = "a continuous" if driver.kind == analysis.DriverKind.Continuous else "a procedural"
    return f"{kind} assignment"


def _kind(sym: Any) -> str:
    if isinstance(sym, ast.InstanceSymbol):
        return f"an instance of `{sym.definition.name}`"
    if isinstance(sym, ast.GenerateBlockSymbol):
        return "a generate block"
    return f"a {type(sym).__name__.removesuffix('Symbol').lower()}"
