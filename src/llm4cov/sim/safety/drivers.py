"""The stimulus-only rule read a second way: on pyslang's elaboration of Verilator's view
(its RTL part and its testbench part, one compilation) and slang's driver analysis
(``pyslang.analysis.AnalysisManager``), not on the testbench's syntax
(``docs/stimulus.md``; the syntactic reading is :mod:`llm4cov.sim.safety.stimulus_only`).

The syntax names a write by its form (an assignment, a port, a task argument); every new
form was a new way around it: a clocking block's output drive, a variable passed to a
testbench module's ``ref`` or second ``output`` port, an interface member the DUT drives
through a modport, a package variable the DUT reads (a fifth red team, 72.64 -> 95.83 %
and 86.07 -> 99.29 %). The elaboration knows every driver of every variable, whatever
its form, so a testbench is also ``rejected`` when

- a **variable the DUT drives** (its RTL code, or an output port of an RTL instance
  collapsed with it) also has a driver in the testbench's code (a declaration's initial
  value of zero, the value the run starts every variable at, is none): the testbench
  writes the DUT's own signal (IEEE 1800 6.5: a variable has one continuous driver or procedural
  ones, not both; Verilator merges them). A net is left out: two continuous drivers of a
  net resolve (a bidirectional bus), and a procedural ``force`` of one is the syntactic
  check's (slang records no driver for it);
- a **variable of the DUT** (in an RTL instance of the DUT's subtree, or in an RTL
  package or compilation unit) has a driver in the testbench's code;
- the name the DUT is measured at (``dut_hier``) is **not an instance of the DUT
  module** in the elaboration (a generate block of that name holding RTL instances of the
  testbench's choice: 76.97 -> 100 %).

Everything a driver lies in is told by its source buffer: the RTL part's or the
testbench part's (macro expansions are traced back to their file). Costs one
elaboration and one analysis per testbench.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyslang
from pyslang import analysis, ast

from llm4cov.tasks.hdl import VIRTUAL_ROOT, isolated_source_manager, parse_tree

#: The name of the RTL part's buffer in the compilation.
RTL_PART = "llm4cov_rtl_part.sv"


@dataclass
class Elaboration:
    """One compilation of the RTL part and the testbench part of Verilator's view."""

    compilation: Any  # pyslang.ast.Compilation
    sources: pyslang.SourceManager
    tb_buffer: Any  # the testbench part's pyslang BufferID

    @classmethod
    def of(cls, rtl_text: str, tb_text: str, tb_name: str) -> Elaboration:
        """Elaborate ``rtl_text`` and ``tb_text`` (no file is ever opened).

        Raises:
            ParseLimitError: pyslang cannot parse a text (nesting too deep).
        """
        sm = isolated_source_manager()
        comp = ast.Compilation()
        comp.addSyntaxTree(parse_tree(rtl_text, RTL_PART, sm))
        tb_tree = parse_tree(tb_text, tb_name, sm)
        comp.addSyntaxTree(tb_tree)
        comp.getAllDiagnostics()  # elaborates everything
        return cls(comp, sm, tb_tree.root.sourceRange.start.buffer)

    def in_tb(self, loc: Any) -> bool:
        """Whether the location lies in the testbench part (a macro expansion's, in
        the file that expanded it)."""
        return self.sources.getFullyOriginalLoc(loc).buffer == self.tb_buffer

    def where(self, loc: Any) -> str:
        """``file:line`` of a location (the view's `` `line`` markers applied)."""
        loc = self.sources.getFullyOriginalLoc(loc)
        name = self.sources.getFileName(loc).removeprefix(VIRTUAL_ROOT + "/")
        return f"{name}:{self.sources.getLineNumber(loc)}"

    def symbols(self) -> Iterator[Any]:
        """Every symbol of the elaborated design, packages included."""
        found: list[Any] = []

        def visit(sym: Any) -> bool:
            found.append(sym)
            return True

        self.compilation.getRoot().visit(visit)
        return iter(found)


