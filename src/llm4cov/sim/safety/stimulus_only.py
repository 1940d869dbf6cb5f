"""The score is the stimulus's own: a testbench may drive the DUT's ports and read any
DUT signal, never write into the DUT from outside (issue 40; ``docs/stimulus.md``).

Code coverage measures what the *stimulus* made the design do. Sign-off practice does
not accept coverage reached by force: a point covered because the testbench forced a
register, wrote a state variable through a hierarchical name or re-parameterized the
DUT (a generate branch pruned out of the denominator) says nothing about the design
under its real inputs. So a testbench is ``rejected``, before any build, with one reason
per construct naming its file and line, when it

- writes a name inside the DUT (a path through an instance of an RTL module, from the
  testbench's own modules, ``$root`` or an upward module name): as the target of a
  blocking, non-blocking or compound assignment, ``++``/``--``, a continuous ``assign``
  or ``alias``, a procedural ``assign``/``force``/``deassign``/``release``, or an output
  argument of a system task (``$readmemh``, ``$fscanf``, ``$value$plusargs``, ...);
- passes a DUT name as the actual argument of an ``output``/``inout``/``ref`` formal of
  a task or function (its own or the RTL's), or of a built-in method that writes it
  (:mod:`llm4cov.sim.safety.subroutines`);
- writes an input port of one of its own modules (an error Verilator only lets a
  ``lint_off`` waive; a bound module's input is the DUT's own signal, merged with it);
- calls a task or function of the DUT through a hierarchical name (it may write the
  DUT's state);
- connects an ``output``/``inout``/``ref`` port of one of its own modules to a DUT name,
  including every port of a module it ``bind``s into the DUT (a bound module's
  connections are names of the DUT's scope), or binds into the DUT an RTL module or a
  module of its own that instantiates one, at any depth (those points would count as
  the DUT's). A module bound into a bound module, or instantiated by one, lies in the
  DUT too;
- changes a DUT parameter with ``defparam``; or elaborates the measured DUT instance
  with parameter values other than the task's (``Task.parameters``, else the
  declaration's defaults): :func:`parameter_changes`, on pyslang's elaboration.

Reading DUT signals (``$display(dut.state)``, ``@(posedge dut.done)``, assertions on
internals) stays allowed, as does anything the testbench does to its own modules,
interfaces and variables (``force`` on its own net, a ``force`` into its own bus model).

Everything is read from the testbench's part of Verilator's preprocessed view (the
static check's one view of the sources), so what is checked is what Verilator compiles.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyslang import ast, parsing, syntax

from llm4cov.sim.safety.declaration_order import forward_references
from llm4cov.sim.safety.drivers import (
    Elaboration,
    driver_reasons,
    dut_interface_members,
    unrecorded_writes,
)
from llm4cov.sim.safety.handles import (
    HandleWrites,
    dut_subroutine_calls,
    handle_writes,
    subroutine_calls,
)
from llm4cov.sim.safety.shape import TbShape, tb_shape
from llm4cov.sim.safety.subroutines import (
    IN_PLACE_METHODS,
    OUTPUT_ARGUMENTS,
    WRITING,
    Signature,
    port_directions,
    signatures,
    written_arguments,
)
from llm4cov.tasks.hdl import (
    VIRTUAL_ROOT,
    Design,
    ModuleDecl,
    module_parameters,
    parse_tree,
    syntax_nodes,
)

SK = syntax.SyntaxKind

#: Assignment operators (IEEE 1800 11.4.1) and the non-blocking one.
_ASSIGNMENTS = frozenset(k for k in SK.__members__.values()
                         if k.name.endswith("AssignmentExpression")
                         and k.name != "AssignmentPatternExpression")
_INCREMENTS = frozenset({SK.UnaryPreincrementExpression, SK.UnaryPredecrementExpression,
                         SK.PostincrementExpression, SK.PostdecrementExpression})
_WRITING_DIRECTIONS = frozenset({"output", "inout", "ref"})


@dataclass(frozen=True)
class Hierarchy:
    """What the check knows of the design: the RTL's module names; per testbench
    module its instances (name -> module type), its ports' directions in order, and
    ``driven``: its names connected to an output/inout/ref port of an RTL instance.

    Verilator collapses such a port with the testbench's variable, so a procedural
    write to the testbench's side writes the DUT's own variable (seen with the pinned
    Verilator: ``q = 9`` on a counter's output reached its ``q == 9`` branch); IEEE 1800
    (6.5) makes that write an error, a variable driven by a port being continuously
    assigned."""

    rtl_modules: frozenset[str]
    instances: Mapping[str, Mapping[str, frozenset[str]]]
    ports: Mapping[str, tuple[tuple[str, str], ...]]
    driven: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    #: Per testbench module, every name an RTL output drives, whole or in part, nets
    #: too: a ``force`` of any part of it lands in the DUT (slang's driver analysis
    #: records no driver for a force, so this reading is the only one).
    force_driven: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    #: Task/function signatures of the testbench and the RTL, by name.
    subroutines: Mapping[str, list[Signature]] = \
        dataclasses.field(default_factory=dict)
    #: The testbench modules that lie inside the DUT: bound into an RTL module or into
    #: one of these, or instantiated by one of these.
    inside: frozenset[str] = frozenset()
    #: Instance names the RTL's modules declare (upward resolution finds them).
    rtl_instances: frozenset[str] = frozenset()
    #: Interface members the DUT drives (in any interface type), when the testbench
    #: declares a virtual interface: a write through a handle has no target before the
    #: run, so a name of two or more parts ending in one is a write into the DUT
    #: (``vif.q = 9``, ``vif.q++``, ``$sscanf(s, "%h", venv.inner.q)``: 78.33 -> 100 %).
    virtual_members: frozenset[str] = frozenset()
    #: The names the testbench declares with a virtual interface type (variables,
    #: class properties, arguments): a write reaches an interface member only through
    #: one of them (``t.rdata = vif.rdata`` writes a transaction's field). None: not
    #: known (a typedef of one, an unread declaration form): every name counts.
    virtual_handles: frozenset[str] | None = None
    #: Testbench-text offsets of names written through a virtual interface handle that
    #: the elaboration's points-to analysis shows land outside the DUT
    #: (:func:`~llm4cov.sim.safety.handles.handle_writes`): the name rule above is
    #: lifted there (a stream testbench's driver writing ``vif.data`` of the input side,
    #: the output side's ``data`` being the DUT's).
    virtual_cleared: frozenset[int] = frozenset()
    #: Per testbench unit, the names it declares itself (variables, nets, ports): a
    #: name that starts at one of them resolves there, never upward into the DUT.
    declared: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, rtl_modules: Iterable[str], tb_decls: Iterable[ModuleDecl],
           tb_tree: syntax.SyntaxTree, rtl: RtlDeclarations | None = None) -> Hierarchy:
        """From the RTL's module names (and its ports and subroutines, ``rtl``) and the
        testbench's declarations and tree."""
        tb = list(tb_decls)
        rtl_names = frozenset(rtl_modules) - {d.name for d in tb}
        units = _units(tb_tree)  # modules, interfaces, programs: their instances
        rtl = rtl or RtlDeclarations({}, {})
        sigs = signatures([tb_tree])
        for name, more in rtl.subroutines.items():
            sigs.setdefault(name, []).extend(more)
        for d in tb:
            for mtype, name in d.instances:
                units.setdefault(d.name, {}).setdefault(name, set()).add(mtype)
        own = _port_directions(tb_tree, {d.name for d in tb} | set(units))
        driven, forced = _driven_by_rtl(tb_tree, {m: p for m, p in rtl.ports.items()
                                                if m in rtl_names}, own)
        made = cls(rtl_names, {u: {n: frozenset(ts) for n, ts in insts.items()}
                               for u, insts in units.items()}, own, driven, forced, sigs)
        models = {t for m, kids in rtl.instances.items() if m in rtl_names for t in kids
                  if t in made.instances}
        return dataclasses.replace(made, inside=made.bound_inside(_binds(tb_tree), models),
                                   rtl_instances=rtl.instance_names,
                                   declared=_declared(tb_tree))

    def bound_inside(self, binds: list[tuple[list[str], str]],
                     models: Iterable[str] = ()) -> frozenset[str]:
        """The testbench modules inside the DUT, given the ``(target path, module)``
        of every ``bind`` and the ``models`` (testbench modules an RTL module
        instantiates: a model of a memory or a vendor cell the RTL leaves out); a
        fixpoint: a bind into a bound module counts once that module is inside."""
        inside: set[str] = set(models)
        grown = True
        while grown:
            size = len(inside)
            for target, mtype in binds:
                if mtype in self.instances and self.in_dut(target, frozenset(inside)):
                    inside.add(mtype)
            for m in list(inside):
                inside |= {t for ts in self.instances.get(m, {}).values() for t in ts
                           if t in self.instances}
            grown = len(inside) > size
        return frozenset(inside)

    def in_dut(self, target: list[str], inside: frozenset[str] | None = None) -> bool:
        """Whether a ``bind`` target (a module name or an instance path) lies in the
        DUT: an RTL module, a testbench module inside it, or a path reaching one."""
        inside = self.inside if inside is None else inside
        within = self.rtl_modules | inside
        return bool(target) and (target[0] in within or bool(self.reaches(target) & within))

    def foreign(self, path: list[str], module: str | None) -> bool:
        """Whether the hierarchical name ``path``, used in the testbench unit
        ``module``, may name the DUT's own signal: ``module`` lies in the DUT and the
        name does not start at one of its own instances (upward resolution, IEEE 1800
        23.8, finds the DUT's instances and names from there: ``u_hard.a`` in a bound
        checker is ``tb.dut.u_hard.a``)."""
        return (module in self.inside and len(path) > 1
                and path[0] not in self.declared.get(module or "", ())
                and (path[0] not in self.instances.get(module or "", {})
                     or path[0] in self.rtl_instances))

    def inputs(self, module: str | None) -> frozenset[str]:
        """The input ports of the testbench module ``module``."""
        return frozenset(p for p, d in self.ports.get(module or "", ()) if d == "input")

    def reaches(self, scopes: list[str]) -> set[str]:
        """The module types a hierarchical name whose scope components are ``scopes``
        may lie in (see :meth:`reaches_rtl`); empty when it is no hierarchy path."""
        if scopes[:1] == ["$root"]:
            scopes = scopes[1:]
        if not scopes:
            return set()
        first = scopes[0]
        here = set().union(*(m[first] for m in self.instances.values() if first in m))
        if first in self.rtl_modules or first in self.instances:
            here.add(first)
        if not here and len(scopes) > 1:  # a generate or named block: look past it
            return self.reaches(scopes[1:])
        for name in scopes[1:]:
            if here & self.rtl_modules:
                return here
            below = set().union(*(self.instances[t][name] for t in here
                                  if t in self.instances and name in self.instances[t]))
            here = below or here
        return here

    def writes_dut(self, path: list[str], module: str | None, forced: bool = False,
                   at: int | None = None) -> bool:
        """Whether writing the name ``path`` from ``module`` writes into the DUT: it lies
        inside an RTL instance, it is a testbench name an RTL output drives (a net too
        when ``forced``: a ``force``/``release``), or a port of a testbench module inside
        the DUT (a bound module's port is the DUT's signal). ``at``: the name's offset in
        the testbench's text (:attr:`virtual_cleared`)."""
        def driven(unit: str | None) -> frozenset[str]:
            names = self.driven.get(unit or "", frozenset())
            return self.force_driven.get(unit or "", frozenset()) if forced else names

        if len(path) == 1:
            return module is not None and path[0] in driven(module)
        if at not in self.virtual_cleared and any(
                p in self.virtual_members for p in path[1:]) and (
                self.virtual_handles is None
                or any(p in self.virtual_handles for p in path[:-1])):
            return True
        here = self.reaches(path[:-1])
        return bool(here & self.rtl_modules) or any(
            path[-1] in driven(t) for t in here) or any(
            path[-1] in dict(self.ports.get(t, ())) for t in here & self.inside)

    def reaches_rtl(self, scopes: list[str]) -> bool:
        """Whether a hierarchical name whose scope components are ``scopes`` (the last
        name left out) lies inside an instance of an RTL module. A component that is not
        an instance of the module reached so far (a generate or named block) is passed
        through; a first component that names neither an instance of a testbench module
        nor a module is no hierarchy path (a class handle, a struct, an interface
        port)."""
        return bool(self.reaches(scopes) & self.rtl_modules)


def dut_writes(tb_tree: syntax.SyntaxTree, hierarchy: Hierarchy) -> list[str]:
    """Reasons (``file:line: ...``, in source order) for every construct of the
    testbench tree ``tb_tree`` (its part of Verilator's view, parsed alone) that writes
    into the DUT or changes its parameters by ``defparam`` (see the module docstring).
    Empty: the testbench only drives ports and reads."""
    found: list[tuple[int, str]] = []
    sm = tb_tree.sourceManager
    inside_statement: set[int] = set()  # assignments of a force/assign already reported
    module: list[str | None] = [None]  # the module declaration being walked

    def say(node: Any, what: str) -> None:
        loc = node.sourceRange.start
        name = sm.getFileName(loc).removeprefix(VIRTUAL_ROOT + "/")
        found.append((loc.offset, f"{name}:{sm.getLineNumber(loc)}: {what}"))

    def written(node: Any, target: Any, what: str, procedural: bool = True,
                forced: bool = False) -> None:
        """Report the names the lvalue ``target`` writes (or the ``target`` paths, a
        list) that lie in the DUT."""
        named = [(p, None) for p in target] if isinstance(target, list) \
            else _lvalue_names(target)
        for path, at in named:
            if path[0] in ("option", "type_option") and _in_covergroup(node):
                continue  # the covergroup's own options (IEEE 1800 19.7), not a DUT name
            if len(path) == 1 and path[0] in hierarchy.inputs(module[0]):
                say(node, f"{what} `{path[0]}` writes an input port of `{module[0]}` "
                          "(an input is driven from outside; bound into the DUT, it is the "
                          "DUT's own signal)")
                continue
            if hierarchy.foreign(path, module[0]):
                say(node, f"{what} `{'.'.join(path)}` writes into the DUT (`{module[0]}` lies "
                          "in the DUT: the name resolves in its scope)")
                continue
            if len(path) == 1 and _declared_locally(node, path[0]):
                continue  # a class's, function's or block's own name, not the module's
            if not hierarchy.writes_dut(path, module[0] if procedural else None, forced, at):
                continue
            driven = " (a DUT port drives it)" if len(path) == 1 else ""
            say(node, f"{what} `{'.'.join(path)}` writes into the DUT{driven}")

    def visit(node: object) -> Any:
        if not isinstance(node, syntax.SyntaxNode):
            return True
        kind: Any = node.kind
        n: Any = node
        unit = (n.header.name.valueText if isinstance(n, syntax.ModuleDeclarationSyntax)
                else n.name.valueText if isinstance(n, syntax.CheckerDeclarationSyntax)
                else None)
        if unit is not None and unit != module[0]:
            outer, module[0] = module[0], unit
            n.visit(visit)
            module[0] = outer
            return ast.VisitAction.Skip  # (a plain False would walk it again, out of scope)
        if kind == SK.ContinuousAssign:  # a second driver of a port: Verilator's own check
            for expr in n.assignments:
                if isinstance(expr, syntax.ExpressionSyntax) and hasattr(expr, "left"):
                    inside_statement.add(expr.sourceRange.start.offset)
                    written(n, expr.left, "the continuous assignment to", procedural=False)
        elif kind in _ASSIGNMENTS:
            if n.sourceRange.start.offset not in inside_statement:
                written(n, n.left, "the assignment to", forced=not _listed(n))
        elif kind in _INCREMENTS:
            written(n, n.operand, "the increment of", forced=True)
        elif kind in (SK.ProceduralForceStatement, SK.ProceduralAssignStatement):
            inside_statement.add(n.expr.sourceRange.start.offset)
            written(n, n.expr.left if hasattr(n.expr, "left") else n.expr,
                    f"`{n.keyword.valueText}` of", forced=True)
        elif kind in (SK.ProceduralReleaseStatement, SK.ProceduralDeassignStatement):
            written(n, n.variable, f"`{n.keyword.valueText}` of", forced=True)
        elif kind == SK.NetDeclaration and n.netType.valueText in _DRIVING_NETS:
            # a supply or pulled net drives itself: on a net a DUT output drives, it is a
            # second driver slang lists none for (a nineteenth red team)
            for d in n.declarators:
                if isinstance(d, syntax.DeclaratorSyntax):
                    written(n, [[d.name.valueText]], f"the `{n.netType.valueText}` net",
                            forced=True)
        elif kind == SK.NetAlias:  # one net under several names: any member is written
            for expr in n.nets:
                if isinstance(expr, syntax.ExpressionSyntax):
                    written(n, expr, "the `alias` of", forced=True)
        elif kind == SK.DefParamAssignment:
            path = _path(n.name)
            if path and (hierarchy.reaches_rtl(path[:-1]) or module[0] in hierarchy.inside):
                say(n, f"`defparam {'.'.join(path)}` changes a DUT parameter (the task "
                       "sets the DUT's parameters)")
        elif kind == SK.InvocationExpression:
            _call(n, hierarchy, say, written, module[0])
        elif kind == SK.NewClassExpression:
            for arg, what, ref in written_arguments(n, hierarchy.subroutines):
                written(n, _argument_paths(arg, ref), what)
        elif kind == SK.FunctionPortList:
            # a writing formal's default is the actual of every call that leaves it out
            # (IEEE 1800 13.5.3: `ref logic r = tb.dut.st`, a twenty-first red team)
            for port, direction in port_directions(n):
                init = port.declarator.initializer
                if direction in WRITING and init is not None:
                    written(port, init.expr, f"the {direction} argument "
                            f"`{port.declarator.name.valueText}` defaulting to")
        elif kind == SK.HierarchyInstantiation:
            if module[0] in hierarchy.inside and n.type.valueText in hierarchy.rtl_modules:
                say(n, f"`{module[0]}` lies in the DUT (bound into it, or instantiated there) "
                       f"and instantiates the RTL module `{n.type.valueText}` (whose points "
                       "would count as the DUT's)")
            _instantiation(n, hierarchy, say, written, bound=False)
        elif kind == SK.BindDirective:
            if hierarchy.in_dut(_path(n.target) or []):
                _instantiation(n.instantiation, hierarchy, say, written, bound=True)
            return True  # its instantiation is read as a plain one too (conservative)
        return True

    tb_tree.root.visit(visit)
    return list(dict.fromkeys(reason for _, reason in sorted(found, key=lambda f: f[0])))


#: Net types that drive their net by themselves (IEEE 1800 6.6.6-6.6.8).
_DRIVING_NETS = frozenset({"supply0", "supply1", "tri0", "tri1", "trireg"})

_LOCAL_SCOPES = frozenset({SK.ClassDeclaration, SK.FunctionDeclaration, SK.TaskDeclaration,
                           SK.SequentialBlockStatement, SK.ParallelBlockStatement})


def _in_covergroup(node: Any) -> bool:
    """Whether ``node`` lies in a covergroup declaration (a red team's false positive:
    ``option.per_instance = 1;`` in a covergroup of a module bound into the DUT)."""
    scope = node.parent
    while scope is not None and scope.kind not in (SK.ModuleDeclaration,
                                                  SK.InterfaceDeclaration):
        if scope.kind == SK.CovergroupDeclaration:
            return True
        scope = scope.parent
    return False


def _declared_locally(node: Any, name: str) -> bool:
    """Whether ``name`` resolves in a scope around ``node`` inside its module (a class,
    function, task or begin-end block that declares it: a property, argument or
    local), so a write of it is no write of the module's variable of that name (a
    scoreboard's own ``count++`` beside a DUT output ``count``)."""
    scope = node.parent
    while scope is not None and scope.kind not in (SK.ModuleDeclaration,
                                                  SK.InterfaceDeclaration):
        if scope.kind in _LOCAL_SCOPES and name in _scope_names(scope):
            return True
        scope = scope.parent
    return False


def _scope_names(scope: Any) -> set[str]:
    """The names a class, subroutine or block declares directly (not in a nested one):
    its properties, arguments and locals."""
    names: set[str] = set()

    def visit(node: Any) -> Any:
        if node is not scope and getattr(node, "kind", None) in _LOCAL_SCOPES:
            return ast.VisitAction.Skip
        if isinstance(node, syntax.DeclaratorSyntax):
            names.add(node.name.valueText)
        return ast.VisitAction.Advance

    scope.visit(visit)
    return names


_ACTION_SCOPES = frozenset({
    SK.AssertPropertyStatement, SK.AssumePropertyStatement, SK.CoverPropertyStatement,
    SK.CoverSequenceStatement, SK.ExpectPropertyStatement, SK.RestrictPropertyStatement})


def _listed(assignment: Any) -> bool:
    """Whether slang's driver analysis lists the assignment's write, so the elaboration
    judges it bit by bit: a statement of its own (``x = ...;``, ``x <= ...;``) outside a
    concurrent assertion's or cover's action block. Any other (in a timing control, a
    condition, an action block) is judged here by its whole name, a part connection too
    (an increment always is: it writes every bit it names)."""
    parent = assignment.parent
    if parent is None or parent.kind != SK.ExpressionStatement:
        return False
    while parent is not None and parent.kind not in (SK.ModuleDeclaration,
                                                     SK.ClassDeclaration):
        if parent.kind in _ACTION_SCOPES:
            return False
        parent = parent.parent
    return True


def _call(n: Any, hierarchy: Hierarchy, say, written, module: str | None) -> None:
    """A call: a hierarchical one into the DUT (from ``module``), or a system task's
    output arguments."""
    callee = _path(n.left)
    args = _arguments(n)
    if callee and len(callee) > 1 and (hierarchy.reaches_rtl(callee[:-1])
                                       or hierarchy.foreign(callee, module)):
        say(n, f"the call of `{'.'.join(callee)}` runs a subroutine of the DUT (it may "
               "write the DUT's state)")
    if callee and len(callee) > 1 and callee[-1] in IN_PLACE_METHODS:
        written(n, [callee[:-1]], f"the in-place `{callee[-1]}` of", forced=True)
    name = n.left.systemIdentifier.valueText if n.left.kind == SK.SystemName else ""
    if name in OUTPUT_ARGUMENTS:
        first, last = OUTPUT_ARGUMENTS[name]
        for arg in args[first:None if last is None else last + 1]:
            written(n, arg, f"the {name} output")
    for arg, what, ref in written_arguments(n, hierarchy.subroutines):
        written(n, _argument_paths(arg, ref), what)


def _argument_paths(arg: Any, ref: bool) -> list[list[str]]:
    """The names an argument of a writing formal writes; of a ``ref`` formal only the
    hierarchical ones: whether a body writes a testbench name it takes by reference
    the elaboration tells (``drivers.unrecorded_writes``), a ``ref`` only read is the
    idiom of a task that waits on a signal."""
    return [p for p in _lvalue_paths(arg) if not ref or len(p) > 1]


def _instantiation(n: Any, hierarchy: Hierarchy, say, written, bound: bool) -> None:
    """A testbench module's instantiation: its output/inout/ref connections to DUT
    names; with ``bound`` (a ``bind`` into the DUT), every such connection, and the
    binding of an RTL module. (An RTL module's own connections are judged on the
    elaboration: ``drivers._wired``.)"""
    mtype = n.type.valueText
    if bound and mtype in hierarchy.rtl_modules:
        say(n, f"`bind` of the RTL module `{mtype}` into the DUT (its points would count "
               "as the DUT's)")
        return
    ports = hierarchy.ports.get(mtype)
    if ports is None:
        return
    directions = dict(ports)
    for inst in n.instances:
        if not isinstance(inst, syntax.HierarchicalInstanceSyntax):
            continue
        for i, conn in enumerate(_connections(inst)):
            if isinstance(conn, syntax.WildcardPortConnectionSyntax):
                writes = [p for p, d in ports if d in _WRITING_DIRECTIONS]
                if bound and writes:
                    kinds = "/".join(sorted({directions[p] for p in writes}))
                    say(conn, f"`.*` connects the {kinds} port(s) {', '.join(writes)} of "
                              f"`{mtype}` to DUT names")
                continue
            if isinstance(conn, syntax.NamedPortConnectionSyntax):
                port, expr = conn.name.valueText, conn.expr
                if expr is None and not (conn.openParen and conn.openParen.rawText):
                    expr = [[port]]  # `.name`: the name itself (IEEE 1800 23.3.2.3)
            elif isinstance(conn, syntax.OrderedPortConnectionSyntax):
                port, expr = (ports[i][0] if i < len(ports) else ""), conn.expr
            else:
                continue
            direction = directions.get(port, "")
            if expr is None or direction not in _WRITING_DIRECTIONS:
                continue
            if bound:
                say(conn, f"the {direction} port `{port}` of `{mtype}`, bound into the DUT, "
                          "drives a DUT name")
            else:
                # a plain variable an output drives is the drive itself (a second driver
                # is Verilator's error); a hierarchical name is a write into the DUT
                paths = expr if isinstance(expr, list) else _lvalue_paths(expr)
                written(conn, [q for q in paths if len(q) > 1],
                        f"the {direction} port `{port}` of `{mtype}` connected to")


def _connections(inst: Any) -> list[Any]:
    """An instance's port connections in order (without the commas between them)."""
    return [c for c in inst.connections if isinstance(c, syntax.SyntaxNode)]


def _arguments(n: Any) -> list[Any]:
    """The argument expressions of a call, in order (named ones in their order)."""
    if n.arguments is None:
        return []
    out = []
    for arg in n.arguments.parameters:
        expr = getattr(arg, "expr", None)
        if expr is not None:
            out.append(expr)
    return out


def _lvalue_paths(expr: Any) -> list[list[str]]:
    """The names an lvalue expression writes: its base names through selects,
    concatenations and parentheses, each as its path components."""
    return [path for path, _ in _lvalue_names(expr)]


def _lvalue_names(expr: Any) -> list[tuple[list[str], int | None]]:
    """:func:`_lvalue_paths`, each with the offset where its name starts (None where
    the name is a doubt's, not the lvalue's own)."""
    if expr is None:
        return []
    kind = expr.kind
    if kind in (SK.ElementSelectExpression, SK.MemberAccessExpression):
        base = expr.left
        if kind == SK.MemberAccessExpression:
            return [([*p, expr.name.valueText], at) for p, at in _lvalue_names(base)]
        return _lvalue_names(base)
    if kind == SK.ParenthesizedExpression:
        return _lvalue_names(expr.expression)
    if kind in (SK.SimplePropertyExpr, SK.SimpleSequenceExpr):  # a call's argument
        return _lvalue_names(expr.expr)
    if kind in (SK.ConcatenationExpression, SK.StreamingConcatenationExpression):
        out = []
        for item in expr.expressions:
            if isinstance(item, syntax.ExpressionSyntax):
                out += _lvalue_names(item)
            elif hasattr(item, "expression"):
                out += _lvalue_names(item.expression)
        return out
    path = _path(expr)
    if path:
        return [(path, expr.sourceRange.start.offset)]
    if kind in _LEAVES:
        return []
    # any other form (an assignment pattern `'{dut.a, x} = ...`, a cast): a doubt is a
    # write of every name in it
    return [(p, None) for name in syntax_nodes(expr, _NAMES)
            if (p := _path(name)) and not (isinstance(name.parent, syntax.NameSyntax)
                                           and _path(name.parent))]


#: The name forms :func:`_path` reads.
_NAMES = (SK.IdentifierName, SK.IdentifierSelectName, SK.SystemName, SK.RootScope,
          SK.ScopedName)
#: Expressions that name nothing (literals, `this`, `null`, ...).
_LEAVES = frozenset(k for k in SK.__members__.values() if k.name.endswith("LiteralExpression"))


def _path(name: Any) -> list[str] | None:
    """The components of a hierarchical name (``tb.dut.acc[3]`` -> tb, dut, acc), or
    None when it is no such name (a ``::`` scope, a literal, an expression)."""
    if name is None:
        return None
    kind = name.kind
    if kind in (SK.IdentifierName, SK.IdentifierSelectName):
        return [name.identifier.valueText]
    if kind == SK.SystemName:
        return [name.systemIdentifier.valueText]
    if kind == SK.RootScope:
        return ["$root"]
    if kind == SK.ScopedName:
        if name.separator.valueText != ".":
            return None
        if name.left.kind in (SK.ThisHandle, SK.SuperHandle):  # `this.vif.q`: a member
            return _path(name.right)
        left, right = _path(name.left), _path(name.right)
        return [*left, *right] if left is not None and right is not None else None
    return None


def _port_directions(tree: syntax.SyntaxTree, modules: set[str]
                     ) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per testbench module, its ports and their directions in order (ANSI headers and
    non-ANSI port declarations; a port without one inherits the one before, IEEE 1800
    23.2.2.3, and the first defaults to ``inout``)."""
    out: dict[str, tuple[tuple[str, str], ...]] = {}

    def visit(node: object) -> bool:
        if isinstance(node, syntax.ModuleDeclarationSyntax) and node.kind in _UNITS and \
                node.header.name.valueText in modules:
            out[node.header.name.valueText] = tuple(_module_ports(node))
        return True

    tree.root.visit(visit)
    return out


@dataclass(frozen=True)
class RtlDeclarations:
    """What the check reads of the RTL: per module its ports' directions in order and
    the module types it instantiates, and its tasks' and functions' signatures by
    name."""

    ports: Mapping[str, tuple[tuple[str, str], ...]]
    subroutines: Mapping[str, list[Signature]]
    #: Per module, the module types it instantiates.
    instances: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    #: Every instance name the RTL's modules declare.
    instance_names: frozenset[str] = frozenset()


@functools.lru_cache(maxsize=8)
def rtl_declarations(rtl_text: str) -> RtlDeclarations:
    """The :class:`RtlDeclarations` of the RTL part of Verilator's view (remembered per
    text: the later calls of a design repeat it)."""
    tree = parse_tree(rtl_text, "llm4cov_rtl.sv")
    out: dict[str, tuple[tuple[str, str], ...]] = {}

    def visit(node: object) -> bool:
        if isinstance(node, syntax.ModuleDeclarationSyntax):
            out.setdefault(node.header.name.valueText, tuple(_module_ports(node)))
        return True

    tree.root.visit(visit)
    decls = Design(tree, VIRTUAL_ROOT).decls()
    kids = {d.name: frozenset(t for t, _ in d.instances) for d in decls}
    names = frozenset(n for d in decls for _, n in d.instances)
    return RtlDeclarations(out, signatures([tree]), kids, names)


_UNITS = frozenset({SK.ModuleDeclaration, SK.InterfaceDeclaration, SK.ProgramDeclaration})


def _units(tree: syntax.SyntaxTree) -> dict[str, dict[str, set[str]]]:
    """Per module, interface, program or checker the tree declares, its instances
    (name -> every type an instance of that name has, generate blocks included): an
    interface or checker bound into the DUT acts there like a module would."""
    out: dict[str, dict[str, set[str]]] = {}

    def visit(node: object) -> bool:
        if isinstance(node, syntax.CheckerDeclarationSyntax):
            out.setdefault(node.name.valueText, {})
        if isinstance(node, syntax.ModuleDeclarationSyntax) and node.kind in _UNITS:
            insts = out.setdefault(node.header.name.valueText, {})
            for inst in syntax_nodes(node, (SK.HierarchyInstantiation,)):
                for i in inst.instances:
                    if isinstance(i, syntax.HierarchicalInstanceSyntax) and i.decl is not None:
                        insts.setdefault(i.decl.name.valueText, set()).add(inst.type.valueText)
        return True

    tree.root.visit(visit)
    return out


def _declared(tree: syntax.SyntaxTree) -> dict[str, frozenset[str]]:
    """Per module or checker of the tree, the variables, nets and ports it declares."""
    found: dict[str, set[str]] = {}

    def visit(node: Any) -> Any:
        unit = (node.header.name.valueText if isinstance(node, syntax.ModuleDeclarationSyntax)
                else node.name.valueText if isinstance(node, syntax.CheckerDeclarationSyntax)
                else None)
        if unit is None:
            return True
        names = found.setdefault(unit, set())
        if isinstance(node, syntax.ModuleDeclarationSyntax):
            names.update(p for p, _ in _module_ports(node))
        for member in node.members:  # its own scope: not a function's or a block's
            if member.kind in (SK.DataDeclaration, SK.NetDeclaration):
                names.update(d.name.valueText for d in member.declarators
                             if isinstance(d, syntax.DeclaratorSyntax))
        for port in syntax_nodes(node, (SK.AssertionItemPort,)):
            names.add(port.name.valueText)
        return ast.VisitAction.Skip

    tree.root.visit(visit)
    return {k: frozenset(v) for k, v in found.items()}


def _virtual_handles(tree: syntax.SyntaxTree) -> frozenset[str] | None:
    """The names declared with a virtual interface type (see
    :attr:`Hierarchy.virtual_handles`), or None when one is declared in a form not read
    here (a ``typedef`` of it: its users are not followed)."""
    names: set[str] = set()
    if syntax_nodes(tree.root, (SK.TypeReference,)):
        return None  # `var type(vif) h`: a handle's type through another name
    aliases = {t.name.valueText for t in syntax_nodes(tree.root, (SK.TypedefDeclaration,))
               if t.type.kind == SK.VirtualInterfaceType}
    for decl in syntax_nodes(tree.root, (SK.DataDeclaration, SK.FunctionPort,
                                         SK.ImplicitAnsiPort)):
        kind_of = getattr(decl, "type", None) or getattr(getattr(decl, "header", None),
                                                          "dataType", None)
        if kind_of is not None and str(kind_of).strip() in aliases:
            many = getattr(decl, "declarators", None)
            names.update(d.name.valueText for d in (many if many is not None
                                                    else [decl.declarator])
                         if isinstance(d, syntax.DeclaratorSyntax))
    for vif in syntax_nodes(tree.root, (SK.VirtualInterfaceType,)):
        up = vif.parent
        while up is not None and up.kind != SK.ParameterValueAssignment:
            up = up.parent
        if up is not None:  # `drv #(virtual bus_if)`: a class's type parameter holds it
            return None
        decl = vif.parent
        while decl is not None and not hasattr(decl, "declarators") and \
                not hasattr(decl, "declarator"):
            decl = decl.parent
        if isinstance(decl, syntax.TypedefDeclarationSyntax) or (
                decl is None and vif.parent.kind == SK.TypedefDeclaration):
            continue  # its users are read above
        if decl is None:
            return None
        many = getattr(decl, "declarators", None)
        for d in (many if many is not None else [decl.declarator]):
            if isinstance(d, syntax.DeclaratorSyntax):
                names.add(d.name.valueText)
    return frozenset(names)


def unfollowed_randsequences(tree: syntax.SyntaxTree) -> list[str]:
    """Reasons for each ``randsequence`` (IEEE 1800 18.17) with a code block or a
    production argument: the elaboration the checks read leaves its productions' code
    out (pyslang's AST walk does not enter them), so a ``ref`` formal written there, or
    a DUT-driven variable passed to a production's ``ref`` argument, was no write (a
    thirty-fourth red team: 63.94 -> 71.63 %). A ``randsequence`` of plain production
    items (calls of tasks) is judged like any call. Empty when none."""
    sm = tree.sourceManager
    return [f"{sm.getFileName(node.sourceRange.start)}:"
            f"{sm.getLineNumber(node.sourceRange.start)}: a `randsequence` with a code "
            "block or a production argument is not followed by the stimulus check; write "
            "the choices with `randcase` and tasks"
            for node in syntax_nodes(tree.root, (SK.RandSequenceStatement,))
            if syntax_nodes(node, (SK.RsCodeBlock,)) or any(
                p.portList is not None for p in syntax_nodes(node, (SK.Production,)))]


def dead_binds(tree: syntax.SyntaxTree, made: Elaboration) -> list[str]:
    """Reasons for each ``bind`` that lies in a testbench module, interface or program
    the elaboration does not instantiate, or in a generate construct: Verilator applies
    every bind it parses, the elaboration only those of the design under the
    testbench's top, built branches only, so nothing here would see the bound instance
    (a port connection's ``$sscanf`` wrote the DUT's state register: 39.04 -> 47.17 %,
    a seventeenth red team; in an ``if (0)`` block, 73.08 -> 86.54 %, a twentieth).
    Empty when none."""
    binds = syntax_nodes(tree.root, (SK.BindDirective,))
    if not binds:
        return []
    made_here = {s.definition.name for s in made.symbols()
                 if isinstance(s, ast.InstanceSymbol) and not s.body.isUninstantiated}
    sm = tree.sourceManager
    found = []
    for bind in binds:
        unit, generate = bind.parent, None
        while unit is not None and unit.kind not in _UNIT_KINDS:
            if unit.kind in _CONDITIONAL_GENERATES:
                generate = unit
            unit = unit.parent
        loc = bind.sourceRange.start
        where = f"{sm.getFileName(loc).removeprefix(VIRTUAL_ROOT + '/')}:{sm.getLineNumber(loc)}"
        if generate is not None:  # `if (0) begin bind ... end`: applied all the same
            found.append(f"{where}: a `bind` in a generate construct: Verilator applies it "
                         "whatever its condition, the check only where the branch is built")
        elif unit is not None and unit.header.name.valueText not in made_here:
            found.append(f"{where}: a `bind` in `{unit.header.name.valueText}`, which the "
                         "testbench's top does not instantiate: Verilator applies it, the "
                         "check does not see it")
    return found


_UNIT_KINDS = frozenset({SK.ModuleDeclaration, SK.InterfaceDeclaration,
                         SK.ProgramDeclaration})
_CONDITIONAL_GENERATES = frozenset({SK.IfGenerate, SK.CaseGenerate, SK.LoopGenerate})


def _binds(tree: syntax.SyntaxTree) -> list[tuple[list[str], str]]:
    """``(target path, bound module type)`` of every ``bind`` of the tree."""
    out: list[tuple[list[str], str]] = []

    def visit(node: object) -> bool:
        if isinstance(node, syntax.BindDirectiveSyntax):
            inst = node.instantiation
            if isinstance(inst, syntax.HierarchyInstantiationSyntax):
                out.append((_path(node.target) or [], inst.type.valueText))
            return False
        return True

    tree.root.visit(visit)
    return out


def _driven_by_rtl(tree: syntax.SyntaxTree, rtl_ports: Mapping[str, tuple[tuple[str, str], ...]],
                   own: Mapping[str, tuple[tuple[str, str], ...]]
                   ) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Per testbench unit (``own``: every unit's ports and their directions, from
    :func:`_port_directions`), the variables it connects to an output, inout or ref port
    of an instance of an RTL module (named, positional, ``.name`` and ``.*``
    connections), or to such a port of one of its own units that passes a driven
    variable out (a wrapper: Verilator collapses the ports level by level; a
    fixpoint). A variable or net declared as a port counts. Returns the variables
    connected whole (a procedural write to any bit of one writes the DUT's; one
    connected by a part select, ``.q(obs[3:0])``, may have its other bits written,
    IEEE 1800 6.5, which the elaboration's driver ranges tell apart:
    :mod:`llm4cov.sim.safety.drivers`) and, apart, every name connected whole or in
    part, nets too, for a ``force``: a procedural ``force``/``release`` of a net is
    legal (IEEE 1800 10.6.2) and Verilator collapses it with the DUT's variable, so the
    force lands there (seen: 72.64 -> 95.83 % on a counter's output); any other
    procedural write to a net is a compile error (IEEE 1800 10.4, Verilator's verdict,
    kept), and a continuous assignment to it stays a resolved second driver (a
    bidirectional bus)."""
    sites: dict[str, list[tuple[str, Any]]] = {}
    variables: dict[str, set[str]] = {}
    nets: dict[str, set[str]] = {}
    module: list[str] = [""]

    def visit(node: object) -> bool:
        if isinstance(node, syntax.ModuleDeclarationSyntax):
            module[0] = node.header.name.valueText
            variables.setdefault(module[0], set()).update(p for p, _ in _module_ports(node))
        elif isinstance(node, (syntax.DataDeclarationSyntax, syntax.NetDeclarationSyntax)):
            kind = variables if isinstance(node, syntax.DataDeclarationSyntax) else nets
            kind.setdefault(module[0], set()).update(
                d.name.valueText for d in node.declarators
                if isinstance(d, syntax.DeclaratorSyntax))
        elif isinstance(node, syntax.HierarchyInstantiationSyntax):
            sites.setdefault(module[0], []).extend(
                (node.type.valueText, inst) for inst in node.instances
                if isinstance(inst, syntax.HierarchicalInstanceSyntax))
        return True

    tree.root.visit(visit)
    ports = {**own, **rtl_ports}
    drives = {m: {p for p, d in ps if d in _WRITING_DIRECTIONS} for m, ps in rtl_ports.items()}
    while True:
        out = {m: set().union(*(_connected(inst, ports[t], drives[t])
                                for t, inst in insts if t in drives))
               for m, insts in sites.items()}
        passed = {m: {p for p, d in ps if d in _WRITING_DIRECTIONS and p in out.get(m, ())}
                  for m, ps in own.items() if m not in rtl_ports}
        grown = {m: w for m, w in passed.items() if w and w != drives.get(m)}
        if not grown:
            break
        drives.update(grown)
    whole = {m: set().union(*(_connected(inst, ports[t], drives[t], whole=True)
                              for t, inst in insts if t in drives))
             for m, insts in sites.items()}
    for names in (out, whole):
        _down(names, sites, own, rtl_ports)
    return ({m: frozenset(n & variables.get(m, set())) for m, n in whole.items() if n},
            {m: frozenset(n & (variables.get(m, set()) | nets.get(m, set())))
             for m, n in out.items() if n})


