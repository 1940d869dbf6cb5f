"""A testbench must not choose which metrics count (a twenty-first red team's finding,
2026-12-07): four lines of its own code crashed the pinned Verilator (V3Fork, fixed
upstream by verilator#7834) only under ``--coverage-expr``; the evaluator's retry
dropped expression coverage and ``overall``, the mean of the remaining metrics, rose
(93.17 -> 95.06 %). The build now compiles the testbench's file uninstrumented (a
``coverage_off`` configuration), so its code cannot crash a coverage option; a metric
the retry still drops counts 0 % unless the RTL alone crashes the same way
(``docs/evaluator.md``, "Tool failures and the retry")."""

from __future__ import annotations

import pytest

import llm4cov.sim.backends.verilator as verilator_backend
from llm4cov.sim.analysis import structure
from llm4cov.sim.backends.verilator import TB_COVERAGE_OFF, tb_coverage_off
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Status
from llm4cov.tasks.model import SourceFile, Task

#: The red team's design: eight expression points, expr the weakest metric but one.
CMP = """module cmp(input logic clk, input logic [7:0] a, input logic [7:0] b, input logic m,
           output logic y, output logic [7:0] s);
  always_ff @(posedge clk) begin
    if ((a == 8'hFF && b == 8'h00) || (m && a[0] && b[7])) y <= 1'b1;
    else y <= 1'b0;
    s <= a + b;
  end
endmodule
"""
#: The construct that crashes the pinned build under --coverage-expr (V3Fork).
FORK = '  initial fork begin #1; if (!$onehot(x) && x[0]) $display("x"); end join_none\n'
#: An RTL module outside the DUT that holds the construct: the RTL alone builds.
CHK = f"module chk;\n  logic [3:0] x;\n{FORK}endmodule\n"
HEAD = """module tb;
  logic clk = 0; logic [7:0] a = 0, b = 0; logic m = 0; logic y; logic [7:0] s;
  cmp dut(.clk(clk), .a(a), .b(b), .m(m), .y(y), .s(s));
  always #5 clk = ~clk;
"""
STIMULUS = """  initial begin
    repeat (64) @(negedge clk) begin a = a + 8'd37; b = b + 8'd11; m = ~m; end
    $finish;
  end
endmodule
"""
HONEST = HEAD + STIMULUS
FORGED = HEAD + "  logic [3:0] x;\n" + FORK + STIMULUS
#: The honest control's figures (pinned build): expr 7/8.
HONEST_METRICS = {"branch": (2, 2), "expr": (7, 8), "line": (1, 1), "toggle": (46, 54)}
HONEST_OVERALL = 93.1713


def _task(rtl: str = CMP) -> Task:
    return Task(id="probe/cmp", rtl_files=[SourceFile(name="cmp.sv", content=rtl)],
                dut_module_name="cmp", dut_instance_name="dut")


def _metrics(obs) -> dict[str, tuple[int, int]]:
    return {m: (c.covered, c.total) for m, c in obs.coverage.metrics.items()}


@pytest.fixture(scope="module")
def fresh():
    """An evaluator without the result cache (every call builds)."""
    return Evaluator(SimConfig(result_cache=False))


def test_the_configuration_turns_off_the_testbench_file_only():
    assert tb_coverage_off("tb.sv") == '`verilator_config\ncoverage_off -file "tb.sv"\n'
    assert tb_coverage_off("-tb.sv").splitlines()[1:] == [
        'coverage_off -file "-tb.sv"', 'coverage_off -file "./-tb.sv"']


@pytest.mark.requires_verilator
def test_the_build_reads_the_configuration_before_the_sources(fresh):
    tb = SourceFile(name="tb.sv", content=HONEST)
    cmd = fresh.backend.verilate_command(_task(), tb, structure.TestbenchPlan("tb", "tb.dut"),
                                         config_files=(f"../{TB_COVERAGE_OFF}",))
    assert cmd[-4:] == [f"../{TB_COVERAGE_OFF}", "cmp.sv", "tb.sv", "../driver_main.cpp"]
    # the static check's -E run never reads it (configuration is no preprocessing)
    assert not any(TB_COVERAGE_OFF in a for a in fresh.backend.preprocess_command(_task(), tb))


