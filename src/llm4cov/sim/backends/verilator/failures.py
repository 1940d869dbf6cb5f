"""Verilator's failure rules and build warnings, read from its build output.

A testbench can print during the build: a ``$display`` in a function Verilator
evaluates as a constant, an elaboration ``$info``/``$warning``/``$error``/``$fatal``
(a thirty-sixth red team printed ``%Warning-INITIALDLY: tb.sv:20:``, ``COVERIGN`` and
``%Error: Internal Error``, and the evaluator's notes on them reached the next prompt).
:func:`own_lines` keeps each such print on one line (Verilator's SARIF diagnostics name
them), so every rule here reads only lines that start with Verilator's own
``%Error``/``%Warning-CODE``: :func:`tool_failure` says when a failed build is
Verilator's fault (a ``tool_error``, not counted against the model),
:data:`RETRY_WITHOUT` which coverage options a crash drops, :func:`build_notes` what
its warnings mean for the testbench, :func:`error_sites` where its errors point.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from pyslang import parsing, syntax

from llm4cov.sim.analysis.hints import syntax_nodes
from llm4cov.sim.backends.base import PreprocessMessages
from llm4cov.sim.model.metrics import crash_retries
from llm4cov.tasks.hdl import parse_tree
from llm4cov.tasks.model import SourceFile

_SK = syntax.SyntaxKind
# Verilator's own diagnostics start a line of its output.
_INTERNAL_ERROR = re.compile(r"^%Error: Internal Error", re.MULTILINE)
_INTERNAL_NAME = re.compile(r"^%Error: [^\n]*'(_V\w+)'", re.MULTILINE)
_MISSING_TF = re.compile(
    r"^%Error: ([^\n:]+):(\d+):(\d+): [^\n]*Can't find definition of task/function: '(\w+)'",
    re.MULTILINE,
)
_INITIALDLY = re.compile(r"^%Warning-INITIALDLY: ([^:\n]+):(\d+):", re.MULTILINE)
_COVERIGN = re.compile(r"^%Warning-COVERIGN: ", re.MULTILINE)
_TIMESCALEMOD = re.compile(r"^%Warning-TIMESCALEMOD: ", re.MULTILINE)
#: Verilator's rules for what the sources print while they are elaborated.
_USER_RULES = frozenset({"USERINFO", "USERWARN", "USERERROR", "USERFATAL"})
_USER_RULE_ID = re.compile(rb'"ruleId":\s*"USER')
_MISSING_COMMA = re.compile(rb'\}(\s*"invocations")')
SARIF_MAX_BYTES = 64 << 20
"""The largest SARIF file :func:`own_lines` reads (a constant function can print in a
loop)."""
#: Coverage options dropped, in this order, when the build crashes Verilator: ``(flag,
#: the metric in prose)`` of each metric row with a ``crash_retry``.
RETRY_WITHOUT = crash_retries()
_ERROR_AT = re.compile(r"^%Error(?:-\w+)?: ([^:\s]+):(\d+):", re.MULTILINE)

PREPROCESS_MESSAGES = PreprocessMessages(
    limit=("Too many preprocessor tokens",),
    limit_label="Verilator's limit of tokens on a line",
    killed=("%Error: Command Failed",),  # bin/verilator, when it runs verilator_bin
    missing_include=re.compile(
        r"%Error: (\S+?:\d+):(?:\d+:)? Cannot find include file: '(.*)'"),
)
"""Verilator's ``-E`` messages, as the static check reads them."""


def own_lines(output: str, sarif: Path) -> str:
    """The verilate step's ``output`` with every line the sources printed while they
    were elaborated marked (``| `` before it), so that no such line starts like
    Verilator's own ``%Error``/``%Warning``: a line of ``output`` is marked when it
    equals a line of the message of one of Verilator's ``USER*`` diagnostics in its
    ``sarif`` file (a real diagnostic the sources printed a copy of is marked too: the
    rules then miss it, which never helps the sources). Lines are split at every line
    break Python knows (``str.splitlines``: ``\\r``, ``\\f``, U+2028, ..., as the log
    cleaning splits them; a thirty-seventh red team hid a line behind ``\\r``) and
    compared without trailing white space (SARIF drops it, the console keeps it).
    Without the file (Verilator ended before writing it: a crash, a kill) the output is
    as given; past :data:`SARIF_MAX_BYTES` or unreadable, it is replaced by one line
    saying so."""
    try:
        size = sarif.stat().st_size
    except OSError:
        return output
    try:
        if size > SARIF_MAX_BYTES:
            raise ValueError(f"{size} bytes")
        raw = sarif.read_bytes()
        try:
            data = json.loads(raw)
        except ValueError:
            if _USER_RULE_ID.search(raw) is None:
                return output  # nothing printed (the pinned Verilator writes a file with
                # no rules without the comma after "tool": invalid JSON)
            data = json.loads(_MISSING_COMMA.sub(rb"},\1", raw))
        runs = data.get("runs") or []
        printed = {line.rstrip() for run in runs for r in run.get("results") or []
                   if r.get("ruleId") in _USER_RULES
                   for line in str(r["message"]["text"]).splitlines()[1:]}
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        return (f"(Verilator's output is not shown: its diagnostics could not be read "
                f"({str(exc)[:80]}); the sources printed while they were elaborated)\n")
    printed.discard("")
    if not printed:
        return output
    return "".join(f"| {line}" if line.rstrip() in printed else line
                   for line in output.splitlines(keepends=True))