def _down(driven: dict[str, set[str]], sites: Mapping[str, list[tuple[str, Any]]],
          own: Mapping[str, tuple[tuple[str, str], ...]],
          rtl_ports: Mapping[str, Any]) -> None:
    """Grow ``driven`` (per testbench unit, its names an RTL output drives) down into
    the testbench units an instance connects such a name to: the port is the same
    signal inside (Verilator merges it), so a ``force`` of it there forces the DUT's
    (a helper's ``force w`` on its output port: 44.14 -> 68.58 %). A fixpoint."""
    grown = True
    while grown:
        grown = False
        for m, insts in sites.items():
            names = driven.get(m, set())
            for t, inst in insts:
                if t in rtl_ports or t not in own or not names:
                    continue
                ports = _ports_connected_to(inst, own[t], names)
                if not ports <= driven.get(t, set()):
                    driven.setdefault(t, set()).update(ports)
                    grown = True


def _ports_connected_to(inst: Any, ports: tuple[tuple[str, str], ...], names: set[str]
                        ) -> set[str]:
    """The ports of ``inst`` connected to one of the base ``names`` (named, positional,
    ``.name`` and ``.*`` connections)."""
    found: set[str] = set()
    declared = {p for p, _ in ports}
    for i, conn in enumerate(_connections(inst)):
        if isinstance(conn, syntax.WildcardPortConnectionSyntax):
            found |= declared & names
        elif isinstance(conn, syntax.NamedPortConnectionSyntax):
            actual = ({p[0] for p in _lvalue_paths(conn.expr) if len(p) == 1}
                      if conn.expr is not None else {conn.name.valueText})
            if actual & names:
                found.add(conn.name.valueText)
        elif isinstance(conn, syntax.OrderedPortConnectionSyntax) and i < len(ports) and \
                {p[0] for p in _lvalue_paths(conn.expr) if len(p) == 1} & names:
            found.add(ports[i][0])
    return found


