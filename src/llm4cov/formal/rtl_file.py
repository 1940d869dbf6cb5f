"""One RTL file's syntax for placing formal goals (:mod:`llm4cov.formal.goals`): the
file parsed alone with the macros it sees (the task's defines, then the `` `define``s of
the RTL files it `` `include``s, found by name: no include is opened from disk), indexed
by line (``if``/``else``/``case`` items, procedural statements, modules, their clocks,
local scopes, delays), every position a byte offset into the file's own text (a token of
a macro expansion is placed at the macro's use)."""

from __future__ import annotations

from collections import defaultdict

import pyslang
from pyslang import parsing, syntax

from llm4cov.tasks.hdl import (
    VIRTUAL_ROOT,
    ParseLimitError,
    encodable,
    include_names,
    isolated_source_manager,
    parse_tree,
)
from llm4cov.tasks.model import SourceFile

K = syntax.SyntaxKind


def _defines_of(source: SourceFile) -> list[str]:
    """The `` `define`` directives ``source`` makes (active branches only), as text."""
    out: list[str] = []

    def visit(node: object) -> bool:
        if isinstance(node, parsing.Token):
            for trivia in node.trivia:
                directive = trivia.syntax()
                if isinstance(directive, syntax.DefineDirectiveSyntax):
                    out.append(str(directive).strip())
        return True

    parse_tree(source.content, source.name).root.visit(visit)
    return out


def header_of(source: SourceFile, files: dict[str, SourceFile],
               defines: dict[str, str] | None, cache: dict[str, list[str]]) -> str:
    """The macros ``source`` sees from outside its own text, as `` `define`` lines: the
    task's defines, then those of the RTL files it `` `include``s (transitively, by
    name or by a path ending in that name; no include is opened from disk)."""
    lines = [f"`define {k} {v}" for k, v in (defines or {}).items()]
    seen = {source.name}
    todo = list(include_names(source.content))
    while todo:
        name = todo.pop(0)
        match = files.get(name) or next(
            (f for n, f in files.items() if n.endswith("/" + name)), None)
        if match is None or match.name in seen:
            continue
        seen.add(match.name)
        if match.name not in cache:
            cache[match.name] = _defines_of(match)
        lines += cache[match.name]
        todo += include_names(match.content)
    return "\n".join(lines)


def parse_with(source: SourceFile, header: str) -> syntax.SyntaxTree:
    """``source`` parsed alone like :func:`llm4cov.tasks.hdl.parse_tree` (no include
    opened), after a separate buffer of macro definitions ``header``."""
    if not header:
        return parse_tree(source.content, source.name)
    sm = isolated_source_manager()
    pp = parsing.PreprocessorOptions()
    pp.maxIncludeDepth = 0
    buffers = [sm.assignText(f"{VIRTUAL_ROOT}/<macros of {source.name}>", encodable(header)),
               sm.assignText(f"{VIRTUAL_ROOT}/{source.name}", encodable(source.content))]
    try:
        return syntax.SyntaxTree.fromBuffers(buffers, sm, pyslang.Bag([pp]))
    except RuntimeError as exc:
        raise ParseLimitError(f"{source.name}: nesting too deep for the parser "
                              f"({str(exc) or 'pyslang gave up'})") from None


_DELAY_KINDS = (K.DelayControl, K.Delay3)
_LOCAL_SCOPES = {K.FunctionDeclaration: "function", K.TaskDeclaration: "task",
                 K.LoopGenerate: "generate loop", K.GenerateBlock: "generate block"}
"""Scopes whose declarations module-level code cannot name (their arguments, locals,
genvars and loop variables)."""


