"""The random-stimulus baseline (no simulator needed for the structure checks)."""

from __future__ import annotations

import pytest

from conftest import example_task, fixture_task
from llm4cov.agent.response import extract_testbench
from llm4cov.policies import AgentState, GenerationRequest, get_policy
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
    tb = random_testbench(task, seed=5, length=10, style="vectors")
    assert "always #5 clk = ~clk;" in tb
    assert tb.count("rst_n = 1'b0;") == 2  # initial reset + one mid-run pulse
    assert tb.count("ped_req = 1'h") == 10
    assert tb == random_testbench(task, seed=5, length=10, style="vectors")
    assert tb != random_testbench(task, seed=6, length=10, style="vectors")


HIER_ACC_COMPACT = """module tb;
  logic clk = '0;
  logic rst_n = '0;
  logic valid = '0;
  logic [7:0] x = '0;
  logic [7:0] y = '0;
  logic [7:0] acc;
  logic sat;
  acc_top dut (
    .clk(clk),
    .rst_n(rst_n),
    .valid(valid),
    .x(x),
    .y(y),
    .acc(acc),
    .sat(sat)
  );
  always #5 clk = ~clk;
  initial begin
    void'($urandom(7));
    rst_n = 1'b0;
    repeat (2) @(negedge clk);
    rst_n = 1'b1;
    valid = '0; x = '0; y = '0; @(negedge clk);
    valid = '1; x = '1; y = '1; @(negedge clk);
    for (int n = 0; n < 28; n++) begin
      if (n == 18) begin
        rst_n = 1'b0;
        @(negedge clk);
        rst_n = 1'b1;
      end
      valid = ($urandom_range(3) != 0);
      x = 8'($urandom);
      y = 8'($urandom);
      @(negedge clk);
    end
    repeat (2) @(negedge clk);
    $finish;
  end
endmodule
"""


def test_compact_testbench_of_a_hand_checked_design():
    """examples/hier_acc: clk, active-low rst_n (negedge in the RTL), a valid (high three
    cycles in four) and two bytes; 30 cycles = 2 fills + a loop of 28, the reset pulsed
    at 2/3 (cycle 20 = loop index 18); the seed seeds $urandom once. Its length does not
    grow with the number of cycles."""
    task = example_task("hier_acc")
    assert random_testbench(task, seed=7, length=30) == HIER_ACC_COMPACT
    longer = random_testbench(task, seed=7, length=3000)
    assert len(longer) - len(HIER_ACC_COMPACT) == 4  # "28" -> "2998", "18" -> "1998"


@pytest.mark.parametrize(
    ("name", "active_value"),
    [("rst", "1'b1"), ("rst_n", "1'b0"), ("resetn", "1'b0"), ("nreset", "1'b0"),
     ("reset", "1'b1"), ("rst_ni", "1'b0"), ("aresetn", "1'b0"), ("HRESETn", "1'b0"),
     ("rst_b", "1'b0"), ("wb_rst_i", "1'b1"), ("reset_n", "1'b0")],
)
def test_reset_polarity_from_name(name, active_value):
    rtl = f"module d(input clk, input {name}, input [3:0] x, output y); endmodule\n"
    task = Task(id="t", rtl_files=[SourceFile(name="d.v", content=rtl)], dut_module_name="d")
    assert _first_reset(random_testbench(task, length=4)) == f"{name} = {active_value};"


def test_policy_wraps_code_for_the_agent():
    task = fixture_task("mux2")
    gen = get_policy("random").generate(GenerationRequest(task, [], seed=3))
    assert extract_testbench(gen.text, "mux2") == random_testbench(task, seed=3)


def _task(rtl: str, name: str = "d") -> Task:
    return Task(id="t", rtl_files=[SourceFile(name=f"{name}.sv", content=rtl)],
                dut_module_name=name)


def _first_reset(tb: str) -> str:
    """The first statement of the initial block after the seeding of $urandom."""
    lines = tb.split("initial begin\n")[1].splitlines()
    return next(line.strip() for line in lines if not line.strip().startswith("void'"))


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
    tb = random_testbench(_task(rtl), seed=2, length=6, style="vectors")
    body = tb.split("initial begin\n")[1]
    assert body.startswith("    repeat (2) @(negedge clk);")  # no reset at all
    for name in ("first", "instr_first_cycle_i", "burst"):
        assert body.count(f"{name} = 1'h") == 6
    compact = random_testbench(_task(rtl), seed=2, length=6)
    assert _first_reset(compact) == "repeat (2) @(negedge clk);"
    for name in ("first", "instr_first_cycle_i", "burst"):
        assert f"      {name} = 1'($urandom);" in compact


