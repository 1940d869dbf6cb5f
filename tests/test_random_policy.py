"""The random-stimulus baseline (no simulator needed for the structure checks)."""

from __future__ import annotations

import pytest

from conftest import example_task, fixture_task
from llm4cov.agent.response import extract_testbench
from llm4cov.policies import GenerationRequest, get_policy
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.tasks.model import SourceFile, Task


def test_small_combinational_input_space_is_exhaustive():
    tb = random_testbench(fixture_task("mux2"), seed=0)
    # sel, en, a[2], b[2] = 6 input bits -> 64 vectors in one loop
    assert "for (int i = 0; i < 64; i++)" in tb
    assert "{sel, en, a, b} = 6'(i);" in tb
    assert "$finish;" in tb and "mux2 dut (" in tb


def test_clock_reset_and_random_vectors_are_seeded():
    task = example_task("traffic_fsm")
    tb = random_testbench(task, seed=5, length=10)
    assert "always #5 clk = ~clk;" in tb
    assert tb.count("rst_n = 1'b0;") == 2  # initial reset + one mid-run pulse
    assert tb.count("ped_req = 1'h") == 10
    assert tb == random_testbench(task, seed=5, length=10)
    assert tb != random_testbench(task, seed=6, length=10)


@pytest.mark.parametrize(
    ("name", "active_value"),
    [("rst", "1'b1"), ("rst_n", "1'b0"), ("resetn", "1'b0"), ("nreset", "1'b0"),
     ("reset", "1'b1"), ("rst_ni", "1'b0"), ("aresetn", "1'b0"), ("HRESETn", "1'b0"),
     ("rst_b", "1'b0"), ("wb_rst_i", "1'b1"), ("reset_n", "1'b0")],
)
def test_reset_polarity_from_name(name, active_value):
    rtl = f"module d(input clk, input {name}, input [3:0] x, output y); endmodule\n"
    task = Task(id="t", rtl_files=[SourceFile(name="d.v", content=rtl)], dut_module_name="d")
    first_reset = random_testbench(task, length=4).split("initial begin\n")[1].splitlines()[0]
    assert first_reset.strip() == f"{name} = {active_value};"


def test_policy_wraps_code_for_the_agent():
    task = fixture_task("mux2")
    gen = get_policy("random").generate(GenerationRequest(task, [], seed=3))
    assert extract_testbench(gen.text, "mux2") == random_testbench(task, seed=3)


def _task(rtl: str, name: str = "d") -> Task:
    return Task(id="t", rtl_files=[SourceFile(name=f"{name}.sv", content=rtl)],
                dut_module_name=name)


def _first_reset(tb: str) -> str:
    return tb.split("initial begin\n")[1].splitlines()[0].strip()


@pytest.mark.parametrize(
    ("usage", "active_value"),
    [("always @(posedge clk or negedge rst_sync) if (!rst_sync) q <= 0; else q <= x;", "1'b0"),
     ("always @(posedge clk) if (rst_sync == 1'b0) q <= 0; else q <= x;", "1'b0"),
     ("always @(posedge clk) if (rst_sync) q <= 0; else q <= x;", "1'b1"),
     ("always @(posedge clk or posedge rst_sync) if (rst_sync) q <= 0; else q <= x;", "1'b1")],
)
def test_reset_polarity_from_the_rtl_usage(usage, active_value):
    rtl = f"module d(input clk, input rst_sync, input x, output reg q); {usage} endmodule\n"
    assert _first_reset(random_testbench(_task(rtl), length=4)) == f"rst_sync = {active_value};"


def test_rtl_usage_beats_the_name_convention():
    # named like an active-low reset, but the RTL resets on rst_n high
    rtl = ("module d(input clk, input rst_n, input x, output reg q);\n"
           "always @(posedge clk or posedge rst_n) if (rst_n) q <= 0; else q <= x;\nendmodule\n")
    assert _first_reset(random_testbench(_task(rtl), length=4)) == "rst_n = 1'b1;"


def test_inputs_containing_rst_are_data_not_resets():
    rtl = ("module d(input clk, input first, input instr_first_cycle_i, input burst, "
           "output y); endmodule\n")
    tb = random_testbench(_task(rtl), seed=2, length=6)
    body = tb.split("initial begin\n")[1]
    assert body.startswith("    repeat (2) @(negedge clk);")  # no reset at all
    for name in ("first", "instr_first_cycle_i", "burst"):
        assert body.count(f"{name} = 1'h") == 6


def test_unpacked_array_and_package_typed_ports_are_declared_with_their_types():
    pkg = "package p; typedef enum logic [1:0] {A, B, C} op_e; endpackage\n"
    rtl = "module d import p::*; (input op_e op, input logic [7:0] a_i [2], output y); endmodule\n"
    task = Task(id="t", rtl_files=[SourceFile(name="d.sv", content=rtl),
                                   SourceFile(name="p.sv", content=pkg)], dut_module_name="d")
    tb = random_testbench(task, seed=0, length=3)
    assert "  logic [7:0] a_i [0:1] = '{default: '0};" in tb
    assert "  p::op_e op = p::op_e'(0);" in tb
    assert "op = p::op_e'(2'h3); a_i[0] = 8'hff; a_i[1] = 8'hff;" in tb  # the all-ones vector


def test_valid_waits_for_ready_and_length_sets_the_vectors():
    rtl = ("module d(input clk_i, input rst_ni, input valid_i, input [3:0] data_i, "
           "output ready_o, input out_ready_i); endmodule\n")
    tb = random_testbench(_task(rtl), seed=1, length=7)
    hold = "for (int k = 0; k < 8 && valid_i && !ready_o; k++) @(negedge clk_i);"
    assert tb.count(hold) == 7
    assert tb.count("data_i = 4'h") == 7