def driver_reasons(elab: Elaboration, tb_name: str, dut_module: str, dut_hier: str
                   ) -> list[str]:
    """Reasons (``file:line: ...``, in source order, one per written variable) the
    testbench's coverage is not its stimulus's own, on the elaboration of the view (see
    the module docstring); empty when none. ``dut_hier``: where the DUT instance is
    measured (``tb.dut``)."""
    symbols = list(elab.symbols())
    at = [s for s in symbols if getattr(s, "hierarchicalPath", None) == dut_hier
          and not isinstance(s, ast.ValueSymbol)]
    if at and not any(isinstance(s, ast.InstanceSymbol) and s.definition.name == dut_module
                      for s in at):
        return [f"{tb_name}: `{dut_hier}`, where the DUT is measured, is not an instance of "
                f"`{dut_module}` but {_kind(at[0])}: its coverage would not be the DUT's"]
    manager = analysis.AnalysisManager()
    manager.analyze(elab.compilation)
    found: list[tuple[int, str]] = []
    for sym in symbols:
        if not isinstance(sym, ast.VariableSymbol) or isinstance(sym, ast.ClockVarSymbol):
            continue
        drivers = list(manager.getDrivers(sym))
        tb = [d for d in drivers if elab.in_tb(d.sourceRange.start) and not _from_rtl(d, elab)
              and not _starts_at_zero(d, sym)]
        if not tb:
            continue
        path = sym.hierarchicalPath
        if _of_dut(sym, dut_hier, elab):
            what = "a variable of the DUT"
        elif any(not elab.in_tb(d.sourceRange.start) or _from_rtl(d, elab) for d in drivers):
            what = "a variable the DUT drives"
        else:
            continue
        loc = tb[0].sourceRange.start
        found.append((elab.sources.getFullyOriginalLoc(loc).offset,
                      f"{elab.where(loc)}: the testbench drives `{path}`, {what} "
                      f"({_how(tb[0])}): it writes into the DUT"))
    return [reason for _, reason in sorted(found)]


def _from_rtl(driver: Any, elab: Elaboration) -> bool:
    """Whether a driver in the testbench's text is an RTL instance's output port (the
    port connection ``.q(q)`` lies in the testbench, the drive is the DUT's)."""
    inst = driver.containingSymbol
    return (isinstance(inst, ast.InstanceSymbol) and inst.isModule
            and not elab.in_tb(inst.definition.location)
            and bool(int(driver.flags) & int(analysis.DriverFlags.OutputPort)))


def _starts_at_zero(driver: Any, sym: Any) -> bool:
    """Whether a driver is a declaration's initial value of zero: the value every
    variable starts at in the run (``+verilator+rand+reset+0``), so no write (``reg
    done = 0;`` on a DUT output is common in testbenches)."""
    if not int(driver.flags) & int(analysis.DriverFlags.Initializer):
        return False
    if sym.initializer is None:
        return False
    value = sym.initializer.eval(ast.EvalContext(sym))  # slang bounds the steps
    return not value.hasUnknown() and value.isFalse()  # a bad value is not false


def _of_dut(sym: Any, dut_hier: str, elab: Elaboration) -> bool:
    """Whether a variable is the DUT's own: declared in the RTL and lying in the DUT's
    subtree (not in a testbench module the RTL instantiates), or in an RTL package or
    compilation unit."""
    if elab.in_tb(sym.location):
        return False
    path = sym.hierarchicalPath
    return path.startswith(dut_hier + ".") or "::" in path or "." not in path


def _how(driver: Any) -> str:
    flags = int(driver.flags)
    if flags & int(analysis.DriverFlags.ClockVar):
        return "a clocking block's output"
    if flags & int(analysis.DriverFlags.OutputPort):
        return "an output port of the testbench's own module"
    if flags & int(analysis.DriverFlags.ViaIndirectPort):
        return "through a ref or interface port"
    if flags & int(analysis.DriverFlags.Initializer):
        return "its declaration's initial value"
    kind = "a continuous" if driver.kind == analysis.DriverKind.Continuous else "a procedural"
    return f"{kind} assignment"


def _kind(sym: Any) -> str:
    if isinstance(sym, ast.InstanceSymbol):
        return f"an instance of `{sym.definition.name}`"
    if isinstance(sym, ast.GenerateBlockSymbol):
        return "a generate block"
    return f"a {type(sym).__name__.removesuffix('Symbol').lower()}"