def test_unpacked_array_and_package_typed_ports_are_declared_with_their_types():
    pkg = "package p; typedef enum logic [1:0] {A, B, C} op_e; endpackage\n"
    rtl = "module d import p::*; (input op_e op, input logic [7:0] a_i [2], output y); endmodule\n"
    task = Task(id="t", rtl_files=[SourceFile(name="d.sv", content=rtl),
                                   SourceFile(name="p.sv", content=pkg)], dut_module_name="d")
    tb = random_testbench(task, seed=0, length=3, style="vectors")
    assert "  logic [7:0] a_i [0:1] = '{default: '0};" in tb
    assert "  p::op_e op = p::op_e'(0);" in tb
    assert "op = p::op_e'(2'h3); a_i[0] = 8'hff; a_i[1] = 8'hff;" in tb  # the all-ones vector
    compact = random_testbench(task, seed=0, length=3)
    assert "  logic [7:0] a_i [0:1] = '{default: '0};" in compact
    assert "op = p::op_e'(2'('1)); a_i = '{default: '1};" in compact
    assert "op = p::op_e'(2'($urandom));" in compact
    assert "foreach (a_i[i0]) a_i[i0] = 8'($urandom);" in compact


def test_valid_waits_for_ready_and_length_sets_the_vectors():
    rtl = ("module d(input clk_i, input rst_ni, input valid_i, input [3:0] data_i, "
           "output ready_o, input out_ready_i); endmodule\n")
    tb = random_testbench(_task(rtl), seed=1, length=7, style="vectors")
    hold = "for (int k = 0; k < 8 && valid_i && !ready_o; k++) @(negedge clk_i);"
    assert tb.count(hold) == 7
    assert tb.count("data_i = 4'h") == 7
    flat = random_testbench(_task(rtl), seed=1, length=7, bus=False)
    assert "    for (int n = 0; n < 5; n++) begin" in flat  # 2 fills + 5 cycles
    assert f"      {hold}\n    end" in flat
    # the default compact style drives valid_i/ready_o as a stream of its own (bursts of
    # transfers, tests/test_stream_stimulus.py); out_ready_i has no valid: still random
    compact = random_testbench(_task(rtl), seed=1, length=7)
    assert hold not in compact and "task automatic tb_in0();" in compact
    assert "valid_i = 1'b1; data_i = 4'($urandom);" in compact
    assert "      out_ready_i = ($urandom_range(3) != 0);" in compact


def test_wide_inputs_draw_enough_words_and_loop_names_avoid_ports():
    rtl = "module d(input clk, input [69:0] w, input n, input [31:0] q, output y); endmodule\n"
    tb = random_testbench(_task(rtl), seed=1, length=5)
    assert "w = 70'({$urandom, $urandom, $urandom});" in tb
    assert "q = $urandom;" in tb
    assert "for (int n1 = 0; n1 < 3; n1++) begin" in tb  # a port is called n


@pytest.mark.parametrize(
    ("port", "usage", "value"),
    [("clr_i", "", "($urandom_range(31) == 0)"),
     ("flush_ni", "", "($urandom_range(31) != 0)"),
     ("wipe", "always @(posedge clk) if (wipe) q <= '0; else q <= x;",
      "($urandom_range(31) == 0)"),
     ("hold_n", "always @(posedge clk) if (!hold_n) q <= 4'd0; else q <= x;",
      "($urandom_range(31) != 0)"),
     ("start", "", "($urandom_range(15) == 0)"),
     ("en", "", "($urandom_range(3) != 0)"),
     ("sel", "always @(posedge clk) if (sel) q <= x; else q <= 4'd0;", "1'($urandom)")],
)
def test_control_inputs_are_asserted_rarely_not_as_random_data(port, usage, value):
    """A synchronous clear (by name or by an if that only zeroes registers) once in 32
    cycles at its active level, a start pulse once in 16, an enable three in four; a
    plain select stays random data."""
    rtl = (f"module d(input clk, input {port}, input [3:0] x, output reg [3:0] q); {usage}"
           " endmodule\n")
    assert f"      {port} = {value};" in random_testbench(_task(rtl), seed=1, length=8)


@pytest.mark.parametrize(("port", "setting"), [
    ("[15:0] prescale", True), ("[7:0] clk_div", True), ("[7:0] DIVIDER", True),
    ("[3:0] baud_i", True), ("[7:0] divisor", False), ("[7:0] div_a", False),
    ("baud", False)])
