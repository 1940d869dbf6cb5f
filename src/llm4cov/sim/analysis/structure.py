"""Pre-compile structure checks: which module is the testbench top, where the DUT is.

Works on the syntax tree only (pyslang), so it answers even for testbenches with
semantic errors; Verilator reports those. The tree is the one of Verilator's own view
of the sources (:class:`~llm4cov.sim.safety.static_check.Preprocessed`, the ``verilator -E`` text
the static check reads) whenever there is one: which modules the testbench declares,
which the RTL declares, what the testbench instantiates and binds is decided from what
Verilator compiles, never from a parse that sees other macros. As Verilator does, the
first declaration of a module name wins (the RTL comes before the testbench), except
that a module the testbench's own text declares is always the testbench's: its points
never count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyslang
from pyslang import syntax

from llm4cov.sim.model.coverage import DesignModules
from llm4cov.tasks.hdl import (
    VIRTUAL_ROOT,
    Design,
    InstanceLimitError,
    ModuleDecl,
    ParseLimitError,
    instance_paths,
    module_decls,
    module_parameters,
    own_offset,
    packages_of,
    parse_tree,
    syntax_nodes,
    text_decls,
    top_modules,
)
from llm4cov.tasks.model import SourceFile

if TYPE_CHECKING:
    from llm4cov.sim.safety.static_check import Preprocessed


class StructureError(ValueError):
    """The testbench cannot be simulated as the task asks (message is for the model)."""


@dataclass(frozen=True)
class TestbenchPlan:
    """Where the testbench's top is and where the DUT instance lies below it.

    ``other_copies``: hierarchies of further instances of the DUT module;
    ``helpers``: modules the testbench declares and instantiates below its top;
    ``bound``: testbench modules bound (``bind``) into an RTL module. None of them
    ever counts as DUT coverage; the observation says so. ``modules``: which module
    names are RTL (only those count, :class:`DesignModules`); None when unknown.
    ``redeclared``: RTL module names the testbench declares again (rejected).
    ``top_parameters``: the overridable parameters the top declares in the text
    Verilator compiles (its view): the task's parameters of those names are the build's
    ``-G`` and the check's overrides alike (None: read from the raw testbench).
    ``dut_hier`` is the simulator's path of the DUT (its coverage's); ``ieee_hier`` the
    same instance's path in pyslang's elaboration (IEEE 1800 27.5) where the two name a
    directly nested generate block differently (:attr:`elaborated_hier`)."""

    tb_top: str
    dut_hier: str
    other_copies: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()
    bound: tuple[str, ...] = ()
    modules: DesignModules | None = None
    redeclared: tuple[str, ...] = ()
    top_parameters: frozenset[str] | None = None
    ieee_hier: str = ""

    @property
    def elaborated_hier(self) -> str:
        """The DUT's path in pyslang's elaboration (the checks that read it)."""
        return self.ieee_hier or self.dut_hier

    def top_overrides(self, parameters: Mapping[str, str], tb: SourceFile) -> dict[str, str]:
        """The task's ``parameters`` the build gives the top (``-G``): those it declares
        (:attr:`top_parameters`, else the raw testbench's ``tb``)."""
        if not parameters:
            return {}
        declared = self.top_parameters if self.top_parameters is not None \
            else module_parameters(tb, self.tb_top)
        return {k: v for k, v in parameters.items() if k in declared}

    def notes(self, dut_module: str) -> list[str]:
        """Notes for the observation about extra DUT copies and testbench modules."""
        notes = []
        if self.other_copies:
            notes.append(
                f"the testbench instantiates the DUT module `{dut_module}` "
                f"{len(self.other_copies) + 1} times; only `{self.dut_hier}` is measured "
                f"(not {', '.join(self.other_copies)})"
            )
        if self.helpers:
            notes.append(
                "testbench module(s) " + ", ".join(f"`{h}`" for h in self.helpers)
                + " are not part of the DUT: their coverage never counts"
            )
        if self.bound:
            notes.append(
                "testbench module(s) " + ", ".join(f"`{b}`" for b in self.bound)
                + " bound with `bind`: bound testbench modules are not DUT coverage"
            )
        return notes


def plan_testbench(
    rtl_files: list[SourceFile],
    tb: SourceFile,
    dut_module: str,
    dut_instance: str | None,
    view: Preprocessed | None = None,
) -> TestbenchPlan:
    """Find the testbench top module and the DUT instance path.

    ``dut_instance=None`` accepts any instance name (the first instance found).
    ``view``: Verilator's preprocessed view of the sources (the evaluator always passes
    it when Verilator produced one); without it the raw texts are parsed.

    Raises:
        StructureError: no module in the testbench, the DUT is not instantiated, it
            is instantiated under another name, or more than
            :data:`~llm4cov.tasks.hdl.MAX_INSTANCE_PATHS` times.
    """
    try:
        rtl_decls, tb_decls, tb_text, redeclared = _declarations(rtl_files, tb, view)
    except ParseLimitError as exc:
        raise StructureError(str(exc)) from exc
    if not tb_decls:
        raise StructureError(f"{tb.name}: no module declaration found in the testbench")
    decls: list[ModuleDecl] = rtl_decls + tb_decls
    tb_names = {d.name for d in tb_decls}
    tops = [m for m in top_modules(decls) if m in tb_names]
    if not tops:
        tops = [tb_decls[0].name]
    try:
        candidates = [(top, instance_paths(decls, top, dut_module)) for top in tops]
    except InstanceLimitError as exc:
        raise StructureError(f"{tb.name}: {exc}") from exc
    with_dut = [(top, paths) for top, paths in candidates if paths]
    if not with_dut:
        declared = ", ".join(sorted(tb_names))
        raise StructureError(
            f"{tb.name}: the testbench (module {declared}) does not instantiate the DUT "
            f"module `{dut_module}`"
            + (f"; instantiate it as `{dut_module} {dut_instance} (...)`" if dut_instance else "")
        )
    top, paths = with_dut[0]
    used = {mtype for d in decls for mtype, _ in d.instances}
    helpers = tuple(sorted((tb_names & used) - {top}))
    rtl_names = {d.name for d in rtl_decls}
    bound = _bound_modules(SourceFile(name=tb.name, content=tb_text))
    modules = DesignModules(frozenset(rtl_names), frozenset(tb_names),
                            _subtree(rtl_decls, dut_module))
    top_parameters = frozenset(module_parameters(SourceFile(name=tb.name, content=tb_text),
                                                 top))
    ieee = dict(zip(paths, instance_paths(decls, top, dut_module, ieee=True), strict=True))
    if dut_instance is None:
        return TestbenchPlan(top, paths[0], tuple(paths[1:]), helpers, bound, modules,
                             redeclared, top_parameters, _differs(ieee, paths[0]))
    named = [p for p in paths if p.rsplit(".", 1)[-1] == dut_instance]
    if not named:
        found = ", ".join(p.rsplit(".", 1)[-1] for p in paths)
        raise StructureError(
            f"{tb.name}: `{dut_module}` is instantiated as `{found}`, but the task requires "
            f"the instance name `{dut_instance}` (coverage is measured on {top}.{dut_instance})"
        )
    dut = min(named, key=lambda p: p.count("."))
    return TestbenchPlan(top, dut, tuple(p for p in paths if p != dut), helpers, bound,
                         modules, redeclared, top_parameters, _differs(ieee, dut))


def _differs(ieee: dict[str, str], path: str) -> str:
    """``path``'s IEEE 1800 name where it is not the simulator's, else ""."""
    return "" if ieee[path] == path else ieee[path]


def _subtree(rtl_decls: list[ModuleDecl], module: str) -> frozenset[str]:
    """``module`` and the RTL modules it instantiates at any depth (the RTL alone)."""
    kids = {d.name: [t for t, _ in d.instances] for d in rtl_decls}
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m not in seen and m in kids:
            seen.add(m)
            todo += kids[m]
    return frozenset(seen)


def _declarations(
    rtl_files: list[SourceFile], tb: SourceFile, view: Preprocessed | None
) -> tuple[list[ModuleDecl], list[ModuleDecl], str, tuple[str, ...]]:
    """``(RTL modules, testbench modules, testbench text, redeclared)``: from
    Verilator's ``view`` when given, else from the raw texts. The testbench's modules
    are those its part of the view declares that the RTL part does not, and every one
    its own text declares (not an RTL file it includes); the RTL's are the rest of the
    RTL part's. ``redeclared``: the RTL's module and package names the testbench's own
    text declares again (which of the two Verilator compiles is not the RTL's choice:
    measured, a testbench's trivial ``hard`` replaced the DUT's submodule, 7 line points
    to 1; a package could change the DUT's parameters)."""
    rtl_packages = frozenset().union(*(packages_of(f.content, f.name)[0] for f in rtl_files))
    packages = packages_of(tb.content, tb.name)[0] & rtl_packages
    if view is None:
        tb_decls = text_decls(tb.content, tb.name)  # untrusted: never its includes
        own = {d.name for d in tb_decls}
        rtl = module_decls(rtl_files)
        again = _again(own | _other_units(tb.content, tb.name), {d.name for d in rtl},
                       packages)
        return [d for d in rtl if d.name not in own], tb_decls, tb.content, again
    rtl_part = Design(parse_tree(view.rtl_part(), "llm4cov_rtl.sv"), VIRTUAL_ROOT).decls()
    tb_part = Design(parse_tree(view.tb_part(), tb.name), VIRTUAL_ROOT).decls()
    in_rtl = {d.name for d in rtl_part}
    rtl_files_named = {f.name for f in rtl_files}
    own = {d.name for d in tb_part
           if d.name not in in_rtl or d.file not in rtl_files_named}
    tb_decls = [d for d in tb_part if d.name in own]
    again = _again(own | _other_units(view.tb_part(), tb.name), in_rtl, packages)
    return [d for d in rtl_part if d.name not in own], tb_decls, view.tb_part(), again


def _other_units(text: str, name: str) -> set[str]:
    """The interfaces, programs and checkers a testbench text declares: Verilator names
    a point's module after them too, so one named like an RTL module's copy
    (``dutmod__mon``) would own the DUT's name (an interface bound into the DUT: 71.60
    -> 86.24 %, a nineteenth red team)."""
    kinds = (syntax.SyntaxKind.InterfaceDeclaration, syntax.SyntaxKind.ProgramDeclaration,
             syntax.SyntaxKind.CheckerDeclaration)
    found: set[str] = set()
    for node in syntax_nodes(parse_tree(text, name).root, kinds):
        named = getattr(node, "header", None) or node
        ident = getattr(named, "name", None)
        if ident is not None:
            found.add(ident.valueText)
    return found


def _again(own: set[str], rtl: set[str], packages: frozenset[str]) -> tuple[str, ...]:
    """The testbench's names (``own``) that are an RTL module's, or the name Verilator
    gives a parameter-specialized copy of one (``<module>__<suffix>``: the coverage
    model would read the copy's points as the testbench's), and the RTL ``packages``
    it declares again."""
    copies = {n for n in own if any(n.startswith(r + "__") for r in rtl)}
    return tuple(sorted(own & rtl | copies | packages))


def _bound_modules(tb: SourceFile) -> tuple[str, ...]:
    """Modules the testbench binds (``bind <target> <module> ...``) into the design:
    the testbench can only bind into the DUT's modules or instances (or its own)."""
    bound: set[str] = set()

    def visit(node: object) -> bool:
        if isinstance(node, syntax.BindDirectiveSyntax):
            instantiation: Any = node.instantiation  # a HierarchyInstantiationSyntax
            bound.add(instantiation.type.valueText)
        return True

    parse_tree(tb.content, tb.name).root.visit(visit)
    return tuple(sorted(bound))


def stop_offsets(f: SourceFile, bare: bool = False) -> list[tuple[int, int]]:
    """``(index, line)`` of every ``$stop`` token written in ``f``'s own text (not one
    a macro expands to, nor one of an included file): the ones
    :mod:`~llm4cov.sim.analysis.hints` compiles as ``$finish``. ``bare``: leave out a
    ``$stop`` on a line that also has ``$error``/``$fatal`` or an ``assert``, and one in
    an assertion's ``else`` action on any line (the RTL's rule: such a ``$stop`` reports
    a failure and stays an error report). A text
    without the characters ``$stop`` is not parsed (most are: the RTL's every call)."""
    if "$stop" not in f.content:
        return []
    tree = parse_tree(f.content, f.name)
    sm = tree.sourceManager
    found: list[tuple[int, int]] = []
    noisy: set[int] = set()

    def visit(node: object) -> bool:
        if not isinstance(node, pyslang.parsing.Token):
            return True
        line = sm.getLineNumber(node.location)
        if node.kind == pyslang.parsing.TokenKind.SystemIdentifier:
            if node.valueText == "$stop" and (at := own_offset(sm, node, f.content)) is not None:
                found.append((at, line))
            elif node.valueText in ("$error", "$fatal"):
                noisy.add(line)
        elif node.kind == pyslang.parsing.TokenKind.AssertKeyword:
            noisy.add(line)
        return True

    tree.root.visit(visit)
    if not bare:
        return sorted(found)
    # an assertion's failure action (`else $stop`), whatever its lines (a thirty-second
    # red team: `assert (c) else` / `$stop;` ended the run silently, no error counted)
    actions = [(own_offset(sm, block.elseClause.getFirstToken(), f.content),
                own_offset(sm, block.elseClause.getLastToken(), f.content))
               for block in syntax_nodes(tree.root, (syntax.SyntaxKind.ActionBlock,))
               if block.elseClause is not None]
    return sorted(at for at in found if at[1] not in noisy and not any(
        a is not None and b is not None and a <= at[0] <= b for a, b in actions))


def always_without_timing(tb: SourceFile) -> list[int]:
    """Lines of ``always`` blocks with no delay, event control or wait: they loop
    forever at time 0 (Verilator reports DIDNOTCONVERGE at line 1 instead)."""
    tree = parse_tree(tb.content, tb.name)
    lines: list[int] = []
    timing = {
        pyslang.parsing.TokenKind.Hash,
        pyslang.parsing.TokenKind.At,
        pyslang.parsing.TokenKind.DoubleHash,
        pyslang.parsing.TokenKind.WaitKeyword,
    }

    def visit(node: Any) -> bool:  # any pyslang node
        if getattr(node, "kind", None) == syntax.SyntaxKind.AlwaysBlock:
            has_timing = False

            def inner(n: object) -> bool:
                nonlocal has_timing
                if isinstance(n, pyslang.parsing.Token) and n.kind in timing:
                    has_timing = True
                return True

            node.visit(inner)
            if not has_timing:
                lines.append(tree.sourceManager.getLineNumber(node.sourceRange.start))
        return True

    tree.root.visit(visit)
    return lines
