"""Static safety checks on an untrusted testbench, run before anything is compiled.

The testbench is code written by a model. Rejected (``Status.REJECTED``):

- ``$system`` and Verilator's C++ escapes (``$c``, ``$cN``, `` `systemc_* `` blocks),
  which run arbitrary host code;
- DPI imports and exports (``import "DPI-C"``), which link host functions;
- file access that could leave the work dir: ``$fopen``, ``$readmem*``, ``$writemem*``,
  ``$dumpfile`` whose path is absolute, contains ``..``, or is not a string literal
  (a non-literal path cannot be checked);
- `` `include `` of an absolute path or one containing ``..``.

Checks run on pyslang's preprocessed token stream, so comments and strings never
trigger them and macros (even token pasting) cannot hide a call.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pyslang
from pyslang import syntax

from llm4cov.tasks.hdl import parse_tree

FORBIDDEN_TASKS = {"$system": "runs a host shell command"}
FILE_TASKS = {
    "$fopen",
    "$readmemh",
    "$readmemb",
    "$writememh",
    "$writememb",
    "$dumpfile",
    "$fdumpfile",
}
_C_ESCAPE = re.compile(r"^\$c(pure)?\d*$")
_SYSTEMC_DIRECTIVE = re.compile(r"`systemc_\w+")


def _unsafe_path(path: str) -> bool:
    p = PurePosixPath(path)
    return p.is_absolute() or ".." in p.parts or path.startswith("~")


def _string_literal(text: str) -> str | None:
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    return None


def check_testbench(text: str, name: str) -> list[str]:
    """Reasons to reject the testbench ``text`` (empty list = safe to compile).

    Reasons are in line order; each names the file and line, e.g. ``tb.sv:7: $system is not allowed
    (runs a host shell command)``.
    """
    tree = parse_tree(text, name)
    sm = tree.sourceManager
    reasons: list[str] = []

    def where(loc: pyslang.SourceLocation) -> str:
        return f"{name}:{sm.getLineNumber(loc)}"

    def visit(node: object) -> bool:
        if isinstance(node, pyslang.parsing.Token):
            _check_token(node, where, reasons)
            return True
        kind = node.kind
        if kind in (syntax.SyntaxKind.DPIImport, syntax.SyntaxKind.DPIExport):
            reasons.append(f"{where(node.sourceRange.start)}: DPI imports/exports are not allowed")
        elif kind == syntax.SyntaxKind.InvocationExpression:
            _check_invocation(node, where, reasons)
        return True

    tree.root.visit(visit)
    for match in _SYSTEMC_DIRECTIVE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        reasons.append(f"{name}:{line}: {match.group(0)} (embedded C++) is not allowed")
    unique = list(dict.fromkeys(reasons))
    return sorted(unique, key=lambda r: int(r[len(name) + 1 :].split(":", 1)[0]))


def _check_token(token: pyslang.parsing.Token, where, reasons: list[str]) -> None:
    if token.kind == pyslang.parsing.TokenKind.SystemIdentifier:
        ident = token.valueText
        if ident in FORBIDDEN_TASKS:
            reasons.append(
                f"{where(token.location)}: {ident} is not allowed ({FORBIDDEN_TASKS[ident]})"
            )
        elif _C_ESCAPE.match(ident):
            reasons.append(f"{where(token.location)}: {ident} (embedded C++) is not allowed")
    for trivia in token.trivia:
        if trivia.kind != pyslang.parsing.TriviaKind.Directive:
            continue
        directive = trivia.syntax()
        if directive.kind == syntax.SyntaxKind.IncludeDirective:
            target = str(directive.fileName.valueText).strip('"<>')
            if _unsafe_path(target):
                reasons.append(
                    f"{where(directive.sourceRange.start)}: `include \"{target}\" points "
                    "outside the work dir (absolute or '..' path)"
                )


def _check_invocation(node, where, reasons: list[str]) -> None:
    if node.left.kind != syntax.SyntaxKind.SystemName:
        return
    ident = node.left.systemIdentifier.valueText
    if ident not in FILE_TASKS:
        return
    args = [a for a in (node.arguments.parameters if node.arguments else []) if hasattr(a, "kind")
            and a.kind == syntax.SyntaxKind.OrderedArgument]
    if not args:
        return
    path = _string_literal(str(args[0]))
    loc = where(node.sourceRange.start)
    if path is None:
        reasons.append(
            f"{loc}: {ident} needs a string-literal file name (a computed path cannot be "
            "checked to stay inside the work dir)"
        )
    elif _unsafe_path(path):
        reasons.append(
            f"{loc}: {ident}(\"{path}\") points outside the work dir (absolute or '..' path)"
        )
