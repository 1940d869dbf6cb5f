"""Verilator's failure rules and build warnings, read from its build output.

A testbench cannot print during the build, so the build output is Verilator's own:
its ``%Error``/``%Warning-CODE`` lines. :func:`tool_failure` says when a failed build
is Verilator's fault (a ``tool_error``, not counted against the model),
:data:`RETRY_WITHOUT` which coverage options a crash drops, :func:`build_notes` what
its warnings mean for the testbench, :func:`error_sites` where its errors point.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
    r"^%Error: [^\n]*Can't find definition of task/function: '(\w+)'", re.MULTILINE
)
_INITIALDLY = re.compile(r"^%Warning-INITIALDLY: ([^:\n]+):(\d+):", re.MULTILINE)
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


def tool_failure(build_output: str, files: Iterable[SourceFile]) -> str | None:
    """Why a failed build is the simulator's fault, or None when it is not.

    A tool failure is (1) Verilator's ``%Error: Internal Error`` at the start of a line,
    (2) an error naming a Verilator-internal variable (``'_Vpast_1_1'``) that no source
    declares, or (3) "Can't find definition of task/function" for a name the sources
    declare as a property or sequence (verilator/verilator#8295: a named property
    nested in an assertion's property expression).
    """
    if _INTERNAL_ERROR.search(build_output):
        return "Verilator internal error"
    texts = [f.content for f in files]
    for name in _INTERNAL_NAME.findall(build_output):
        if not any(name in t for t in texts):
            return f"Verilator error about its own internal variable `{name}`"
    missing = set(_MISSING_TF.findall(build_output))
    if missing:
        declared = _declared_properties(files)
        if missing & declared:
            name = sorted(missing & declared)[0]
            return (f"Verilator cannot resolve the declared property `{name}` where it is "
                    "used (a named property inside an assertion's property expression, "
                    "verilator#8295)")
    return None


def _declared_properties(files: Iterable[SourceFile]) -> set[str]:
    names: set[str] = set()
    for f in files:
        for node in syntax_nodes(parse_tree(f.content, f.name).root,
                           (_SK.PropertyDeclaration, _SK.SequenceDeclaration)):
            names.add(node.name.valueText)
    return names


def build_notes(
    build_log: str, tb: SourceFile, fixed_lines: frozenset[int] = frozenset()
) -> list[str]:
    """Notes from Verilator's build warnings (covergroups ignored, timescale, and the
    INITIALDLY divergence on testbench lines not already fixed by
    :func:`testbench_workarounds`, ``fixed_lines``)."""
    notes = []
    if "COVERIGN" in build_log:
        notes.append(
            "Verilator ignores covergroups/coverpoints (COVERIGN): functional coverage the "
            "testbench prints is not measured; code coverage is reported normally "
            "(`--simulator verilator-5.052` counts covergroup bins as functional coverage)"
        )
    if "TIMESCALEMOD" in build_log:
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