def test_rate_settings_hold_a_small_value_in_half_of_the_testbenches(port, setting):
    """A multi-bit rate setting (alexforencich's uart ``prescale``: a random 16-bit
    value each cycle made bit periods of up to ~500k cycles, so no frame ended) holds a
    value in the testbenches of seeds not a multiple of 4 (seed 1 here: 1-4 half of the time, else
    random, redrawn once in 256 cycles or while it still holds a fill vector) and is
    random data each cycle in the others (seed 0: a counter compared with it then runs
    through all its bits); an operand (``divisor``) or a 1-bit input is always data."""
    name = port.split()[-1]
    width = int(port[1:port.index(":")]) + 1 if port.startswith("[") else 1
    rtl = (f"module d(input clk, input {port}, input [3:0] x, output reg [3:0] q); "
           "endmodule\n")
    held = (f"      if ({name} == '0 || {name} == '1 || $urandom_range(255) == 0) {name} = "
            f"$urandom_range(1) ? {width}'($urandom_range(1, 4)) : {width}'($urandom);")
    free = f"      {name} = {width}'($urandom);"
    tb = random_testbench(_task(rtl), seed=1, length=8)
    assert (held in tb, free in tb) == (setting, not setting)
    tb = random_testbench(_task(rtl), seed=0, length=8)
    assert (held in tb, free in tb) == (False, True)


def test_each_clock_domain_is_driven_on_its_own_clock_with_its_own_reset():
    rtl = ("module d(input wr_clk, input wr_rst_n, input wr_en, input [7:0] wr_data,\n"
           "         input rd_clk, input rd_rst_n, input rd_en, output [7:0] rd_data);\n"
           "endmodule\n")
    tb = random_testbench(_task(rtl), seed=1, length=6)
    wr, rd = tb.split("    fork\n")[1].split("    join\n")[0].split("\n      end\n")[:2]
    assert "repeat (2) @(negedge wr_clk);\n        wr_rst_n = 1'b1;" in wr
    assert "repeat (5) @(negedge rd_clk);\n        rd_rst_n = 1'b1;" in rd
    assert "wr_data = 8'($urandom);" in wr and "wr_data" not in rd
    assert "rd_en = ($urandom_range(3) != 0);" in rd and "rd_en" not in wr
    assert "always #5 wr_clk = ~wr_clk;" in tb and "always #7 rd_clk = ~rd_clk;" in tb


def test_rtl_use_puts_an_input_in_its_clock_domain():
    rtl = ("module d(input clk_a, input clk_b, input x, input y, output reg p, output reg q);\n"
           "always @(posedge clk_a) p <= y;\nalways @(posedge clk_b) q <= x;\nendmodule\n")
    tb = random_testbench(_task(rtl), seed=1, length=6)
    first, second = tb.split("    fork\n")[1].split("\n      end\n")[:2]
    assert "y = 1'($urandom);" in first and "x = " not in first
    assert "x = 1'($urandom);" in second and "@(negedge clk_b)" in second


def test_later_rounds_of_the_policy_draw_new_stimulus():
    """Round r of one sample uses a new seed and 2**r times the cycles (rounds 2-3 of the
    agent are not a repeat of round 1)."""
    task = example_task("hier_acc")
    policy = get_policy("random", length=30)
    texts = [extract_testbench(policy.generate(GenerationRequest(
        task, [], seed=7, state=AgentState(r, None if r == 0 else "tb", None))).text,
        "acc_top") for r in range(3)]
    assert texts[0] == HIER_ACC_COMPACT
    assert "void'($urandom(7926));" in texts[1] and "n < 58;" in texts[1]
    assert "void'($urandom(15845));" in texts[2] and "n < 118;" in texts[2]


@pytest.mark.parametrize("level, asserted", [("1'b0", "1'b0"), ("1'b1", "1'b1")])
def test_reset_polarity_through_a_parameter_xor(level, asserted):
    """``wire rst = arst_i ^ ARST_LVL`` with ``negedge rst``: the input is active-low
    when ARST_LVL is 0, active-high when it is 1 (opencores' i2c; its name alone says
    active-high)."""
    rtl = (f"module ctr #(parameter ARST_LVL = {level}) (input clk, input arst_i, "
           "output reg [3:0] q);\n  wire rst = arst_i ^ ARST_LVL;\n"
           "  always @(posedge clk or negedge rst) if (!rst) q <= 0; else q <= q + 1;\n"
           "endmodule\n")
    task = Task(id="t", rtl_files=[SourceFile(name="ctr.v", content=rtl)],
                dut_module_name="ctr")
    assert _first_reset(random_testbench(task, length=4)) == f"arst_i = {asserted};"


def test_reset_aliases_carry_their_inversion():
    from llm4cov.policies.stimulus_plan import reset_aliases

    text = ("assign rst = ~rst_ni; wire r2 = rst ^ 1'b1; wire r3 = rst ^ MODE;\n"
            "sub u(.reset(r2));\n")
    assert reset_aliases(text, "rst_ni", {"MODE": 0}) == {
        "rst_ni": 0, "rst": 1, "r2": 0, "r3": 1, "reset": 0}
    assert "r3" not in reset_aliases(text, "rst_ni", {})  # MODE unknown: the chain ends
