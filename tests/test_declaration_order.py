"""A name used above its declaration: pyslang binds it to an outer declaration, Verilator
to the scope's own (``sim/safety/declaration_order.py``)."""

from __future__ import annotations

import pytest

from llm4cov.sim.model.observation import Status
from llm4cov.sim.safety.stimulus_only import judge
from llm4cov.tasks.model import SourceFile, Task

CNT = """interface cnt_if (input logic clk);
  logic [7:0] count;
  modport dut (input clk, output count);
endinterface
module cnt (cnt_if.dut b);
  always_ff @(posedge b.clk) b.count <= b.count + 8'd1;
endmodule
"""


def found(tb: str) -> list[str]:
    return judge(tb, "tb.sv", CNT, {"cnt"}, "cnt", "tb.dut", {}).reasons


def test_a_handle_used_above_its_declaration_binds_elsewhere_in_pyslang():
    """The task's ``h`` is the file-level handle to pyslang (never set: its write looked
    harmless) and ``tb.h`` to Verilator, which holds the DUT's interface."""
    tb = ("virtual cnt_if h;\nmodule tb;\n  logic clk = 0;\n  cnt_if bus(clk);\n"
          "  cnt dut(.b(bus));\n  task automatic poke(input logic [7:0] x); h.count = x; "
          "endtask\n  virtual cnt_if h = bus;\nendmodule\n")
    assert found(tb) == ["tb.sv:6: `h` is used above its declaration, where pyslang and "
                         "Verilator bind it to different declarations: declare it first"]
    moved = tb.replace("  virtual cnt_if h = bus;\n", "").replace(
        "  task automatic", "  virtual cnt_if h = bus;\n  task automatic")
    assert all("above its declaration" not in r for r in found(moved))


def test_an_instance_used_above_it_binds_to_a_package_object_in_pyslang():
    tb = ("package p; class C; logic [7:0] count; endclass C bus = new; endpackage\n"
          "import p::*;\nmodule tb;\n  logic clk = 0;\n"
          "  task automatic poke(input logic [7:0] x); bus.count = x; endtask\n"
          "  cnt_if bus(clk);\n  cnt dut(.b(bus));\nendmodule\n")
    assert found(tb) == ["tb.sv:5: `bus` is used above its declaration, where pyslang and "
                         "Verilator bind it to different declarations: declare it first"]


def test_forward_references_both_tools_bind_alike_pass():
    """A hierarchical name above its instance (``$display(dut.count)``), a call above its
    task, loop variables beside a module variable of the same name."""
    tb = ("module tb;\n  logic clk = 0;\n  initial $display(dut.b.count);\n"
          "  initial run();\n  task run(); endtask\n  cnt_if bus(clk);\n  cnt dut(.b(bus));\n"
          "  int arr[4];\n  initial for (int i = 0; i < 2; i++) arr[i] = i;\n"
          "  initial foreach (arr[k]) arr[k] = k;\n  int i, k;\nendmodule\n")
    assert found(tb) == []


def test_code_pyslang_cannot_elaborate_is_named():
    """``$clog2`` of a real: slang leaves the statement out of its AST (so no check saw
    the write); the evaluator refuses it once Verilator builds it."""
    tb = ("module tb;\n  logic clk = 0;\n  cnt_if bus(clk);\n  cnt dut(.b(bus));\n"
          "  initial bus.count = 8'd5 + 8'($clog2(1.0));\nendmodule\n")
    result = judge(tb, "tb.sv", CNT, {"cnt"}, "cnt", "tb.dut", {})
    assert result.reasons == []
    assert result.unelaborated == ["tb.sv:5: invalid argument type 'real' to system function"]


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_the_evaluator_refuses_unelaborated_code_once_verilator_builds_it(evaluator):
    """A fifteenth red team: the write rode on a statement slang dropped (53.57 -> 75.00 %).
    A compile error in such code would keep Verilator's own feedback."""
    task = Task(id="probe/cnt", rtl_files=[SourceFile(name="cnt.sv", content=CNT)],
                dut_module_name="cnt", dut_instance_name="dut")
    tb = ("module tb;\n  logic clk = 0;\n  always #5 clk = ~clk;\n  cnt_if bus(clk);\n"
          "  cnt dut(.b(bus));\n  initial begin #20 bus.count = 8'd5 + 8'($clog2(1.0)); "
          "#20 $finish; end\nendmodule\n")
    obs = evaluator.evaluate(task, tb)
    assert obs.status is Status.REJECTED
    assert obs.log.startswith("Rejected after building: Verilator builds testbench code "
                              "that pyslang cannot elaborate")
    broken = evaluator.evaluate(task, tb.replace("#20 $finish;", "#20 $finish(;"))
    assert broken.status is Status.COMPILE_ERROR


