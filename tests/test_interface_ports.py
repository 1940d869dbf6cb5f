"""A DUT with interface ports, driven by the random stimulus (``tasks/interface_ports.py``):
each member becomes a testbench variable joined to the testbench's instance of the
interface, in the direction the DUT gives it."""

from __future__ import annotations

import pytest

from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.tasks.hdl import parse_design
from llm4cov.tasks.model import SourceFile, Task

BUS_IF = """interface bus_if #(parameter int W = 8) (input logic clk);
  logic [W-1:0] data;
  logic valid;
  logic ready;
  logic busy;
  assign busy = valid && !ready;
  modport slave (input data, valid, busy, output ready);
endinterface
"""
ACC = """module acc (input logic clk, input logic rst_n, bus_if.slave in,
            output logic [15:0] sum);
  assign in.ready = 1'b1;
  always_ff @(posedge clk or negedge rst_n)
    if (!rst_n) sum <= '0;
    else if (in.valid && in.ready) begin
      if (in.data > 8'd200) sum <= sum + 16'd2 * in.data;
      else sum <= sum + in.data;
    end
endmodule
"""


def ports_of(rtl: str, top: str):
    design = parse_design([SourceFile(name="bus_if.sv", content=BUS_IF),
                           SourceFile(name="dut.sv", content=rtl)])
    return design.flat_ports(top)


def test_a_modport_gives_each_member_the_dut_direction():
    ports, interfaces = ports_of(ACC, "acc")
    members = {p.name: (p.direction, p.width, p.via) for p in ports if p.via}
    # `busy` is a modport input, but the interface's own `assign` drives it: read it
    assert members == {"in_data": ("input", 8, "in_if.data"),
                       "in_valid": ("input", 1, "in_if.valid"),
                       "in_busy": ("output", 1, "in_if.busy"),
                       "in_ready": ("output", 1, "in_if.ready")}
    assert [p.name for p in ports if not p.via] == ["clk", "rst_n", "sum"]
    assert [i.instantiation() for i in interfaces] == ["bus_if #(.W(8)) in_if(.clk(clk));"]


def test_a_generic_port_reads_directions_from_the_drivers():
    """Without a modport, a member something drives (the DUT's `assign`, the
    interface's own) is read; the others are driven. The interface's clock, with no DUT
    port of its name, becomes an input of its own."""
    rtl = ACC.replace("input logic clk, input logic rst_n, bus_if.slave in",
                      "input logic rst_n, bus_if in").replace("posedge clk", "posedge in.clk")
    ports, interfaces = ports_of(rtl, "acc")
    members = {p.name: p.direction for p in ports}
    assert members == {"rst_n": "input", "sum": "output", "in_clk": "input",
                       "in_data": "input", "in_valid": "input", "in_ready": "output",
                       "in_busy": "output"}
    assert interfaces[0].connections == (("clk", "in_clk"),)


def test_an_array_of_interfaces_is_refused():
    rtl = "module two (bus_if.slave in [2]);\nendmodule\n"
    with pytest.raises(ValueError, match="array of interfaces"):
        ports_of(rtl, "two")
    with pytest.raises(ValueError, match="generic interface port"):
        ports_of("module gen (interface in);\nendmodule\n", "gen")


def test_the_random_testbench_joins_members_to_the_interface_instance():
    task = Task(id="t/acc", rtl_files=[SourceFile(name="bus_if.sv", content=BUS_IF),
                                       SourceFile(name="acc.sv", content=ACC)],
                dut_module_name="acc")
    tb = random_testbench(task, seed=1, length=50)
    for line in ["bus_if #(.W(8)) in_if(.clk(clk));", "assign in_if.data = in_data;",
                 "assign in_if.valid = in_valid;", "assign in_ready = in_if.ready;",
                 "assign in_busy = in_if.busy;", ".in(in_if)"]:
        assert line in tb, line


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_the_random_testbench_reaches_the_dut_through_the_interface(evaluator):
    """Both arms of ``in.data > 200`` and of the reset need data driven through the
    interface: all 4 branch points of ``acc`` (2 ifs with else), and its 3 lines."""
    task = Task(id="t/acc", rtl_files=[SourceFile(name="bus_if.sv", content=BUS_IF),
                                       SourceFile(name="acc.sv", content=ACC)],
                dut_module_name="acc")
    obs = evaluator.evaluate(task, random_testbench(task, seed=1))
    assert obs.status.value == "success", obs.log[-2000:]
    branch = obs.coverage.metrics["branch"]
    assert (branch.covered, branch.total) == (4, 4)


@pytest.mark.requires_solver
@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_close_says_formal_cannot_take_an_interface_port(tmp_path):
    """The random steps close what they can; the formal step refuses the design (its
    harness instantiates the DUT alone), and the residual says so, not "did not get to
    it". ``in.ready`` is tied to 1, so ``in.valid && in.ready`` is never false with
    ready 0: one expression row stays."""
    import json

    from llm4cov.cli.app import main
    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "bus_if.sv").write_text(BUS_IF)
    (rtl / "acc.sv").write_text(ACC)
    out = tmp_path / "out"
    assert main(["close", str(rtl), "--top", "acc", "--out", str(out), "--no-html",
                 "--lengths", "200"]) == 0
    run = json.loads((out / "run.json").read_text())
    rows = run["residual"]
    assert ("expr", 6) in {(r["metric"], r["line"]) for r in rows}
    for r in rows:  # (200 cycles leave some high toggles of `sum` too)
        assert r["cause"] == "not_reached"
        assert r["reason"].endswith("formal: not analyzed: the formal tools cannot take the "
                                    "design (port 'in' of 'acc' is an interface port)")
