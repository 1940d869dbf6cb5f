"""Names a testbench uses above their declaration, which pyslang binds elsewhere than
Verilator does (``docs/stimulus.md``).

IEEE 1800 (6.18, 23.9) has a name declared before it is used; slang follows that: a name
used above its declaration in a scope binds to an outer declaration of it (a
compilation-unit handle, a wildcard-imported package member, a module variable seen
from a class method), or is an error. Verilator binds a name in a scope to the scope's
own declaration whatever their order. Every check made on slang's binding is then made
on another variable than the one Verilator writes: a task above ``virtual cnt_if h =
bus;`` that wrote ``h.count`` was judged against an unset file-level ``h`` (53.57 ->
75.00 %, a fifteenth red team), and ``bus.count = x`` above the ``cnt_if bus(clk);``
instance against a package's class object ``p::bus``.

Refused: a name (a value or an instance) that slang binds to a declaration outside the
testbench scope that declares the name below the use (a module, interface, program,
package, class, subroutine, block, generate block, loop, the compilation unit). A
forward reference slang resolves to that very declaration (``$dumpvars(1, stim1.CLK)``
above ``stimulus_gen stim1``, a hierarchical name) binds the same in both tools and
passes; an error slang reports instead is refused after the build
(``Elaboration.unelaborated``).
"""

from __future__ import annotations

from typing import Any

from pyslang import ast, syntax

from llm4cov.sim.safety.drivers import Elaboration
from llm4cov.tasks.hdl import syntax_nodes

SK = syntax.SyntaxKind
EK = ast.ExpressionKind

#: The syntax nodes that are scopes of declarations.
_SCOPES = (SK.CompilationUnit, SK.ModuleDeclaration, SK.InterfaceDeclaration,
           SK.ProgramDeclaration, SK.PackageDeclaration, SK.ClassDeclaration,
           SK.FunctionDeclaration, SK.TaskDeclaration, SK.SequentialBlockStatement,
           SK.ParallelBlockStatement, SK.GenerateBlock, SK.ForLoopStatement)
#: Declarations whose declarators name values.
_VALUES = frozenset({SK.DataDeclaration, SK.NetDeclaration, SK.ParameterDeclaration,
                     SK.PortDeclaration, SK.ImplicitAnsiPort, SK.ExplicitAnsiPort,
                     SK.FunctionPort, SK.ForVariableDeclaration, SK.GenvarDeclaration})


def forward_references(tree: syntax.SyntaxTree, elab: Elaboration) -> list[str]:
    """Reasons (``file:line: ...``, in source order) for each use in the testbench tree
    ``tree`` (its part of the view, parsed alone) that the elaboration ``elab`` of the
    view binds outside the scope declaring the name below the use (see the module
    docstring). Empty when none."""
    scopes = [(node.sourceRange.start.offset, node.sourceRange.end.offset, _declared(node))
              for node in syntax_nodes(tree.root, _SCOPES)]
    if tree.root.kind in _SCOPES and not any(s == tree.root.sourceRange.start.offset
                                             for s, _, _ in scopes):
        root = tree.root
        scopes.append((root.sourceRange.start.offset, root.sourceRange.end.offset,
                       _declared(root)))
    scopes.sort(key=lambda s: s[1] - s[0])  # innermost first
    origin = elab.sources.getFullyOriginalLoc
    found: list[tuple[int, str]] = []

    def visit(node: Any) -> bool:
        if isinstance(node, ast.Expression) and node.kind in (EK.NamedValue,
                                                                EK.ArbitrarySymbol):
            use = origin(node.sourceRange.start)
            if use.buffer != elab.tb_buffer:
                return True
            sym: Any = getattr(node, "symbol", None)
            if sym is None:
                return True
            for start, end, names in scopes:
                if start <= use.offset <= end and (at := names.get(sym.name)) is not None:
                    decl = origin(sym.location)
                    inside = decl.buffer == elab.tb_buffer and start <= decl.offset <= end
                    if use.offset < at and not inside:
                        found.append((use.offset, f"{elab.where(node.sourceRange.start)}: "
                                      f"`{sym.name}` is used above its declaration, where "
                                      "pyslang and Verilator bind it to different "
                                      "declarations: declare it first"))
                    break
        return True

    elab.compilation.getRoot().visit(visit)
    return list(dict.fromkeys(reason for _, reason in sorted(found)))


def _declared(scope: Any) -> dict[str, int]:
    """Name -> offset of the first declaration of it that ``scope`` itself holds (not
    its inner scopes): values and instances."""
    out: dict[str, int] = {}
    first = scope.sourceRange.start.offset

    def visit(node: Any) -> Any:
        kind = getattr(node, "kind", None)
        if kind in _SCOPES and node.sourceRange.start.offset != first:
            return ast.VisitAction.Skip  # (pyslang's syntax visit descends past False)
        if kind in _VALUES:
            for d in syntax_nodes(node, (SK.Declarator,)):
                out.setdefault(d.name.valueText, d.sourceRange.start.offset)
            for ident in getattr(node, "identifiers", None) or []:  # a genvar's
                tok = getattr(ident, "identifier", None)
                if tok is not None:
                    out.setdefault(tok.valueText, ident.sourceRange.start.offset)
        elif kind == SK.HierarchyInstantiation:
            for inst in node.instances:
                decl = getattr(inst, "decl", None)
                if decl is not None:
                    out.setdefault(decl.name.valueText, decl.sourceRange.start.offset)
        return True

    scope.visit(visit)
    return out
