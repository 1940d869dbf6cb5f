"""The score is the stimulus's own (issue 40, kind 3): a testbench that writes into the
DUT or changes its parameters is rejected before any build; reading stays allowed."""

from __future__ import annotations

import pytest

from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Status
from llm4cov.sim.safety import isolation
from llm4cov.sim.safety.stimulus_only import check, parameter_changes
from llm4cov.tasks.model import SourceFile, Task

#: A DUT whose generate branch MODE == 1 holds points no input reaches quickly; with
#: MODE = 0 the branch drops out of the denominator (67 % -> 100 % on the probe).
PDUT = """module pdut #(parameter int MODE = 1) (input logic clk, input logic rst,
    input logic [7:0] a, output logic [7:0] y);
  logic [7:0] acc;
  always_ff @(posedge clk) if (rst) acc <= '0; else acc <= acc + a;
  task automatic poke(input logic [7:0] v); acc = v; endtask
  generate if (MODE == 1) begin : g_hard
    logic [7:0] s;
    always_ff @(posedge clk) if (rst) s <= '0; else if (a == 8'hA5 && acc == 8'h3C) s <= 8'h01;
    assign y = s ^ acc;
  end else begin : g_easy
    assign y = acc;
  end endgenerate
endmodule
"""
HEAD = """module chk(input logic [7:0] i, output logic [7:0] o); assign o = i; endmodule
module model(input logic clk); logic debug; endmodule
interface bus_if; logic [7:0] a; endinterface
module tb;
  logic clk = 0, rst = 1; logic [7:0] a = 0, y, q; integer fd;
  bus_if bus();
  model m(.clk(clk));
  pdut dut(.clk(clk), .rst(rst), .a(a), .y(y));
"""
TAIL = "  always #5 clk = ~clk;\nendmodule\n"


def reasons(body: str, parameters: dict[str, str] | None = None) -> list[str]:
    """The check's reasons for the testbench HEAD + body + TAIL (lines from 9 on)."""
    tb = HEAD + body + TAIL
    return check(tb, "tb.sv", PDUT, {"pdut"}, "pdut", "tb.dut", parameters or {})


WRITES = """  initial begin
    force dut.acc = 8'h3C;
    release dut.acc;
    dut.acc = 1;
    dut.acc <= 2;
    tb.dut.acc[3] = 1'b1;
    $root.tb.dut.acc += 2;
    dut.acc++;
    {dut.acc, q} = 0;
    dut.poke(3);
    $readmemh("x.hex", dut.acc);
    $fscanf(fd, "%d %d", q, dut.g_hard.s);
    assign dut.acc = 3;
    deassign dut.acc;
  end
  assign dut.g_hard.s = 8'h1;
  defparam dut.MODE = 0;
  bind pdut chk c(.i(a), .o(acc));
  chk c2(.i(a), .o(dut.acc));
"""


def test_every_write_into_the_dut_is_named_with_its_line():
    # hand-listed: one reason per construct, lines counted from HEAD's 8 lines
    assert reasons(WRITES) == [
        "tb.sv:10: `force` of `dut.acc` writes into the DUT",
        "tb.sv:11: `release` of `dut.acc` writes into the DUT",
        "tb.sv:12: the assignment to `dut.acc` writes into the DUT",
        "tb.sv:13: the assignment to `dut.acc` writes into the DUT",
        "tb.sv:14: the assignment to `tb.dut.acc` writes into the DUT",
        "tb.sv:15: the assignment to `$root.tb.dut.acc` writes into the DUT",
        "tb.sv:16: the increment of `dut.acc` writes into the DUT",
        "tb.sv:17: the assignment to `dut.acc` writes into the DUT",
        "tb.sv:18: the call of `dut.poke` runs a subroutine of the DUT (it may write the "
        "DUT's state)",
        "tb.sv:19: the $readmemh output `dut.acc` writes into the DUT",
        "tb.sv:20: the $fscanf output `dut.g_hard.s` writes into the DUT",
        "tb.sv:21: `assign` of `dut.acc` writes into the DUT",
        "tb.sv:22: `deassign` of `dut.acc` writes into the DUT",
        "tb.sv:24: the continuous assignment to `dut.g_hard.s` writes into the DUT",
        "tb.sv:25: `defparam dut.MODE` changes a DUT parameter (the task sets the DUT's "
        "parameters)",
        "tb.sv:26: the output port `o` of `chk`, bound into the DUT, drives a DUT name",
        "tb.sv:27: the output port `o` of `chk` connected to `dut.acc` writes into the DUT",
    ]


