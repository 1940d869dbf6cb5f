"""Forged DUT coverage: a testbench module placed under the DUT with ``bind`` and
claiming an RTL file with `` `line`` never counts (Verilator's page module decides)."""

from __future__ import annotations

from conftest import FIXTURES
from llm4cov.sim.analysis.structure import plan_testbench
from llm4cov.sim.backends.verilator.coverage_dat import parse_coverage_dat
from llm4cov.sim.model.coverage import DesignModules, summarize
from llm4cov.tasks.model import SourceFile

FORGERY = FIXTURES / "forgery"
COUNTER = SourceFile(name="counter.sv", content=(
    "module counter(input logic clk, input logic rst, input logic en, output logic [3:0] q);\n"
    "  always_ff @(posedge clk) begin\n"
    "    if (rst) q <= 4'd0;\n"
    "    else if (en) q <= q + 4'd1;\n"
    "  end\n"
    "endmodule\n"
))


def test_bound_testbench_module_with_line_directive_never_counts():
    # bind_line.coverage.dat: Verilator 5.48's run of bind_line_tb.sv (module padcov,
    # `line 1 "counter.sv", bound as tb.dut.pad: 514 toggles, 2 lines, all covered).
    points = parse_coverage_dat(FORGERY / "bind_line.coverage.dat")
    tb = SourceFile(name="tb.sv", content=(FORGERY / "bind_line_tb.sv").read_text())
    plan = plan_testbench([COUNTER], tb, "counter", "dut")
    forged = summarize(points, plan.dut_hier, {"counter.sv"})
    assert forged is not None and forged.metrics["toggle"].covered == 518  # the hole
    report = summarize(points, plan.dut_hier, {"counter.sv"}, plan.modules)
    assert report is not None
    # counter alone (the no-bind baseline): branch 1/2, line 2/2, toggle 4/14
    assert {m: (c.covered, c.total) for m, c in report.metrics.items()} == {
        "branch": (1, 2), "line": (2, 2), "toggle": (4, 14),
    }
    assert report.overall == round((50 + 100 + 400 / 14) / 3, 4)  # 59.5238
    assert list(report.per_instance) == ["tb.dut"]
    assert plan.bound == ("padcov",)
    assert any("bound testbench modules are not DUT coverage" in n
               for n in plan.notes("counter"))
    # Verilator's parameter-specialized copies (`counter__Lz2`, `top__W8`) stay RTL; a
    # testbench module named like a copy (and its own copies) does not
    mods = DesignModules(frozenset({"counter", "top"}), frozenset({"tb", "counter__x"}))
    assert [mods.is_rtl(m) for m in ("counter__Lz2", "top__W8", "counter__x",
                                     "counter__x__W8", "counterx", "")] == [
        True, True, False, False, False, False,
    ]