def tool_failure(build_output: str, files: Iterable[SourceFile], expanded: str = ""
                 ) -> str | None:
    """Why a failed build is the simulator's fault, or None when it is not.

    A tool failure is (1) Verilator's ``%Error: Internal Error`` at the start of a line,
    (2) an error naming a Verilator-internal variable (``'_Vpast_1_1'``) that no source
    declares: the name is in none of the ``files``' texts nor in ``expanded``, the
    sources as Verilator's preprocessor expanded them (a thirty-eighth red team pasted
    ``_V`` and ``tmp`` with a macro into a name that no text holds), or (3) "Can't find
    definition of task/function" at a property or sequence instance (``|=> p``) of a
    name the sources declare as a property or sequence (verilator/verilator#8295: a
    named property nested in an assertion's property expression); the same error at a
    call of that name (``else p();``, a match item's ``p()``) is the testbench's.
    """
    if _INTERNAL_ERROR.search(build_output):
        return "Verilator internal error"
    texts = [*(f.content for f in files), expanded]
    for name in _INTERNAL_NAME.findall(build_output):
        if not any(name in t for t in texts):
            return f"Verilator error about its own internal variable `{name}`"
    missing = _MISSING_TF.findall(build_output)
    if missing:
        instances = _property_instances(files)
        for file, line, col, name in missing:
            if instances.get((file, int(line), int(col))) == name:
                return (f"Verilator cannot resolve the declared property `{name}` where it "
                        "is used (a named property inside an assertion's property "
                        "expression, verilator#8295)")
    return None


def _property_instances(files: Iterable[SourceFile]) -> dict[tuple[str, int, int], str]:
    """``(file, line, column) -> name`` of each instance of a declared property or
    sequence in a sequence or property expression (``p``, ``p(a)``), written in the
    file (not in a macro's text); columns count from 1, as Verilator's."""
    found: dict[tuple[str, int, int], str] = {}
    for f in files:
        tree = parse_tree(f.content, f.name)
        declared = {node.name.valueText for node in syntax_nodes(
            tree.root, (_SK.PropertyDeclaration, _SK.SequenceDeclaration))}
        for node in syntax_nodes(tree.root, (_SK.SimpleSequenceExpr,)):
            expr = node.expr
            if expr.kind == _SK.InvocationExpression:
                expr = expr.left
            if expr.kind != _SK.IdentifierName or expr.identifier.valueText not in declared:
                continue
            loc = expr.identifier.location
            if tree.sourceManager.isFileLoc(loc):
                found[(f.name, tree.sourceManager.getLineNumber(loc),
                       tree.sourceManager.getColumnNumber(loc))] = expr.identifier.valueText
    return found


def build_notes(
    build_log: str, tb: SourceFile, fixed_lines: frozenset[int] = frozenset()
) -> list[str]:
    """Notes from Verilator's build warnings (covergroups ignored, timescale, and the
    INITIALDLY divergence on testbench lines not already fixed by
    :func:`testbench_workarounds`, ``fixed_lines``)."""
    notes = []
    if _COVERIGN.search(build_log):
        notes.append(
            "Verilator ignores covergroups/coverpoints (COVERIGN): functional coverage the "
            "testbench prints is not measured; code coverage is reported normally "
            "(`--simulator verilator-5.052` counts covergroup bins as functional coverage)"
        )
    if _TIMESCALEMOD.search(build_log):
        notes.append("timescale only in some files (TIMESCALEMOD warning); simulation runs")
    lines = sorted({int(n) for f, n in _INITIALDLY.findall(build_log)
                    if f == tb.name} - fixed_lines)
    if lines and _waits_on_edge(tb):
        where = ", ".join(str(n) for n in lines[:6]) + (" ..." if len(lines) > 6 else "")
        notes.append(
            f"simulator divergence: Verilator runs the non-blocking assignments (`<=`) in "
            f"`initial` blocks of {tb.name} (lines {where}) as blocking ones (INITIALDLY). "
            "An input changed with `<=` right after `@(posedge clk)` reaches the DUT at "
            "that same edge, so e.g. a reset held for one edge may never be seen by the "
            "flops and its branch stays uncovered. Drive inputs with `=` after a small "
            "delay (`@(posedge clk); #1`) or on the opposite edge (`@(negedge clk)`)"
        )
    return notes


def _waits_on_edge(tb: SourceFile) -> bool:
    tree = parse_tree(tb.content, tb.name)
    kinds = {parsing.TokenKind.PosEdgeKeyword, parsing.TokenKind.NegEdgeKeyword}
    found = False

    def visit(node) -> bool:
        nonlocal found
        if isinstance(node, parsing.Token) and node.kind in kinds:
            found = True
        return not found

    tree.root.visit(visit)
    return found


def error_sites(build_output: str) -> list[tuple[str, int]]:
    """``(file, line)`` of every located ``%Error`` (``%Error-CODE``) line of a build."""
    return [(f, int(n)) for f, n in _ERROR_AT.findall(build_output)]
