"""A DUT parameter value pyslang and Verilator may evaluate differently (a user function,
an ``x``) is settled by Verilator's own elaboration (``--json-only``,
``sim/backends/verilator/elaborated.py``): the task's value passes, another is refused
with Verilator's values. ``pm``'s ``P`` picks its easy generate branch when nonzero."""

from __future__ import annotations

import pytest

from llm4cov.sim.analysis.structure import plan_testbench
from llm4cov.sim.safety.stimulus_only import judge
from llm4cov.tasks.model import SourceFile, Task

PM = """module pm #(parameter int P = 0, parameter int W = 4) (input logic clk, output logic q);
  localparam int L = P * 2;
  if (P == 0) begin : g0 assign q = clk; end else begin : g1 assign q = 1'b0; end
endmodule
"""
TASK = Task(id="probe/pm", rtl_files=[SourceFile(name="pm.sv", content=PM)],
            dut_module_name="pm", dut_instance_name="dut")
FUNCTIONS = """  function automatic integer clog2(input integer v);
    integer r; v = v - 1; for (r = 0; v > 0; r = r + 1) v = v >> 1; return r;
  endfunction
  function automatic int f(); logic c; return c ? 2 : 1; endfunction
"""


def tb(values: str, wrapper: bool = False) -> str:
    inst = f"pm #({values}) dut(.clk(clk), .q(q));"
    if wrapper:
        return (f"module wrap(input logic clk);\n  logic q;\n  {inst}\nendmodule\n"
                f"module tb;\n{FUNCTIONS}  logic clk = 0;\n  wrap w(.clk(clk));\nendmodule\n")
    return f"module tb;\n{FUNCTIONS}  logic clk = 0; logic q;\n  {inst}\nendmodule\n"


def simulator_says(evaluator, text: str) -> list[str]:
    src = SourceFile(name="tb.sv", content=text)
    inspection = evaluator.inspect(TASK, src)
    assert inspection.reasons == []
    plan = plan_testbench(TASK.rtl_files, src, "pm", "dut", view=inspection.view)
    return evaluator._dut_writes(TASK, src, plan, inspection.view)


def test_pyslang_alone_leaves_a_user_function_to_the_simulator():
    found = judge(tb(".W(clog2(16))"), "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == []
    assert found.dut_values == [
        "tb.sv:7: the value of the parameter `W` of `pm` is computed with a function call, "
        "which Verilator and the check may evaluate differently: give it as a plain "
        "constant"]


@pytest.mark.parametrize("values", [".W(clog2(16))", ".P(clog2(1)), .W(4)"])
def test_a_user_function_that_gives_the_task_value_passes(evaluator, values):
    """clog2(16) = 4 is W's default, clog2(1) = 0 is P's (a Verilog-2001 testbench's
    idiom, refused before)."""
    assert simulator_says(evaluator, tb(values)) == []


def test_a_function_verilator_evaluates_to_another_value_is_refused(evaluator):
    """``c ? 2 : 1`` on an unset ``logic c``: 0 to pyslang (the task's), 1 to Verilator,
    which builds the easy branch (a twelfth red team's forgery)."""
    assert simulator_says(evaluator, tb(".P(f())")) == [
        "tb.sv: the simulator elaborates the DUT `tb.dut` with parameters other than the "
        "task's: P = 32'h1 (the task's: 32'sh0); L = 32'h2 (the task's: 32'h0); "
        "instantiate it with the task's parameters"]


def test_a_value_passed_on_by_a_wrapper_stays_refused(evaluator):
    """The wrapper's own generate conditions could read it: only a value given to the
    DUT module itself is settled by the simulator."""
    text = tb(".W(clog2(16))", wrapper=True).replace("pm #(.W(clog2(16)))", "pm #(.W(W))")
    text = text.replace("module wrap(", "module wrap #(parameter int W = 4) (").replace(
        "wrap w(", "wrap #(.W(clog2(16))) w(")
    src = SourceFile(name="tb.sv", content=text)
    inspection = evaluator.inspect(TASK, src)
    plan = plan_testbench(TASK.rtl_files, src, "pm", "dut", view=inspection.view)
    assert plan.dut_hier == "tb.w.dut"
    found = evaluator._dut_writes(TASK, src, plan, inspection.view)
    assert len(found) == 1 and "the parameter `W` of `wrap`" in found[0]


def test_verilator_names_the_instance_values_through_generate_blocks(evaluator):
    rtl = PM + ("module wrap #(parameter int Q = 1) (input logic clk);\n  logic q;\n"
                "  for (genvar i = 0; i < 2; i++) begin : g\n"
                "    pm #(.P(Q + i), .W(8)) dut(.clk(clk), .q(q));\n  end\nendmodule\n")
    text = rtl + "module tb;\n  logic clk = 0;\n  wrap #(.Q(3)) w(.clk(clk));\nendmodule\n"
    backend = evaluator.backend
    assert backend.elaborated_parameters(text, "tb", "tb.w.g[1].dut", {}) == {
        "P": "32'h4", "W": "32'sh8", "L": "32'h8"}
    assert backend.elaborated_parameters(text, "tb", "tb.w.g[2].dut", {}) is None
    assert backend.elaborated_parameters(text + "syntax error", "tb", "tb.w", {}) is None


def test_a_type_query_of_a_name_reads_the_name_s_declaration():
    """``$bits(w)`` of ``logic [(f() === 1):0] w`` is f()'s value: the width is followed
    (a sixteenth red team: 81.41 -> 100 %), to the simulator's elaboration."""
    text = tb(".P($bits(w) - 1)").replace("  logic clk = 0;",
                                          "  logic [(f() === 1):0] w;\n  logic clk = 0;")
    found = judge(text, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == [] and len(found.dut_values) == 1
    assert "computed with a function call" in found.dut_values[0]
    plain = text.replace("(f() === 1)", "1")
    assert judge(plain, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {}).dut_values == ()


@pytest.mark.parametrize("before, value", [
    ("  let L = f();\n", ".P(L)"),  # a let's body (a seventeenth red team: 50 -> 75 %)
    ("", ".P(Q)"),  # a name the text does not declare: left to the simulator too
])
def test_a_let_or_an_undeclared_name_is_left_to_the_simulator(before, value):
    text = tb(value).replace("  logic clk = 0;", before + "  logic clk = 0;")
    found = judge(text, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == [] and len(found.dut_values) == 1


def test_a_type_parameter_default_is_followed():
    text = tb(".P($bits(T) - 1)").replace(
        "module tb;", "module tb #(parameter type T = logic [tb.f():0]);")
    found = judge(text, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert "computed with a function call" in found.dut_values[0]