@pytest.mark.requires_verilator
@pytest.mark.parametrize("forged", [
    FORGED,
    # a `line directive naming the RTL file does not take the code out of coverage_off
    '`line 1 "cmp.sv" 0\n' + FORGED,
    # nor does a meta-comment that turns coverage on
    FORGED.replace(FORK, "  /*verilator coverage_on*/\n" + FORK),
], ids=["fork", "line_directive", "coverage_on"])
def test_the_testbench_code_cannot_crash_a_metric_away(fresh, forged):
    """The red team's testbench builds with expression coverage: nothing is dropped and
    the score is the honest control's (93.17 %, not 95.06 %)."""
    obs = fresh.evaluate(_task(), forged)
    assert obs.status is Status.SUCCESS, obs.log
    assert "--coverage-expr" in obs.coverage_options
    assert not any("rebuilt once without" in n for n in obs.notes)
    assert _metrics(obs) == HONEST_METRICS
    assert obs.coverage.overall == HONEST_OVERALL


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_without_the_configuration_the_dropped_metric_counts_zero(fresh, monkeypatch):
    """Where the testbench's code is instrumented (a build without the configuration,
    e.g. ``verilator-5.052``'s), the red team's crash drops expression coverage and the
    fallback counts it 0 % over the DUT's 8 points: 71.3 %, not 95.06 %."""
    monkeypatch.setattr(verilator_backend, "tb_coverage_off", lambda name: "`verilator_config\n")
    obs = fresh.evaluate(_task(), FORGED)
    assert obs.status is Status.SUCCESS, obs.log
    assert "--coverage-expr" not in obs.coverage_options
    assert any("Verilator internal error" in n for n in obs.notes)
    assert any("counts as 0 % covered (8 points)" in n for n in obs.notes), obs.notes
    assert _metrics(obs) == {**HONEST_METRICS, "expr": (0, 8)}
    assert obs.coverage.overall == round((100 + 0 + 100 + 100 * 46 / 54) / 4, 4)
    assert obs.coverage.overall < HONEST_OVERALL


@pytest.mark.requires_verilator
def test_the_honest_control_is_unchanged(fresh):
    obs = fresh.evaluate(_task(), HONEST)
    assert obs.status is Status.SUCCESS and obs.notes == []
    assert _metrics(obs) == HONEST_METRICS and obs.coverage.overall == HONEST_OVERALL


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_crash_that_needs_the_testbench_counts_the_dropped_metric_at_zero(fresh):
    """The crash in RTL code that only the testbench elaborates (an RTL module outside
    the DUT, instantiated by the testbench): the retry drops expression coverage, and
    the DUT's 8 expression points count 0 % covered, below the honest control."""
    task = _task(CMP + CHK)
    obs = fresh.evaluate(task, HEAD + "  chk u_chk();\n" + STIMULUS)
    assert obs.status is Status.SUCCESS, obs.log
    assert "--coverage-expr" not in obs.coverage_options
    assert any("rebuilt once without expression coverage" in n for n in obs.notes)
    assert any("counts as 0 % covered (8 points)" in n for n in obs.notes), obs.notes
    assert _metrics(obs) == {**HONEST_METRICS, "expr": (0, 8)}
    assert obs.coverage.per_instance["tb.dut"]["expr"].total == 8
    assert obs.coverage.overall == round((100 + 0 + 100 + 100 * 46 / 54) / 4, 4)
    assert obs.coverage.overall < fresh.evaluate(task, HONEST).coverage.overall