def _connected(inst: Any, ports: tuple[tuple[str, str], ...], writes: set[str],
               whole: bool = False) -> set[str]:
    """The base names an instance connects to the ports ``writes``; when ``whole``,
    only those connected whole (no select on the name: ``.q(obs)``, ``.q({a, b})``)."""
    names = _lvalue_paths if not whole else _whole_names
    found: set[str] = set()
    for i, conn in enumerate(_connections(inst)):
        if isinstance(conn, syntax.WildcardPortConnectionSyntax):
            found |= writes
        elif isinstance(conn, syntax.NamedPortConnectionSyntax):
            if conn.name.valueText in writes:
                found |= ({p[0] for p in names(conn.expr) if len(p) == 1}
                          if conn.expr is not None else {conn.name.valueText})
        elif isinstance(conn, syntax.OrderedPortConnectionSyntax) and i < len(ports) and \
                ports[i][0] in writes:
            found |= {p[0] for p in names(conn.expr) if len(p) == 1}
    return found


def _whole_names(expr: Any) -> list[list[str]]:
    """The paths of :func:`_lvalue_paths` that ``expr`` names whole: a select
    (``obs[3:0]``, ``mem[0]``, ``s.f``) names a part of its base."""
    if expr is None or expr.kind in (SK.ElementSelectExpression, SK.MemberAccessExpression,
                                     SK.IdentifierSelectName):
        return []
    if expr.kind == SK.ParenthesizedExpression:
        return _whole_names(expr.expression)
    if expr.kind in (SK.SimplePropertyExpr, SK.SimpleSequenceExpr):
        return _whole_names(expr.expr)
    if expr.kind in (SK.ConcatenationExpression, SK.StreamingConcatenationExpression):
        return [p for item in expr.expressions
                for p in _whole_names(item if isinstance(item, syntax.ExpressionSyntax)
                                      else getattr(item, "expression", None))]
    return _lvalue_paths(expr)