def test_a_bind_in_a_module_the_top_does_not_instantiate_is_refused():
    """Verilator applies it; the elaboration under the testbench's top does not see it (a
    port connection's ``$sscanf`` wrote the DUT's register: 39.04 -> 47.17 %, a
    seventeenth red team)."""
    tb = ("module obs(input int r);\nendmodule\nmodule unused_helper;\n"
          "  bind cnt obs o(.r(1));\nendmodule\nmodule tb;\n  logic clk = 0;\n"
          "  cnt_if bus(clk);\n  cnt dut(.b(bus));\nendmodule\n")
    assert found(tb) == ["tb.sv:4: a `bind` in `unused_helper`, which the testbench's top "
                         "does not instantiate: Verilator applies it, the check does not see "
                         "it"]
    used = tb.replace("  cnt dut(.b(bus));\n", "  cnt dut(.b(bus));\n  unused_helper h();\n")
    assert found(used) == []


def test_a_dut_function_called_from_a_bind_connection_is_refused():
    """A bind's connections are read in the DUT's scope: ``enc(...)`` is the DUT's own
    function, called with values its input never carries (43.89 -> 60.56 %, an
    eighteenth red team)."""
    rtl = ("module fdut(input logic [7:0] a, output logic [2:0] z);\n"
           "  function automatic logic [2:0] enc(input logic [7:0] v);\n"
           "    return {v[0] && v[1], v[2] || v[3], 1'b0};\n  endfunction\n"
           "  assign z = enc({a[7:4], 4'h0});\nendmodule\n")
    tb = ("module chk(input logic [2:0] p);\nendmodule\nmodule tb;\n  logic [7:0] a = 0;\n"
          "  logic [2:0] z;\n  fdut dut(.a(a), .z(z));\n  bind fdut chk c(.p(enc(a | 8'h03)));\n"
          "endmodule\n")
    assert judge(tb, "tb.sv", rtl, {"fdut"}, "fdut", "tb.dut", {}).reasons == [
        "tb.sv:7: the call of `tb.dut.enc` runs a subroutine of the DUT (its code counts as "
        "the DUT's)"]
    honest = tb.replace("enc(a | 8'h03)", "z")
    assert judge(honest, "tb.sv", rtl, {"fdut"}, "fdut", "tb.dut", {}).reasons == []


def test_a_checker_bound_into_the_dut_may_count_its_own_changes():
    """Two assignments of its own variable in one block: slang lists one driver, below
    the DUT's path, and the other looked like a write to a DUT-driven variable (a
    nineteenth red team's false positive); its drivers are the testbench's text."""
    tb = ("module chk(input logic clk, input logic [7:0] v);\n  int changes;\n"
          "  logic [7:0] prev;\n  always @(posedge clk) begin\n"
          "    if (prev != v) changes <= changes + 1; else changes <= changes;\n"
          "    prev <= v;\n  end\nendmodule\nmodule tb;\n  logic clk = 0;\n  cnt_if bus(clk);\n"
          "  cnt dut(.b(bus));\n  bind cnt chk c(.clk(b.clk), .v(b.count));\nendmodule\n")
    assert found(tb) == []


@pytest.mark.parametrize("around", ["if (0) begin : g {} end",
                                    "for (genvar i = 0; i < 0; i++) begin : g {} end",
                                    "if (1) begin : g end else begin : h {} end"])
def test_a_bind_in_a_generate_construct_is_refused(around):
    """Verilator applies it whatever the condition; the elaboration only in a built
    branch (a dead ``if (0)`` bind's ``$sscanf`` wrote the DUT: 73.08 -> 86.54 %, a
    twentieth red team)."""
    bind = "bind cnt obs o(.r(1));"
    tb = ("module obs(input int r);\nendmodule\nmodule tb;\n  logic clk = 0;\n"
          "  cnt_if bus(clk);\n  cnt dut(.b(bus));\n  " + around.format(bind) + "\nendmodule\n")
    assert found(tb) == ["tb.sv:7: a `bind` in a generate construct: Verilator applies it "
                         "whatever its condition, the check only where the branch is built"]
