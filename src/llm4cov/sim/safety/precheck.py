"""In-process pre-check: compile errors pyslang is sure about, without starting Verilator.

The testbench is parsed and elaborated together with the RTL, as one compilation unit
in Verilator's file order (packages first), with Verilator's predefined macros plus the
task's, and the evaluator's include directories.
A testbench is rejected (``compile_error``) only when

- pyslang reports at least one error *in the testbench* whose code is in
  :data:`SURE_CODES`, outside the constructs Verilator does not check the way pyslang
  does (covergroups, properties and sequences, which Verilator ignores; the scope
  arguments of :data:`SCOPE_TASKS` such as ``$dumpvars(0, tb)``; and for
  :data:`CALL_EXEMPT_CODES`, system-task arguments: Verilator lets ``$readmemh`` fill a
  ``wire`` array), and
- nothing makes pyslang's view of the design unreliable (:data:`VETO_CODES` anywhere,
  or a parse error in an RTL file).

:data:`SURE_CODES` is decided by measurement, not by taste: the diagnostic codes that
never appeared on a testbench Verilator accepted and that were, on at least three
testbenches, the only error code while Verilator rejected it, over a corpus of
reference, LLM-written and mutated testbenches (``benchmarks/precheck_agreement.py``;
numbers in ``docs/results/precheck_agreement.md``). Every other pyslang error is left
to Verilator, so the pre-check can only make a call faster, never change its verdict.

The parse resolves `` `include``s on the host, in this process: every text it reads (the
RTL, the testbench, the task's macros and every file they include) is first checked with
the include rule of :mod:`llm4cov.tasks.includes`; a text that breaks it is not parsed
here at all (no findings: Verilator, in the sandbox, decides).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyslang
from pyslang import ast, parsing, syntax

from llm4cov.tasks import includes
from llm4cov.tasks.hdl import (
    ElaborationLimitError,
    ParseBoundError,
    bounded_symbols,
    check_bounded,
    compile_order_unchecked,
    define_args,
)
from llm4cov.tasks.model import SourceFile

#: pyslang codes trusted to reject a testbench: measured, see the module docstring.
SURE_CODES = frozenset({
    "AssignToNet",
    "BadBinaryDigit",
    "BadDecimalDigit",
    "BadHexDigit",
    "DeclarationsAtStart",
    "ExpectedDeclarator",
    "ExpectedExpression",
    "ExpectedIdentifier",
    "ExpectedStatement",
    "ExpectedToken",
    "ExpectedVectorDigits",
    "MixingOrderedAndNamedPorts",
    "PortDoesNotExist",
    "TimingInFuncNotAllowed",
    "TypoIdentifier",
    "TypoKeyword",
    "UndeclaredIdentifier",
})

#: Codes that mean pyslang may not see the design as Verilator does: never reject then.
VETO_CODES = frozenset({"CouldNotOpenIncludeFile", "UnknownDirective"})

#: Constructs Verilator ignores (COVERIGN) or checks differently: no finding inside counts.
EXEMPT_REGIONS = frozenset({
    syntax.SyntaxKind.CovergroupDeclaration,
    syntax.SyntaxKind.PropertyDeclaration,
    syntax.SyntaxKind.SequenceDeclaration,
})
#: Codes that do not count inside a system-task call's arguments.
CALL_EXEMPT_CODES = frozenset({"AssignToNet"})
#: System tasks whose arguments name scopes: Verilator accepts scopes that do not exist
#: (``$dumpvars(0, tb)`` in a top named ``tb_x``), so no finding inside them counts.
SCOPE_TASKS = frozenset({"$dumpvars", "$dumpports", "$printtimescale"})

#: The macros Verilator predefines with ``--timing`` (``verilator -E --dump-defines``).
VERILATOR_DEFINES = (
    "SV_COV_ASSERTION=20", "SV_COV_CHECK=3", "SV_COV_ERROR=-1", "SV_COV_FSM_STATE=21",
    "SV_COV_HIER=11", "SV_COV_MODULE=10", "SV_COV_NOCOV=0", "SV_COV_OK=1",
    "SV_COV_OVERFLOW=-2", "SV_COV_PARTIAL=2", "SV_COV_RESET=2", "SV_COV_START=0",
    "SV_COV_STATEMENT=22", "SV_COV_STOP=1", "SV_COV_TOGGLE=23", "SYSTEMVERILOG=1",
    "VERILATOR=1", "VERILATOR_TIMING=1", "coverage_block_off=", "verilator=1",
    "verilator3=1",
)

MAX_SHOWN = 20
_CODE_NAME = re.compile(r"DiagCode\((\w+)\)")


@dataclass(frozen=True)
class Finding:
    """One pyslang error. ``file`` is the repo's or testbench's own name; ``line`` and
    ``column`` are 1-based; ``code`` is the pyslang ``DiagCode`` name."""

    code: str
    file: str
    line: int
    column: int
    message: str
    parse: bool
    """From parsing/preprocessing (syntax), not from elaboration."""
    source_line: str = ""
    exempt: bool = False
    """Inside a construct where pyslang's verdict does not predict Verilator's."""

    def render(self) -> str:
        """Verilator-style: ``%Error: tb.sv:7:3: message`` and the marked source line."""
        text = f"%Error: {self.file}:{self.line}:{self.column}: {self.message}"
        if not self.source_line.strip():
            return text
        gutter = f"{self.line:>5} | "
        caret = " " * (len(gutter) - 2) + "| " + " " * (self.column - 1) + "^"
        return f"{text}\n{gutter}{self.source_line}\n{caret}"


def diagnose(
    rtl_files: Sequence[SourceFile],
    tb: SourceFile,
    top: str,
    include_dirs: Iterable[Path] = (),
    defines: Mapping[str, str] | None = None,
    compile_files: Sequence[str] = (),
) -> list[Finding]:
    """Every error pyslang reports for ``tb`` elaborated with ``rtl_files`` under ``top``.

    ``include_dirs`` are searched for `` `include`` files (the evaluator passes the work
    dir's copies of Verilator's ``-I`` list, where the files are written); ``defines``
    and ``compile_files`` are the task's (``Task.defines``, ``Task.compile_files``).
    Takes milliseconds for RTLLM-sized designs.

    Empty (nothing parsed) when a text breaks the include rule (:func:`unsafe_includes`),
    and when the design has more symbols than llm4cov elaborates in its process
    (:func:`~llm4cov.tasks.hdl.bounded_symbols`: the sandboxed build decides).
    """
    dirs = [Path(d) for d in include_dirs]
    if unsafe_includes(rtl_files, tb, dirs, defines):
        return []
    try:  # the RTL's views, once per process (the testbench's: the static check's guard)
        check_bounded(rtl_files, _relative(dirs), defines, compile_files)
    except ParseBoundError:
        return []
    sm = pyslang.SourceManager()
    sm.setDisableLocalIncludes(True)
    for d in dirs:
        if d.is_dir():
            sm.addUserDirectories(str(d))
    compiled = [*compile_order_unchecked(rtl_files, compile_files), tb]
    buffers = [sm.assignText(f.name, f.content) for f in compiled]
    bag = _options(top, define_args(defines or {}))
    tree = syntax.SyntaxTree.fromBuffers(buffers, sm, bag)
    comp = ast.Compilation(bag)
    comp.addSyntaxTree(tree)
    try:
        bounded_symbols(comp)  # before the whole design is made
    except ElaborationLimitError:
        return []  # too large to elaborate here: the verdict is the sandboxed build's
    parse_diags = {_where(d) for d in comp.getParseDiagnostics()}
    regions, calls = _regions(tree, buffers[-1].id)
    engine = pyslang.DiagnosticEngine(sm)
    texts = {f.name: f.content.splitlines() for f in compiled}
    findings = []
    for diag in comp.getAllDiagnostics():
        if not diag.isError():
            continue
        loc = sm.getFullyOriginalLoc(diag.location)
        name = _display_name(sm.getFileName(loc), dirs)
        line, column = sm.getLineNumber(loc), sm.getColumnNumber(loc)
        code = code_name(diag.code)
        inside = regions + (calls if code in CALL_EXEMPT_CODES else [])
        in_tb = loc.buffer == buffers[-1].id
        lines = texts.get(name, [])
        findings.append(Finding(
            code=code,
            file=name,
            line=line,
            column=column,
            message=engine.formatMessage(diag),
            parse=_where(diag) in parse_diags,
            source_line=lines[line - 1] if 0 < line <= len(lines) else "",
            exempt=in_tb and any(a <= loc.offset < b for a, b in inside),
        ))
    return findings


def unsafe_includes(
    rtl_files: Sequence[SourceFile],
    tb: SourceFile,
    include_dirs: Sequence[Path],
    defines: Mapping[str, str] | None = None,
) -> list[includes.Problem]:
    """Where the texts :func:`diagnose` would parse break the include rule
    (:func:`llm4cov.tasks.includes.problems`), with the files on disk below the
    include dirs' common folder (the work dir's sources folder): what they include is
    read there, and a name tried outside it must not exist."""
    texts = {f.name: f.content for f in [*rtl_files, tb]}
    if not include_dirs:
        return includes.problems(texts, [], defines)
    root = Path(os.path.commonpath([os.path.abspath(d) for d in include_dirs]))
    return includes.problems(texts, _relative(include_dirs), defines, includes.Disk(root))


def _relative(include_dirs: Sequence[Path]) -> list[str]:
    """The include dirs relative to their common folder (the work dir's sources)."""
    if not include_dirs:
        return []
    root = os.path.commonpath([os.path.abspath(d) for d in include_dirs])
    return [os.path.relpath(os.path.abspath(d), root) for d in include_dirs]


def testbench_errors(findings: Sequence[Finding], tb_name: str) -> list[Finding]:
    """Every error pyslang reports in the testbench, outside the exempt constructs;
    empty when pyslang's view of the design is unreliable (:data:`VETO_CODES`, a parse
    error in an RTL file). The evaluator's verdict when Verilator gives none (it crashes
    on the testbench with an internal error): an invalid testbench is then the model's
    compile error, not a simulator failure."""
    if any(f.code in VETO_CODES or (f.parse and f.file != tb_name) for f in findings):
        return []
    return [f for f in findings if f.file == tb_name and not f.exempt]


def sure_errors(
    findings: Sequence[Finding], tb_name: str, sure_codes: frozenset[str] = SURE_CODES
) -> list[Finding]:
    """The findings that justify rejecting the testbench (empty = let Verilator decide)."""
    return [f for f in testbench_errors(findings, tb_name) if f.code in sure_codes]


def render(findings: Sequence[Finding],
           why: str = "found by the pyslang pre-check; Verilator was not run") -> str:
    """The compile log shown to the model for a rejection by pyslang's ``findings``;
    ``why`` closes its last line."""
    shown = [f.render() for f in findings[:MAX_SHOWN]]
    if len(findings) > MAX_SHOWN:
        shown.append(f"[... {len(findings) - MAX_SHOWN} more errors not shown ...]")
    shown.append(f"%Error: Exiting due to {len(findings)} error(s) ({why})")
    return "\n".join(shown)


def _options(top: str, defines: Sequence[str] = ()) -> pyslang.Bag:
    version = pyslang.LanguageVersion.v1800_2023
    pp = parsing.PreprocessorOptions()
    pp.predefines = [*VERILATOR_DEFINES, *defines]
    pp.languageVersion = version
    lexer = parsing.LexerOptions()
    lexer.languageVersion = version
    parser = parsing.ParserOptions()
    parser.languageVersion = version
    comp = ast.CompilationOptions()
    comp.topModules = {top}
    comp.languageVersion = version
    return pyslang.Bag([pp, lexer, parser, comp])


def _regions(tree: syntax.SyntaxTree, tb_buffer) -> tuple[list, list]:
    """Offset ranges in the testbench of :data:`EXEMPT_REGIONS` (and :data:`SCOPE_TASKS`
    calls), and of the other system-task calls."""
    regions: list[tuple[int, int]] = []
    calls: list[tuple[int, int]] = []

    def visit(node: Any) -> bool:  # any pyslang node
        kind = getattr(node, "kind", None)
        system = (kind == syntax.SyntaxKind.InvocationExpression
                  and node.left.kind == syntax.SyntaxKind.SystemName)
        if kind in EXEMPT_REGIONS or system:
            rng = node.sourceRange
            if rng.start.buffer == tb_buffer:
                scope = system and node.left.systemIdentifier.valueText in SCOPE_TASKS
                (regions if kind in EXEMPT_REGIONS or scope else calls).append(
                    (rng.start.offset, rng.end.offset))
        return True

    tree.root.visit(visit)
    return regions, calls


def _where(diag: pyslang.Diagnostic) -> tuple:
    return str(diag.code), diag.location.buffer, diag.location.offset


def code_name(code: pyslang.DiagCode) -> str:
    """A diagnostic code's name (``UndeclaredIdentifier``)."""
    match = _CODE_NAME.fullmatch(str(code))
    return match.group(1) if match else str(code)


def _display_name(name: str, dirs: Sequence[Path]) -> str:
    """An included file's absolute path as the repo-relative name Verilator would print."""
    for d in sorted(dirs, key=lambda d: len(str(d))):  # the work dir itself first
        prefix = str(d).rstrip("/") + "/"
        if name.startswith(prefix):
            return name[len(prefix):]
    return name