def _module_ports(module: Any) -> list[tuple[str, str]]:
    ports: list[tuple[str, str]] = []
    plist = module.header.ports
    direction = "inout"
    if isinstance(plist, syntax.AnsiPortListSyntax):
        for port in plist.ports:
            header = getattr(port, "header", None)
            tok = getattr(header, "direction", None)
            if tok is not None and tok.valueText:
                direction = tok.valueText
            decl = getattr(port, "declarator", None)
            if decl is not None:
                ports.append((decl.name.valueText, direction))
        return ports
    declared: dict[str, str] = {}
    for member in module.members:
        if isinstance(member, syntax.PortDeclarationSyntax):
            tok = getattr(member.header, "direction", None)
            for decl in member.declarators:
                if isinstance(decl, syntax.DeclaratorSyntax):
                    declared[decl.name.valueText] = tok.valueText if tok else "inout"
    if isinstance(plist, syntax.NonAnsiPortListSyntax):
        for port in plist.ports:
            name = str(port).strip()
            if name.isidentifier():
                ports.append((name, declared.get(name, "inout")))
    return ports


# -- parameters, on the elaboration ------------------------------------------------------


def parameter_changes(rtl_text: str, tb_text: str, tb_name: str, dut_module: str,
                      dut_hier: str, task_parameters: Mapping[str, str],
                      elaboration: Elaboration | None = None) -> list[str]:
    """Reasons when the measured DUT instance ``dut_hier`` of Verilator's view (its RTL
    part ``rtl_text`` and testbench part ``tb_text``; ``elaboration``, theirs when
    already made) is elaborated with parameter values other than the task's:
    ``task_parameters`` over the declaration's defaults (IEEE 1800 23.10), compared
    value by value on pyslang's elaboration of both. Every parameter of the DUT module
    counts, local ones included (they follow from the others). Empty when they agree or
    when pyslang cannot find the instance (the build then decides)."""
    actual = _instance_parameters(
        elaboration or Elaboration.of(rtl_text, tb_text, tb_name, dut_hier.split(".")[0]),
        dut_hier)
    overrides = ", ".join(f".{k}({v})" for k, v in task_parameters.items())
    top = (f"module llm4cov_parameter_reference;\n  {dut_module} "
           f"{'#(' + overrides + ') ' if overrides else ''}u ();\nendmodule\n")
    expected = _instance_parameters(
        Elaboration.of(rtl_text, top, "reference.sv", "llm4cov_parameter_reference"),
        "llm4cov_parameter_reference.u")
    if actual is None or expected is None:
        return []
    changed = [f"{name} = {value} (the task's: {expected[name]})"
               for name, value in actual.items()
               if name in expected and value != expected[name]]
    if not changed:
        return []
    return [f"{tb_name}: the DUT `{dut_hier}` is elaborated with parameters other than "
            f"the task's: {'; '.join(changed)}; instantiate it with the task's parameters"]


