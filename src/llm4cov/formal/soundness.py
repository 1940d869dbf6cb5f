"""What makes a formal "proven unreachable" true of the simulated design: the formal tools
must read the RTL the simulator compiles, under no constraint but llm4cov's own reset
assumption (a non-sim red team, 2026-12-07: RTL with ``\\`ifndef VERILATOR always @*
assume (code != 8'hA5); \\`endif`` had 7 points the simulation reaches "proven by
10-induction" unreachable).

- **The same macros.** The simulation's text is Verilator's: ``VERILATOR`` and its other
  predefined macros, no ``SYNTHESIS``. ``read_slang`` predefines ``SYNTHESIS`` and
  ``read_verilog -formal`` ``FORMAL`` and ``YOSYS`` (measured with the pinned YoWASP
  Yosys 0.70): the slang read gets Verilator's macros and ``SYNTHESIS`` undefined
  (:data:`SIM_DEFINES`, :data:`SLANG_UNDEFINES`); Yosys' own parser cannot undefine
  its two, so a proof through it does not count when the RTL tests them
  (:func:`frontend_macros`).
- **No constraint of the RTL's own.** An ``assume`` or ``restrict`` the RTL carries in
  the branches the simulation compiles constrains the formal inputs, never the
  simulation's: with one, no goal is proven unreachable (:func:`own_constraints`).

Both turn a verdict ``unreachable`` into ``unknown`` with the reason; ``reached`` needs
neither (its witness is replayed in simulation).
"""

from __future__ import annotations

import re

from pyslang import syntax

from llm4cov.sim.safety.precheck import VERILATOR_DEFINES
from llm4cov.tasks.hdl import isolated_source_manager, parse_unit, syntax_nodes
from llm4cov.tasks.model import Task

SK = syntax.SyntaxKind
#: The simulator's predefined macros, ``name -> value`` (Verilator's ``-E``).
SIM_DEFINES = dict(d.split("=", 1) for d in VERILATOR_DEFINES)
#: Macros ``read_slang`` predefines that the simulator does not.
SLANG_UNDEFINES = ("SYNTHESIS",)
#: Macros ``read_verilog -formal`` predefines that the simulator does not (it cannot
#: undefine them).
VERILOG_MACROS = ("FORMAL", "YOSYS")
_CONSTRAINTS = (SK.AssumePropertyStatement, SK.RestrictPropertyStatement,
                SK.ImmediateAssumeStatement)
_CONDITIONAL = re.compile(r"`(?:ifdef|ifndef|elsif)\s+(\w+)")


def own_constraints(task: Task) -> list[str]:
    """``file:line`` of every ``assume``/``restrict`` of the task's RTL in the branches
    the simulation compiles (each file parsed alone with the simulator's and the task's
    macros; no include is opened, an included file is a file of the task too)."""
    found = []
    for f in task.rtl_files:
        sm = isolated_source_manager()
        tree, _ = parse_unit([(f.name, f.content)], sm, defines={**SIM_DEFINES, **task.defines})
        for node in syntax_nodes(tree.root, _CONSTRAINTS):
            found.append(f"{f.name}:{sm.getLineNumber(node.sourceRange.start)}")
    return found


def frontend_macros(task: Task) -> list[str]:
    """The macros of :data:`VERILOG_MACROS` the task's RTL tests (``\\`ifdef FORMAL``):
    a read by Yosys' own parser compiles other text than the simulation there."""
    return sorted({m.group(1) for f in task.rtl_files
                   for m in _CONDITIONAL.finditer(f.content)} & set(VERILOG_MACROS))
