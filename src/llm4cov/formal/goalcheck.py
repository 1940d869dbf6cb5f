"""Goals the compiler rejects where they are written, found before any SBY job.

A goal's condition comes from the simulator's wording of a point and is written
where the point's statement is (or at module level): it may name what is not visible
there or select what SystemVerilog cannot select. :func:`rejected_goals` elaborates
the marked RTL with pyslang as the job would (the task's top, parameters, defines and
include dirs) and names each goal whose own written text an error lies in
(:attr:`llm4cov.formal.goals.Placement.spans`), so the job runs without it. An error
outside every goal's text is the design's own and rejects nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyslang
from pyslang import ast

from llm4cov.formal.goals import Placement
from llm4cov.tasks.hdl import ParseBoundError, parse_design
from llm4cov.tasks.includes import UnsafeIncludeError
from llm4cov.tasks.model import Task

MAX_ROUNDS = 3
"""Elaborations per placement: rejecting a goal can show an error another one hid."""


def goal_errors(task: Task, placement: Placement) -> dict[str, str]:
    """Label -> the first error pyslang reports inside that goal's written text, when
    ``placement.files`` (marked RTL) are elaborated under the task's top; empty when
    the RTL cannot be parsed here (the SBY job then says why)."""
    if not placement.spans:
        return {}
    try:
        design = parse_design(placement.files, task.include_dirs, task.defines,
                              task.compile_files)
    except (UnsafeIncludeError, ParseBoundError):
        return {}
    options = ast.CompilationOptions()
    options.topModules = {task.dut_module_name}
    options.paramOverrides = [f"{k}={v}" for k, v in task.parameters.items()]
    comp = ast.Compilation(pyslang.Bag([options]))
    comp.addSyntaxTree(design.tree)
    sm = design.tree.sourceManager
    engine = pyslang.DiagnosticEngine(sm)
    found: dict[str, str] = {}
    for diag in comp.getAllDiagnostics():
        if not diag.isError():
            continue
        loc = sm.getFullyOriginalLoc(diag.location)
        spans = _spans_of(str(sm.getFileName(loc)), placement.spans)
        label = next((lb for a, b, lb in spans if a <= loc.offset < b), None)
        if label is not None and label not in found:
            found[label] = f"slang: {engine.formatMessage(diag)}"
    return found


def _spans_of(path: str, spans: Mapping[str, list[tuple[int, int, str]]]
              ) -> list[tuple[int, int, str]]:
    """The goal spans of the marked file that ``path`` (where the parse wrote it) is:
    the longest file name ``path`` ends with."""
    names = [n for n in spans if path == n or path.endswith("/" + n)]
    return spans[max(names, key=len)] if names else []


def rejected_goals(place: Callable[[Mapping[str, str]], Placement], task: Task
                   ) -> dict[str, str]:
    """The goals to leave out, label -> reason: ``place(reject)`` places every goal
    but those of ``reject``; each round elaborates the placement and adds the goals an
    error lies in (:func:`goal_errors`), until none is added (at most
    :data:`MAX_ROUNDS` rounds)."""
    reject: dict[str, str] = {}
    for _ in range(MAX_ROUNDS):
        found = goal_errors(task, place(reject))
        if not found:
            break
        reject.update({label: f"not placed: its goal does not compile where it would be "
                              f"written ({why})" for label, why in found.items()})
    return reject