def interface_parameter_changes(elaboration: Elaboration, rtl_text: str, tb_name: str,
                                task_parameters: Mapping[str, str]) -> list[str]:
    """Reasons for each instance of an RTL interface (the DUT's interface ports take
    them) elaborated with parameter values other than the interface's defaults (a
    parameter the task sets by name may differ): the DUT reads them through its port
    (``filt_if #(.BYPASS(1)) bus`` picked the DUT's easy generate branch: 85.42 -> 100 %,
    a thirteenth red team; ``defparam bus.BYPASS`` too). Empty when none."""
    found = []
    for sym in elaboration.symbols():
        if not (isinstance(sym, ast.InstanceSymbol) and sym.isInterface) or \
                elaboration.in_tb(sym.definition.location) or \
                not elaboration.in_tb(sym.location):  # the testbench's instance only
            continue
        name = sym.definition.name
        expected = _interface_defaults(rtl_text, name)
        if expected is None:
            continue
        changed = [f"{p.name} = {value} (its default: {expected[p.name]})"
                   for p in sym.body.parameters
                   if (value := _value(p)) != expected.get(p.name, value)
                   and p.name not in task_parameters]
        if changed:
            found.append(f"{tb_name}: `{sym.hierarchicalPath}`, an instance of the RTL's "
                         f"interface `{name}`, has parameters other than its defaults: "
                         f"{'; '.join(changed)} (the DUT reads them through its port)")
    return found


