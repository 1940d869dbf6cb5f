"""Issue 45: Verilator's two-state start said in a note, the testbench's own verdict
counted, the simulated time as a number (``sim/analysis/fidelity.py``, ``docs/fidelity.md``)."""

from __future__ import annotations

import pytest

from llm4cov.agent.prompt import render_observation
from llm4cov.sim.analysis.fidelity import TIME0_NOTE, edge_inputs, error_prints, time0_edge_notes
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.sim.report import coverage_markdown
from llm4cov.sim.safety import isolation
from llm4cov.tasks.model import SourceFile, Task

#: An LFSR-like register with an active-low asynchronous reset to a non-zero seed:
#: under 4-state simulation the testbench below resets it at time 0 (X -> 0 is a
#: negedge), under Verilator (two-state, 0 -> 0) it never loads 4'd5.
DUT = """module cnt(input logic clk, input logic rst_n, output logic [3:0] q);
  always_ff @(posedge clk or negedge rst_n)
    if (!rst_n) q <= 4'd5;
    else q <= q + 4'd1;
endmodule
"""
TB = """`timescale 1ns/1ps
module tb;
  logic clk = 0;
  logic rst_n;
  logic [3:0] q;
  cnt dut(.clk(clk), .rst_n(rst_n), .q(q));
  initial begin
    rst_n = 0;
    #3 rst_n = 1;
    #20 $finish;
  end
  always #5 clk = ~clk;
endmodule
"""


def _where(text: str):
    return lambda offset: f"tb.sv:{text.count(chr(10), 0, offset) + 1}"


def _notes(tb: str, rtl: str = DUT) -> list[str]:
    return time0_edge_notes(rtl, tb, "cnt", "tb", "dut", _where(tb))


def test_the_dut_inputs_it_waits_on_are_found_through_instances():
    rtl = DUT + """module top(input logic c, input logic r, output logic [3:0] o);
  cnt u(c, r, o);
endmodule
"""
    got = edge_inputs(rtl)
    assert got["cnt"] == {"clk": {"posedge"}, "rst_n": {"negedge"}}
    assert got["top"] == {"c": {"posedge"}, "r": {"negedge"}}


def test_a_time0_reset_to_the_active_level_is_noted_with_signal_line_cause_and_fix():
    (note,) = _notes(TB)
    assert note.startswith("`rst_n` (the DUT's input `rst_n`")
    assert "(tb.sv:8)" in note
    assert "X -> 0 is a negedge" in note and "Verilator starts two-state at 0" in note
    assert "`rst_n = 1; #1 rst_n = 0;`" in note


@pytest.mark.parametrize("tb", [
    TB.replace("logic rst_n;", "logic rst_n = 1;"),        # an earlier value
    TB.replace("rst_n = 0;\n", "#1 rst_n = 0;\n"),          # after time 0
    TB.replace("rst_n = 0;\n", "rst_n = 1; #1 rst_n = 0;\n"),  # the inactive level first
    TB.replace("logic rst_n;", "bit rst_n;"),               # two-state everywhere
    TB.replace("rst_n = 0;\n", "rst_n = 1;\n"),             # X -> 1 and 0 -> 1: no negedge
])
def test_no_note_when_4_state_and_two_state_runs_agree(tb):
    assert _notes(tb) == []


def test_a_posedge_reset_set_at_time0_is_the_same_under_both():
    """X -> 1 and 0 -> 1 are both posedges (IEEE 1800 9.4.2): no note."""
    rtl = DUT.replace("negedge rst_n", "posedge rst_n").replace("!rst_n", "rst_n")
    assert _notes(TB.replace("rst_n = 0;\n", "rst_n = 1;\n"), rtl) == []
    assert _notes(TB, rtl) == []


def test_implicit_and_wildcard_connections_are_followed():
    assert len(_notes(TB.replace(".rst_n(rst_n)", ".rst_n"))) == 1
    assert len(_notes(TB.replace("cnt dut(.clk(clk), .rst_n(rst_n), .q(q));",
                                 "cnt dut(.*);"))) == 1


def test_error_prints_are_counted_and_zero_counts_are_not():
    out = ("ERROR: mismatch at 3\nerror count: 0\nErrors: 0\n"
           "[0] %Error: tb.sv:3: Assertion failed in tb\nFAILED vector 2\nall ok\n"
           "** Error: x\nmy ERROR is here\n")
    assert error_prints(out) == 3
    # a bracketed time and TEST before it count (a twenty-ninth red team); Verilator's
    # own `[0] %Error` and a zero count after a time do not
    timed = "[120] ERROR: bad\n[5ns] Error: x\nTEST FAILED\n[0] %Error: a\n[9] errors: 0\n"
    assert error_prints(timed) == 3


def test_the_feedback_shows_the_prints_and_the_notes():
    obs = Observation(status=Status.SUCCESS, tb_error_count=1, tb_error_prints=2,
                      notes=[TIME0_NOTE], sim_time_ps=0)
    text = render_observation(obs, Task(id="t", rtl_files=[SourceFile(
        name="cnt.sv", content=DUT)], dut_module_name="cnt"))
    assert "reported 1 $error" in text
    assert "printed 2 line(s) starting with ERROR/FAIL" in text
    assert "finished at time 0" in text
    md = coverage_markdown(obs, Task(id="t", rtl_files=[SourceFile(
        name="cnt.sv", content=DUT)], dut_module_name="cnt"))
    assert "testbench errors: 1 $error/assertion failure(s), 2 ERROR/FAIL line(s)" in md
    assert "note: the testbench finished at time 0" in md
    assert Observation.model_validate_json(obs.model_dump_json()).sim_time_ps == 0


@pytest.fixture
def evaluator() -> Evaluator:
    # The session's build store (conftest's cache dir): a fresh one per test would
    # precompile the runtime again, ~10 s that test nothing here.
    return Evaluator(SimConfig(result_cache=False))


TASK = Task(id="probe/cnt", rtl_files=[SourceFile(name="cnt.sv", content=DUT)],
            dut_module_name="cnt")


@pytest.mark.requires_verilator
@pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here")
def test_the_evaluator_notes_the_time0_reset_and_gives_the_time_in_ps(evaluator):
    obs = evaluator.evaluate(TASK, TB)
    assert obs.status is Status.SUCCESS
    assert obs.sim_time_ps == 23_000  # #3 + #20 in 1 ns units
    notes = [n for n in obs.notes if n.startswith("`rst_n`")]
    assert len(notes) == 1 and "(tb.sv:8)" in notes[0]
    assert TIME0_NOTE not in obs.notes and obs.tb_error_prints == 0
    assert "`rst_n`" in render_observation(obs, TASK)


@pytest.mark.requires_verilator
@pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here")
@pytest.mark.heavy
def test_the_testbench_verdict_at_time0_is_counted_and_said(evaluator):
    tb = """module tb;
  logic clk = 0, rst_n = 1;
  logic [3:0] q;
  cnt dut(.clk(clk), .rst_n(rst_n), .q(q));
  initial begin
    if (q !== 4'd5) $display("ERROR: mismatch, q=%0d", q);
    $error("q is not the seed");
    $finish;
  end
endmodule
"""
    obs = evaluator.evaluate(TASK, tb)
    assert obs.status is Status.SUCCESS  # the coverage figure is the stimulus's own
    assert obs.sim_time_ps == 0
    assert obs.tb_error_count == 1 and obs.tb_error_prints == 1
    assert TIME0_NOTE in obs.notes
    assert not any(n.startswith("`rst_n`") for n in obs.notes)