def test_reading_the_dut_and_writing_the_testbench_own_state_stay_allowed():
    body = """  initial begin
    $display("%h %h", dut.acc, tb.dut.g_hard.s);
    @(posedge dut.acc[0]);
    force a = 8'h1;       // its own variable, a DUT input: stimulus
    release a;
    force m.debug = 1'b0; // its own bus model (a reference testbench does this)
    bus.a = 8'h5;         // an interface it instantiates
    q = dut.acc + 1;
    if (dut.acc == 3) q++;
  end
  bind pdut chk c(.i(acc), .o());
"""
    assert reasons(body) == []


def test_a_procedural_write_to_what_a_dut_output_drives_is_a_write_into_the_dut():
    """Verilator collapses an output port with the testbench's variable: ``y = 9`` in
    the testbench wrote the DUT's own ``q`` (a counter reached its ``q == 9`` branch
    that way, where IEEE 1800 6.5 makes the write an error). A continuous ``assign``
    of it is left to Verilator's multiple-driver checks (the corpus's dice roller)."""
    body = """  initial begin
    y = 8'h9;
    force y = 0;
    a = 8'h1;
  end
  assign y = 8'h3;
"""
    assert reasons(body) == [
        "tb.sv:10: the assignment to `y` writes into the DUT (a DUT port drives it)",
        "tb.sv:11: `force` of `y` writes into the DUT (a DUT port drives it)",
    ]
    positional = HEAD.replace(".clk(clk), .rst(rst), .a(a), .y(y)", "clk, rst, a, q")
    tb = positional + "  initial q = 0;\n" + TAIL
    assert check(tb, "tb.sv", PDUT, {"pdut"}, "pdut", "tb.dut", {}) == [
        "tb.sv:9: the assignment to `q` writes into the DUT (a DUT port drives it)"]


def test_a_bind_of_an_rtl_module_into_the_dut_is_refused():
    assert reasons("  bind pdut pdut inner(.clk(clk), .rst(rst), .a(a), .y());\n") == [
        "tb.sv:9: `bind` of the RTL module `pdut` into the DUT (its points would count "
        "as the DUT's)"]


@pytest.mark.parametrize(("override", "parameters", "changed"), [
    ("#(.MODE(0))", {}, "MODE = 0 (the task's: 1)"),
    ("#(.MODE(32'd1))", {}, None),  # the default, written another way
    ("#(.MODE(M))", {}, None),  # M is a localparam = 1 of the testbench
    ("", {"MODE": "0"}, "MODE = 1 (the task's: 0)"),  # the task's parameters ignored
    ("#(0)", {"MODE": "0"}, None),
])
def test_the_dut_elaborates_with_the_task_parameters(override, parameters, changed):
    tb = HEAD.replace("pdut dut(", f"localparam M = 1;\n  pdut {override} dut(") + TAIL
    got = parameter_changes(PDUT, tb, "tb.sv", "pdut", "tb.dut", parameters)
    assert got == ([] if changed is None else [
        f"tb.sv: the DUT `tb.dut` is elaborated with parameters other than the task's: "
        f"{changed}; instantiate it with the task's parameters"])


@pytest.mark.requires_verilator
@pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here")
def test_the_evaluator_refuses_a_defparam_forgery(tmp_path):
    """The probe's case: defparam MODE = 0 scored 100 % (67 % honestly) before."""
    task = Task(id="probe/pdut", rtl_files=[SourceFile(name="pdut.sv", content=PDUT)],
                dut_module_name="pdut")
    tb = HEAD + "  defparam dut.MODE = 0;\n" + TAIL.replace(
        "endmodule", "  initial begin #12 rst = 0; #100 $finish; end\nendmodule")
    obs = Evaluator(SimConfig(cache_dir=str(tmp_path))).evaluate(task, tb)
    assert obs.status is Status.REJECTED and obs.coverage is None
    assert "tb.sv:9: `defparam dut.MODE` changes a DUT parameter" in obs.log
    assert obs.notes[0].startswith("rejected: the testbench writes into the DUT")