@functools.lru_cache(maxsize=32)
def _interface_defaults(rtl_text: str, name: str) -> dict[str, str] | None:
    """``{parameter: value}`` of the RTL interface ``name`` instantiated alone with its
    defaults (None: not found)."""
    top = f"module llm4cov_interface_reference;\n  {name} u ();\nendmodule\n"
    return _instance_parameters(
        Elaboration.of(rtl_text, top, "reference.sv", "llm4cov_interface_reference"),
        "llm4cov_interface_reference.u")


def _instance_parameters(elaboration: Elaboration, hier: str) -> dict[str, str] | None:
    """``{parameter: value}`` of the instance at ``hier`` in the elaboration, None when
    not found."""
    found = [s for s in elaboration.symbols()
             if isinstance(s, ast.InstanceSymbol) and s.hierarchicalPath == hier]
    if not found:
        return None
    return {p.name: _value(p) for p in found[0].body.parameters}


def _value(param: Any) -> str:
    """A parameter's value for comparison: an integral value as its integer (so
    ``8``, ``32'd8`` and ``'h8`` agree), a type parameter's type as its canonical
    type (``word_t`` and ``logic [31:0]`` agree; an overridden ``type T`` narrowed a
    DUT's registers, 83.06 -> 100 %), anything else as pyslang writes it. A value
    pyslang cannot give reads as unknown (``?``), unequal to any value it can give."""
    if isinstance(param, ast.TypeParameterSymbol):
        return f"type {param.targetType.type.canonicalType}"
    value = getattr(param, "value", None)
    if value is None:
        return f"?{getattr(param, 'name', '')}"
    text = str(value)
    digits = text.split("'")[-1].lstrip("sS")
    base = {"d": 10, "h": 16, "b": 2, "o": 8}.get(digits[:1].lower())
    try:
        return str(int(digits[1:].replace("_", ""), base)) if base and "'" in text \
            else str(int(text))
    except ValueError:
        return text


class CheckResult(NamedTuple):
    """What :func:`judge` found: ``reasons`` the testbench's score would not be its
    stimulus's own, and ``dut_values``: reasons for DUT parameter values pyslang and
    Verilator may evaluate differently (a user function, an ``x``), when nothing else
    is wrong; the caller asks the simulator's own elaboration for those
    (:meth:`~llm4cov.sim.backends.base.SimBackend.elaborated_parameters`), or refuses."""

    reasons: list[str]
    dut_values: Sequence[str] = ()
    #: pyslang's errors in the testbench's text (``Elaboration.unelaborated``): code no
    #: check saw; the caller refuses the testbench when Verilator builds it.
    unelaborated: Sequence[str] = ()
    #: Reasons for values pyslang may evaluate otherwise given elsewhere (a wrapper, an
    #: interface, a generate condition), when nothing else is wrong; the caller compares
    #: ``shape`` (:func:`~llm4cov.sim.safety.shape.tb_shape`) with the simulator's
    #: elaboration (:func:`~llm4cov.sim.safety.shape.disagreements`), or refuses.
    elsewhere: Sequence[str] = ()
    shape: TbShape | None = None


def check(tb_text: str, tb_name: str, rtl_text: str, rtl_modules: Iterable[str],
          dut_module: str, dut_hier: str, task_parameters: Mapping[str, str]) -> list[str]:
    """:func:`judge`'s reasons, a parameter value it cannot be sure of refused (no
    simulator settles it here)."""
    found = judge(tb_text, tb_name, rtl_text, rtl_modules, dut_module, dut_hier,
                  task_parameters)
    return found.reasons or list(found.dut_values) or list(found.elsewhere)


def judge(tb_text: str, tb_name: str, rtl_text: str, rtl_modules: Iterable[str],
          dut_module: str, dut_hier: str, task_parameters: Mapping[str, str],
          top_overrides: Mapping[str, str] | None = None) -> CheckResult:
    """Every reason the testbench's score would not be its stimulus's own (empty: none),
    the testbench's top elaborated with ``top_overrides`` (the build's ``-G``; None: the
    task's parameters the top declares in ``tb_text``):
    :func:`dut_writes` on the testbench's part ``tb_text`` of Verilator's view, then
    :func:`~llm4cov.sim.safety.drivers.driver_reasons` on the elaboration of the view
    (``rtl_text``: its RTL part), then, when the task sets parameters or the testbench
    overrides a parameter of a DUT-module instance, :func:`parameter_changes` on it.

    Raises:
        ParseLimitError: pyslang cannot parse the testbench (nesting too deep).
    """
    tree = parse_tree(tb_text, tb_name)
    hierarchy = Hierarchy.of(rtl_modules, Design(tree, VIRTUAL_ROOT).decls(), tree,
                             rtl_declarations(rtl_text))
    top = dut_hier.split(".")[0]
    if top_overrides is None:  # (the caller's are the build's: TestbenchPlan.top_overrides)
        declared = module_parameters(tree, top) if task_parameters else set()
        top_overrides = {k: v for k, v in task_parameters.items() if k in declared}
    # the build's -G on the testbench's top (a twenty-third red team: the check saw the
    # top's default, the build the task's value, 69.84 -> 71.43 %)
    elaboration = functools.partial(Elaboration.of, rtl_text, tb_text, tb_name, top,
                                    top_overrides)
    made, through = None, None
    if syntax_nodes(tree.root, (SK.VirtualInterfaceType,)):
        made = elaboration()
        members = dut_interface_members(made, dut_hier).values()
        through = handle_writes(made, dut_hier)
        hierarchy = dataclasses.replace(hierarchy,
                                        virtual_members=frozenset().union(*members),
                                        virtual_handles=_virtual_handles(tree),
                                        virtual_cleared=through.cleared)
    reasons = dut_writes(tree, hierarchy) or unit_shadows(tree, rtl_text)
    if reasons:
        return CheckResult(reasons)
    made = made or elaboration()
    through = through or HandleWrites([], frozenset(), subroutine_calls(made, None))
    elsewhere, at_dut = unsure_overrides(tree, dut_module)
    reasons = unfollowed_randsequences(tree) or dead_binds(tree, made) or \
        forward_references(tree, made) or \
        dut_subroutine_calls(made, dut_hier) or \
        driver_reasons(made, tb_name, dut_module, dut_hier, through.calls) or \
        unrecorded_writes(made, dut_hier, through.calls) or through.reasons or \
        interface_parameter_changes(made, rtl_text, tb_name, task_parameters)
    if reasons:
        return CheckResult(reasons)
    # values elsewhere pyslang may evaluate otherwise: its elaboration must be the
    # simulator's, compared by the caller
    shape = tb_shape(made, _value) if elsewhere else None
    unelaborated = made.unelaborated()
    if at_dut:  # pyslang's values are not Verilator's: the simulator's elaboration decides
        return CheckResult([], at_dut, unelaborated, elsewhere, shape)
    if not (task_parameters or _overrides(tree, dut_module)):
        return CheckResult([], (), unelaborated, elsewhere, shape)
    return CheckResult(parameter_changes(rtl_text, tb_text, tb_name, dut_module, dut_hier,
                                         task_parameters, made), (), unelaborated,
                       elsewhere, shape)