#: The RTL of ../shared/corpus/repro/01: the pinned build's FSM detection crashes on it.
BLINKER = """module blinker (
  input  logic       clk,
  input  logic       hold,
  output logic [1:0] st
);
  always @(posedge clk)
    case (st)
      2'd0: st <= 2'd1;
      2'd1: if (!hold) st <= 2'd0;
    endcase
endmodule
"""


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_crash_of_the_rtl_alone_is_the_tasks_and_the_metric_is_left_out():
    """FSM coverage crashes on the RTL itself (repro 01): the drop is the task's
    defect, the metric is left out as before, nothing is counted against the model."""
    ev = Evaluator(SimConfig(result_cache=False, fsm_coverage=True))
    task = Task(id="probe/blinker", rtl_files=[SourceFile(name="rtl.sv", content=BLINKER)],
                dut_module_name="blinker", dut_instance_name="dut")
    tb = """module tb;
  logic clk = 0, hold = 1; logic [1:0] st;
  blinker dut(.clk(clk), .hold(hold), .st(st));
  always #5 clk = ~clk;
  initial begin #32 hold = 0; #40 $finish; end
endmodule
"""
    obs = ev.evaluate(task, tb)
    assert obs.status is Status.SUCCESS, obs.log
    assert "--coverage-fsm" not in obs.coverage_options
    assert any("a defect of the task" in n for n in obs.notes), obs.notes
    assert "fsm" not in obs.coverage.metrics


STICKY = """module sticky(input logic clk, input logic set, output logic flag);
  always_ff @(posedge clk) if (set) flag <= 1'b1;
endmodule
"""


@pytest.mark.requires_verilator
def test_a_simulator_failure_the_testbench_brings_out_counts_against_it():
    """A named property as the consequent of ``|=>`` fails the pinned Verilator with or
    without coverage (repro 25, verilator#8295): a tool failure, but the RTL alone builds
    with the same options, so a benchmark counts the sample as failed (left out of the
    denominators, a testbench could leave its task's score on purpose: a twenty-third
    red team)."""
    from llm4cov.bench.rows import make_row

    task = Task(id="probe/sticky", rtl_files=[SourceFile(name="sticky.sv", content=STICKY)],
                dut_module_name="sticky", dut_instance_name="dut")
    tb = ("module tb;\n  logic clk = 0, set = 0; logic flag;\n"
          "  sticky dut(.clk(clk), .set(set), .flag(flag));\n  always #5 clk = ~clk;\n"
          "  property p; flag; endproperty\n"
          "  assert property (@(posedge clk) set |=> p);\n"
          "  initial begin @(negedge clk) set = 1; #20 $finish; end\nendmodule\n")
    obs = Evaluator().evaluate(task, tb)
    assert obs.tool_error and obs.tool_error_testbench
    assert any("this testbench brings it out" in n for n in obs.notes)
    row = make_row(arm="m", task=task, sample=0, round_=1, observation=obs, testbench=tb,
                   simulator="verilator", wall_s=0.0, model="m")
    assert row.tool_error is False and row.sim_pass is False


@pytest.mark.requires_verilator
def test_a_failure_the_rtl_alone_cannot_show_is_the_testbench_s():
    """A DUT with an interface port cannot be Verilator's top, so the RTL alone shows no
    failure of its own: the testbench's named-property failure is still the sample's (a
    twenty-fourth red team: it had left its task's denominators)."""
    rtl = ("interface bus_if; logic v; modport slave (input v); endinterface\n"
           "module sink(input logic clk, bus_if.slave b, output logic q);\n"
           "  always_ff @(posedge clk) q <= b.v;\nendmodule\n")
    task = Task(id="probe/sink", rtl_files=[SourceFile(name="sink.sv", content=rtl)],
                dut_module_name="sink", dut_instance_name="dut")
    tb = ("module tb;\n  logic clk = 0; logic q;\n  bus_if b();\n"
          "  sink dut(.clk(clk), .b(b), .q(q));\n  always #5 clk = ~clk;\n"
          "  property p; q; endproperty\n  assert property (@(posedge clk) b.v |=> p);\n"
          "  initial begin b.v = 1; #20 $finish; end\nendmodule\n")
    obs = Evaluator().evaluate(task, tb)
    assert obs.tool_error and obs.tool_error_testbench