class RtlFile:
    """One RTL file's syntax tree, indexed by line (byte offsets into ``data``; a token
    that comes from a macro expansion is placed at the macro's use in this text)."""

    def __init__(self, source: SourceFile, header: str = ""):
        self.name = source.name
        self.data = source.content.encode("utf-8", errors="surrogateescape")
        self.tree = parse_with(source, header)
        sm = self.tree.sourceManager
        self.sm = sm
        self.path = f"{VIRTUAL_ROOT}/{source.name}"
        self.delays: list[tuple[int, int]] = []  # byte spans of timing delays (`#1`)
        self.negedge_clocks: list[int] = []  # offsets of `negedge` of a lone clock event
        self.posedges = 0
        self.ifs: dict[int, list] = defaultdict(list)  # by line of the `if` keyword
        self.elses: dict[int, list] = defaultdict(list)  # by line of the `else` keyword
        self.case_items: dict[int, list] = defaultdict(list)
        self.statements: dict[int, list] = defaultdict(list)  # procedural, by first line
        self.modules: list = []
        self.scopes: list = []  # function, task and generate scopes (_LOCAL_SCOPES)
        self.clocks: dict[int, str] = {}  # module start offset -> clock name
        self._line = lambda tok: sm.getLineNumber(tok.location)
        self.tree.root.visit(self._visit)

    def _visit(self, node: object) -> bool:
        if not isinstance(node, syntax.SyntaxNode):
            return True  # a token
        kind = node.kind
        if kind == K.ModuleDeclaration:
            self.modules.append(node)
        elif kind in _LOCAL_SCOPES:
            self.scopes.append(node)
        elif kind in _DELAY_KINDS:
            span = self.span(node)
            if span is not None:
                self.delays.append(span)
            return False
        elif isinstance(node, syntax.ConditionalStatementSyntax):
            self.ifs[self._line(node.ifKeyword)].append(node)
            if node.elseClause is not None:
                self.elses[self._line(node.elseClause.elseKeyword)].append(node)
        elif kind in (K.StandardCaseItem, K.DefaultCaseItem):
            self.case_items[self._line(node.getFirstToken())].append(node)
        elif isinstance(node, syntax.SignalEventExpressionSyntax):
            self._edge(node)
        if (isinstance(node, syntax.SignalEventExpressionSyntax)
                and node.edge.valueText in ("posedge", "negedge")):
            at = self.start(node.getFirstToken())
            module = self.module_at(at) if at is not None else None
            if module is not None:
                self.clocks.setdefault(module.sourceRange.start.offset, str(node.expr).strip())
        if _is_statement(node) and _procedural(node):
            self.statements[self._line(node.getFirstToken())].append(node)
        return True

    def _edge(self, node) -> None:
        """Note a ``posedge`` use, and each ``negedge`` that is the only event of its
        event control (``always @(negedge clk)``: a clock, not an async reset)."""
        edge = node.edge.valueText
        if edge == "posedge":
            self.posedges += 1
        if edge != "negedge":
            return
        parent = node.parent
        while parent is not None and parent.kind == K.ParenthesizedEventExpression:
            parent = parent.parent
        if parent is None or parent.kind != K.EventControlWithExpression:
            return
        start, end = self.start(node.edge), self.end(node.edge)
        if start is not None and end is not None and self.data[start:end] == b"negedge":
            self.negedge_clocks.append(start)

    def start(self, token) -> int | None:
        """Byte offset in this file where ``token`` begins (the use of the macro it
        came from), or None when it is not in this file's text."""
        loc = token.location
        while self.sm.isMacroLoc(loc):
            loc = self.sm.getExpansionLoc(loc)
        if str(self.sm.getFullPath(loc.buffer)) != self.path:
            return None
        return loc.offset

    def end(self, token) -> int | None:
        """Byte offset in this file just after ``token`` (after the whole macro use it
        came from), or None when it is not in this file's text."""
        loc = token.location
        if not self.sm.isMacroLoc(loc):
            if str(self.sm.getFullPath(loc.buffer)) != self.path:
                return None
            return loc.offset + len(token.rawText.encode("utf-8", errors="surrogateescape"))
        while self.sm.isMacroLoc(loc):
            loc = self.sm.getExpansionRange(loc).end
        if str(self.sm.getFullPath(loc.buffer)) != self.path:
            return None
        return loc.offset

    def span(self, node) -> tuple[int, int] | None:
        """``node``'s byte span in this file's text (see :meth:`start`, :meth:`end`)."""
        first, last = self.start(node.getFirstToken()), self.end(node.getLastToken())
        if first is None or last is None or last < first:
            return None
        return first, last

    def module_at(self, offset: int):
        """The module declaration containing ``offset``, or None."""
        for m in self.modules:
            if (self.start(m.getFirstToken()) or 0) <= offset < (self.end(m.getLastToken()) or 0):
                return m
        return None

    def local_names(self, line: int) -> dict[str, str]:
        """The names declared in the function, task and generate scopes around
        ``line`` (arguments, locals, loop variables, genvars) -> where, in words (the
        innermost scope that declares it: ``function pick``, ``generate block g``)."""
        out: dict[str, str] = {}
        for scope in reversed(self.scopes):  # a visit lists the outer scope first
            if not self._line(scope.getFirstToken()) <= line <= self._line(scope.getLastToken()):
                continue
            where = _LOCAL_SCOPES[scope.kind] + _scope_name(scope)
            if scope.kind == K.LoopGenerate:
                out.setdefault(scope.identifier.valueText, where)

            def visit(node: object, where: str = where) -> bool:
                if isinstance(node, syntax.DeclaratorSyntax):
                    out.setdefault(node.name.valueText, where)
                return True

            scope.visit(visit)
        return out

    def clock_of(self, module) -> str | None:
        """The first edge signal of ``module`` (its clock by the RTL's use), or None."""
        return self.clocks.get(module.sourceRange.start.offset)


def _scope_name(scope) -> str:
    """`` NAME`` of a function, task or named generate block (empty: none)."""
    if scope.kind == K.GenerateBlock:
        return f" {scope.beginName.name.valueText}" if scope.beginName is not None else ""
    name = getattr(getattr(scope, "prototype", None), "name", None)
    return f" {str(name).strip()}" if name is not None else ""


def _is_statement(node: object) -> bool:
    name = getattr(getattr(node, "kind", None), "name", "")
    return name.endswith("Statement") and name != "TimingControlStatement"


def _procedural(node: object) -> bool:
    parent = getattr(node, "parent", None)
    while parent is not None:
        kind = getattr(parent, "kind", None)
        if kind in (K.AlwaysBlock, K.AlwaysCombBlock, K.AlwaysFFBlock, K.AlwaysLatchBlock,
                    K.InitialBlock, K.FinalBlock, K.TaskDeclaration, K.FunctionDeclaration):
            return kind not in (K.TaskDeclaration, K.FunctionDeclaration, K.InitialBlock,
                                K.FinalBlock)
        parent = getattr(parent, "parent", None)
    return False