def _overrides(tree: syntax.SyntaxTree, dut_module: str) -> bool:
    """Whether the tree instantiates ``dut_module`` with a parameter value assignment."""
    found = []

    def visit(node: object) -> bool:
        if isinstance(node, syntax.HierarchyInstantiationSyntax) and \
                node.type.valueText == dut_module and node.parameters is not None:
            found.append(node)
        return not found

    tree.root.visit(visit)
    return bool(found)


#: Declarations at compilation-unit scope (outside any module, package, class).
_UNIT_DECLARATIONS = (SK.ParameterDeclarationStatement, SK.DataDeclaration,
                      SK.NetDeclaration, SK.TypedefDeclaration, SK.FunctionDeclaration,
                      SK.TaskDeclaration, SK.LetDeclaration)


def unit_shadows(tree: syntax.SyntaxTree, rtl_text: str) -> list[str]:
    """Reasons for each name the testbench declares at compilation-unit scope that the
    RTL's text also names: Verilator binds the DUT's reference to the testbench's
    declaration where pyslang binds it to an RTL package's wildcard import (``import
    pkg::*;`` at file level), so neither the parameter check nor the elaboration sees
    the change (a ``localparam MODE`` and a function ``is_magic``: 84.49 -> 97.37 % and
    90.43 -> 99.38 %, a thirteenth red team). Empty when none."""
    declared: list[tuple[str, Any]] = []
    root: Any = tree.root  # a file of one declaration is that declaration
    for member in (root.members if root.kind == SK.CompilationUnit else [root]):
        if member.kind not in _UNIT_DECLARATIONS:
            continue
        if member.kind in (SK.FunctionDeclaration, SK.TaskDeclaration):
            name = getattr(member.prototype.name, "identifier", None)
            declared += [(name.valueText, member)] if name is not None else []
            continue
        if member.kind == SK.TypedefDeclaration:
            declared.append((member.name.valueText, member))
        elif member.kind == SK.LetDeclaration:
            declared.append((member.identifier.valueText, member))
        # every name it declares: declarators, enum members, type parameters
        declared += [(d.name.valueText, member)
                     for d in syntax_nodes(member, (SK.Declarator, SK.TypeAssignment))]
    if not declared:
        return []
    named = _rtl_free_names(rtl_text)
    sm = tree.sourceManager
    return [f"{sm.getFileName(node.sourceRange.start).removeprefix(VIRTUAL_ROOT + '/')}:"
            f"{sm.getLineNumber(node.sourceRange.start)}: the testbench declares `{name}` "
            "outside any module, a name the RTL uses: the DUT's reference could bind to "
            "the testbench's declaration" for name, node in declared if name in named]


@functools.lru_cache(maxsize=16)
def _rtl_free_names(rtl_text: str) -> frozenset[str]:
    """The identifiers the RTL's modules, interfaces and programs use by a bare name
    but do not declare themselves (a name a module declares, its parameter or typedef,
    resolves there first; ``pkg::name`` names its package's): those resolve through a
    wildcard import or the compilation unit, where a testbench declaration could take
    them."""
    free: set[str] = set()

    def used(unit: Any) -> set[str]:
        names: set[str] = set()

        def visit(node: Any) -> Any:
            if isinstance(node, parsing.Token):
                if node.kind == parsing.TokenKind.Identifier:
                    names.add(node.valueText)
                return True
            scoped = node.kind == SK.ScopedName and node.separator.valueText == "::"
            return ast.VisitAction.Skip if scoped else ast.VisitAction.Advance

        unit.visit(visit)
        return names

    def visit(node: Any) -> Any:
        if isinstance(node, parsing.Token):
            return True
        if node.kind not in (SK.ModuleDeclaration, SK.InterfaceDeclaration,
                             SK.ProgramDeclaration):
            return True
        local = {d.name.valueText for d in syntax_nodes(node, (SK.Declarator,
                                                               SK.TypeAssignment))}
        local |= {t.name.valueText for t in syntax_nodes(node, (SK.TypedefDeclaration,))}
        local |= {p for p, _ in _module_ports(node)}
        free.update(used(node) - local)
        return ast.VisitAction.Skip  # (a syntax visit descends past a plain False)

    parse_tree(rtl_text, "llm4cov_rtl_names.sv").root.visit(visit)
    return frozenset(free)


#: Every syntax kind: :func:`syntax_nodes` with it lists every node (a set: one lookup).
_ALL_KINDS = frozenset(SK.__members__.values())
#: System functions a parameter value may call: both tools compute them alike.
_PLAIN_SYSTEM_CALLS = frozenset({
    "$clog2", "$bits", "$size", "$left", "$right", "$high", "$low", "$increment",
    "$dimensions", "$unpacked_dimensions", "$signed", "$unsigned", "$countones"})


def unsure_overrides(tree: syntax.SyntaxTree, dut_module: str
                     ) -> tuple[list[str], list[str]]:
    """Reasons for each parameter value the testbench gives an instance of
    ``dut_module``, or of a testbench module that holds one (a wrapper passes it on, or a
    ``defparam`` sets it), that is computed with a user function, an ``x``/``z`` value, a
    division or a select (directly or through the testbench's parameters): pyslang and
    Verilator evaluate those differently (a function returning ``c ? 2 : 1`` on an unset
    ``logic c`` was 0 to pyslang, the default, and 1 to Verilator, which pruned the
    DUT's hard branch: 84.49 -> 97.37 %, a twelfth red team; a ``defparam`` of a
    wrapper's value, 64.68 -> 75.00 %, a twenty-second), so the check cannot compare
    the value with the task's. Two lists: the reasons elsewhere (a wrapper's, an
    interface's, another module's value, a ``defparam``, a generate condition), and those
    of values given to an instance of ``dut_module`` itself (Verilator's own elaboration
    can settle those: the caller's).
    Both empty when every value is plain."""
    params: dict[str, list[Any]] = {}
    sites: list[tuple[str, Any]] = []  # (the unit it lies in, an instantiation)
    unit = [""]

    def collect(node: object) -> bool:
        if isinstance(node, syntax.ModuleDeclarationSyntax):
            unit[0] = node.header.name.valueText
        if isinstance(node, (syntax.ParameterDeclarationSyntax, syntax.EnumTypeSyntax)):
            for d in (node.declarators if hasattr(node, "declarators") else node.members):
                if getattr(d, "initializer", None) is not None:
                    params.setdefault(d.name.valueText, []).append(d.initializer.expr)
        elif isinstance(node, syntax.TypeParameterDeclarationSyntax):
            for d in node.declarators:  # `parameter type T = logic [f():0]`
                if isinstance(d, syntax.TypeAssignmentSyntax) and d.assignment is not None:
                    params.setdefault(d.name.valueText, []).append(d.assignment.type)
        elif isinstance(node, syntax.LetDeclarationSyntax):  # `let L = f();`: its body
            params.setdefault(node.identifier.valueText, []).append(node.expr)
        elif isinstance(node, syntax.ImplicitAnsiPortSyntax):
            d = node.declarator
            params.setdefault(d.name.valueText, []).extend([node.header, *d.dimensions])
        elif isinstance(node, (syntax.DataDeclarationSyntax, syntax.NetDeclarationSyntax)):
            # its type's widths: `$bits(w)` of `logic [(f() === 1):0] w` is f()'s value
            # (a sixteenth red team: 81.41 -> 100 %)
            for d in node.declarators:
                if isinstance(d, syntax.DeclaratorSyntax):
                    params.setdefault(d.name.valueText, []).extend([node.type, *d.dimensions])
        elif isinstance(node, syntax.TypedefDeclarationSyntax):
            params.setdefault(node.name.valueText, []).extend([node.type, *node.dimensions])
        elif isinstance(node, syntax.HierarchyInstantiationSyntax):
            sites.append((unit[0], node))
        elif isinstance(node, syntax.DefParamAssignmentSyntax):
            defparams.append(node)
        return True

    defparams: list[Any] = []  # (a value a wrapper passes on to the DUT: red team 22)
    tree.root.visit(collect)
    # every instance's: the DUT's, a wrapper's that passes it on, an RTL interface's
    # the DUT reads through its port, any module's a name may reach
    sites = [(u, n) for u, n in sites if n.parameters is not None]
    if not sites and not defparams and not syntax_nodes(
            tree.root, (SK.IfGenerate, SK.CaseGenerate, SK.LoopGenerate)):
        return [], []
    sm = tree.sourceManager
    found: list[str] = []
    at_dut: list[str] = []

    def where(node: Any) -> str:
        loc = node.sourceRange.start
        return f"{sm.getFileName(loc).removeprefix(VIRTUAL_ROOT + '/')}:{sm.getLineNumber(loc)}"

    for gen in syntax_nodes(tree.root, (SK.IfGenerate, SK.CaseGenerate, SK.LoopGenerate)):
        exprs = ([gen.initialExpr, gen.stopExpr, gen.iterationExpr]
                 if gen.kind == SK.LoopGenerate else [gen.condition])
        if gen.kind == SK.CaseGenerate:  # each item's expressions decide as much
            exprs += [e for item in gen.items for e in getattr(item, "expressions", [])
                      if isinstance(e, syntax.ExpressionSyntax)]
        what = next((w for e in exprs if e is not None
                     and (w := _unsure(e, params, set()))), None)
        if what:
            found.append(f"{where(gen)}: the testbench's generate condition is computed "
                         f"with {what}, which Verilator and the check may evaluate "
                         "differently (a branch one tool drops, the other builds)")
    for d in defparams:
        what = _unsure(d.setter.expr, params, set(), True)
        if what:
            loc = d.sourceRange.start
            found.append(f"{sm.getFileName(loc).removeprefix(VIRTUAL_ROOT + '/')}:"
                         f"{sm.getLineNumber(loc)}: the `defparam` of `{str(d.name).strip()}` "
                         f"is computed with {what}, which Verilator and the check may "
                         "evaluate differently: give it as a plain constant")
    for _, site in sites:
        at_the_dut = site.type.valueText == dut_module
        for i, assign in enumerate(a for a in site.parameters.parameters
                                   if isinstance(a, syntax.ParamAssignmentSyntax)):
            expr = getattr(assign, "expr", None)
            # a name the text does not declare (a genvar, a port, a form not read here)
            # leaves the DUT's value to the simulator too
            what = _unsure(expr, params, set(), at_the_dut) if expr is not None else None
            if what:
                name = assign.name.valueText if hasattr(assign, "name") else f"#{i + 1}"
                loc = assign.sourceRange.start
                into = at_dut if at_the_dut else found
                into.append(f"{sm.getFileName(loc).removeprefix(VIRTUAL_ROOT + '/')}:"
                             f"{sm.getLineNumber(loc)}: the value of the parameter "
                             f"`{name}` of `{site.type.valueText}` is computed with "
                             f"{what}, which Verilator and the check may evaluate "
                             "differently: give it as a plain constant")
    return found, at_dut


def _unsure(expr: Any, params: Mapping[str, list[Any]], seen: set[str],
            strict: bool = False) -> str | None:
    """What makes a parameter value unsure (see :func:`unsure_overrides`), or None. A
    name counts with every declaration of it in the text (a parameter's value, an enum
    member's, a variable's, port's or typedef's type, a type parameter's default, a
    ``let``'s body: which one Verilator binds is not read here); with ``strict``, a name
    the text does not declare is unsure too. A division by a nonzero integer (a
    literal, or a name all of whose declarations are one) is plain (``CLK_FREQ /
    BAUD_RATE``)."""
    for node in syntax_nodes(expr, _ALL_KINDS):
        kind = node.kind
        if kind == SK.InvocationExpression:
            left = node.left
            if left.kind != SK.SystemName or \
                    left.systemIdentifier.valueText not in _PLAIN_SYSTEM_CALLS:
                return "a function call"
        elif kind in (SK.UnbasedUnsizedLiteralExpression, SK.IntegerVectorExpression) and \
                any(c in str(node).lower().split("'")[-1] for c in "xz?"):
            return "an x or z value"
        elif kind in (SK.DivideExpression, SK.ModExpression) and \
                not _nonzero(node.right, params):
            return "a division"
        elif kind == SK.IntegerLiteralExpression and \
                _decimal(node.literal.rawText) >= 1 << 31:
            return "an unsized integer wider than 32 bits"  # 0 to pyslang, not Verilator
        elif kind == SK.StringLiteralExpression and "\\" in node.literal.rawText:
            return "a string escape"  # `"\8"`: 56 to pyslang, 0 to Verilator
        elif kind in (SK.ElementSelectExpression, SK.IdentifierSelectName):
            return "a select"
        elif kind == SK.IdentifierName and (name := node.identifier.valueText) in params \
                and name not in seen:
            seen.add(name)
            for value in params[name]:
                if what := _unsure(value, params, seen, strict):
                    return what
        elif strict and kind == SK.IdentifierName and name not in params and \
                not _member_name(node):
            return f"`{name}`, a name the check does not follow"
        elif isinstance(node, syntax.ExpressionSyntax) and kind not in _PLAIN_FORMS:
            # a form not known to evaluate alike (`0 ** -1` is x to Verilator, 0 to
            # pyslang; a real cast; a member of a struct: a twenty-third red team)
            return f"a {_FORM_WORDS.get(kind, 'form the check does not follow')}"
    return None


#: Expression and type forms pyslang and Verilator evaluate alike in a constant of
#: integers (IEEE 1800 11.4): anything else in a parameter value is unsure
#: (:func:`_unsure`); calls, x/z literals, divisions, selects and names are judged
#: before this list is read.
_PLAIN_FORMS = frozenset(getattr(SK, k) for k in (
    "IntegerLiteralExpression", "IntegerVectorExpression",
    "UnbasedUnsizedLiteralExpression", "StringLiteralExpression", "IdentifierName",
    "ScopedName", "SystemName", "InvocationExpression", "ParenthesizedExpression",
    "ConcatenationExpression", "MultipleConcatenationExpression", "ConditionalExpression",
    "UnaryPlusExpression", "UnaryMinusExpression", "UnaryBitwiseNotExpression",
    "UnaryLogicalNotExpression", "UnaryBitwiseAndExpression", "UnaryBitwiseNandExpression",
    "UnaryBitwiseOrExpression", "UnaryBitwiseNorExpression", "UnaryBitwiseXorExpression",
    "UnaryBitwiseXnorExpression", "AddExpression", "SubtractExpression",
    "MultiplyExpression", "DivideExpression", "ModExpression", "BinaryAndExpression",
    "BinaryOrExpression", "BinaryXorExpression", "BinaryXnorExpression",
    "LogicalAndExpression", "LogicalOrExpression", "EqualityExpression",
    "InequalityExpression", "CaseEqualityExpression", "CaseInequalityExpression",
    "GreaterThanExpression", "GreaterThanEqualExpression", "LessThanExpression",
    "LessThanEqualExpression", "LogicalShiftLeftExpression", "LogicalShiftRightExpression",
    "ArithmeticShiftLeftExpression", "ArithmeticShiftRightExpression",
    # a generate loop's step
    "PostincrementExpression", "PostdecrementExpression", "UnaryPreincrementExpression",
    "UnaryPredecrementExpression", "AssignmentExpression", "AddAssignmentExpression",
    "SubtractAssignmentExpression", "MultiplyAssignmentExpression",
    "LogicalLeftShiftAssignmentExpression", "LogicalRightShiftAssignmentExpression",
    # types (their widths are expressions, read as such)
    "LogicType", "BitType", "RegType", "IntType", "IntegerType", "ByteType",
    "ShortIntType", "LongIntType", "TimeType", "ImplicitType", "NamedType", "StringType",
    "StructType", "UnionType", "EnumType"))
#: Words for some forms outside :data:`_PLAIN_FORMS` (a reason names the form).
_FORM_WORDS = {SK.PowerExpression: "power (`**`)", SK.CastExpression: "cast",
               SK.SignedCastExpression: "cast", SK.RealLiteralExpression: "real value",
               SK.RealType: "real type", SK.ShortRealType: "real type",
               SK.RealTimeType: "real type", SK.MemberAccessExpression: "member access",
               SK.AssignmentPatternExpression: "assignment pattern"}


def _decimal(text: str) -> int:
    """An unsized decimal literal's value (``4_294_967_296``); 0 when it reads as none."""
    digits = text.replace("_", "")
    return int(digits) if digits.isdigit() else 0


def _member_name(node: Any) -> bool:
    """A name of a scoped name other than its first, or a package's or class's before
    ``::`` (``pkg::W``: both), not a value looked up here."""
    parent = node.parent
    return parent is not None and parent.kind == SK.ScopedName and (
        parent.separator.valueText == "::"
        or parent.right.sourceRange.start.offset == node.sourceRange.start.offset)


def _nonzero(expr: Any, params: Mapping[str, list[Any]]) -> bool:
    """Whether ``expr`` is a nonzero integer literal, or a name all of whose
    declarations' values are (one level)."""
    while expr.kind == SK.ParenthesizedExpression:
        expr = expr.expression
    if expr.kind == SK.IntegerLiteralExpression:
        return str(expr).strip().replace("_", "").isdigit() and int(
            str(expr).strip().replace("_", "")) != 0
    if expr.kind == SK.IdentifierName and (values := params.get(expr.identifier.valueText)):
        return all(_nonzero(v, {}) for v in values)
    return False
