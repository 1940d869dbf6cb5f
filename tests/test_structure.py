"""Testbench top and DUT instance detection (pyslang syntax level, no simulator)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llm4cov.sim.analysis.structure import StructureError, plan_testbench, stop_offsets
from llm4cov.tasks.hdl import InstanceLimitError, instance_paths, module_decls
from llm4cov.tasks.model import SourceFile, Task

RTL = [
    SourceFile(name="sub.sv", content="module sub(input a); endmodule\n"),
    SourceFile(name="top.sv", content="module top(input a); sub u0(.a(a)); endmodule\n"),
]


#: A two-bit counter with a reset (the DUT of the whole-call tests), instance ``dut``.
CNT_TASK = Task(id="probe/cnt", rtl_files=[SourceFile(name="cnt.sv", content=(
    "module cnt(input logic clk, input logic rst, output logic [1:0] q);\n"
    "  always_ff @(posedge clk) if (rst) q <= 0; else q <= q + 1;\nendmodule\n"))],
    dut_module_name="cnt", dut_instance_name="dut")


def tb(text: str) -> SourceFile:
    return SourceFile(name="tb.sv", content=text)


def test_top_and_nested_dut_path():
    src = (
        "module helper; endmodule\nmodule env; top dut(.a(1'b0)); endmodule\n"
        "module tb; env e(); helper h(); endmodule\n"
    )
    plan = plan_testbench(RTL, tb(src), "top", "dut")
    assert (plan.tb_top, plan.dut_hier) == ("tb", "tb.e.dut")


def test_wrong_instance_name_and_missing_dut():
    with pytest.raises(StructureError, match="instantiated as `uut`, but the task requires"):
        plan_testbench(RTL, tb("module tb; top uut(.a(1'b0)); endmodule"), "top", "dut")
    with pytest.raises(StructureError, match="does not instantiate the DUT module `top`"):
        plan_testbench(RTL, tb("module tb; sub s(.a(1'b0)); endmodule"), "top", "dut")
    with pytest.raises(StructureError, match="no module declaration"):
        plan_testbench(RTL, tb("// empty"), "top", "dut")


def test_any_instance_accepts_the_first():
    plan = plan_testbench(RTL, tb("module t2; top x(.a(1'b0)); endmodule"), "top", None)
    assert plan.dut_hier == "t2.x"


@pytest.mark.parametrize("body, path", [
    ("if (1) begin top dut(.a(1'b0)); end", "tb.genblk1.dut"),  # unnamed: genblk<n>
    ("if (1) top dut(.a(1'b0));", "tb.genblk1.dut"),  # no begin: a block all the same
    ("if (1) begin : g top dut(.a(1'b0)); end", "tb.g.dut"),
    ("if (1) g: begin top dut(.a(1'b0)); end", "tb.g.dut"),  # a label before `begin`
    # the third construct; an else-if chain is one; a case's items share its number
    ("for (genvar i = 0; i < 1; i++) begin end\n  if (0) ; else if (1) ;\n"
     "  case (1) 0: ; default: top dut(.a(1'b0)); endcase", "tb.genblk3.dut"),
    ("generate if (1) begin : o if (1) top dut(.a(1'b0)); end endgenerate", "tb.o.genblk1.dut"),
    ("if (0) sub s(.a(1'b0)); else if (1) top dut(.a(1'b0));", "tb.genblk1.dut"),
    # any other direct nesting is a block of its own to Verilator (IEEE 1800 27.5: one)
    ("if (1) if (1) top dut(.a(1'b0));", "tb.genblk1.genblk1.dut"),
    ("if (0) ; else case (1) 1: top dut(.a(1'b0)); endcase", "tb.genblk1.genblk1.dut"),
    ("case (1) 1: if (0) ; else if (1) top dut(.a(1'b0)); endcase", "tb.genblk1.genblk1.dut"),
    ("if (0) ; else if (1) if (1) begin : x top dut(.a(1'b0)); end", "tb.genblk1.x.dut"),
    ("if (1) if (0) ; else if (0) ; else top dut(.a(1'b0));", "tb.genblk1.genblk1.dut"),
])
def test_a_dut_in_a_conditional_generate_block_has_the_block_in_its_path(body, path):
    """IEEE 1800 27.6's names as Verilator gives them (common_cells' ``cc_cdc_fifo_tb``
    instantiates its DUT in ``if (GRAY) ... else ...``); each nested path here is the
    one ``verilator --json-only`` prints (the pinned build and 5.052 alike)."""
    plan = plan_testbench(RTL, tb(f"module tb;\n  {body}\nendmodule\n"), "top", "dut")
    assert plan.dut_hier == path


def test_the_checks_read_the_ieee_path_of_a_directly_nested_dut():
    """pyslang's elaboration names ``if (1) if (1) top dut`` as IEEE 1800 27.5 does
    (``tb.genblk1.dut``): the checks that read it get that path, coverage Verilator's."""
    body = "if (1) if (1) top dut(.a(1'b0));\n  if (1) top x(.a(1'b0));"
    plan = plan_testbench(RTL, tb(f"module tb;\n  {body}\nendmodule\n"), "top", "dut")
    assert (plan.dut_hier, plan.elaborated_hier) == ("tb.genblk1.genblk1.dut", "tb.genblk1.dut")
    assert plan.other_copies == ("tb.genblk2.x",)
    flat = plan_testbench(RTL, tb("module tb; top dut(.a(1'b0)); endmodule"), "top", "dut")
    assert (flat.ieee_hier, flat.elaborated_hier) == ("", "tb.dut")


def test_bare_stops_skip_error_lines():
    src = (
        "module tb;\ninitial begin\n  if (x) $error(\"e\"); else $stop;\n  $stop;\nend\n"
        "endmodule\n"
    )
    assert stop_offsets(tb(src), bare=True) == [(src.rindex("$stop"), 4)]
    assert [line for _, line in stop_offsets(tb(src))] == [3, 4]
    # an assertion's else action over two lines (a thirty-second red team) or in a block
    split = ("module m; logic c;\n  always @* assert (c) else\n    $stop;\n"
             "  initial begin p: assert (c) else begin\n $display(1);\n $stop; end\n"
             "  #1 $stop; end\nendmodule\n")
    assert stop_offsets(tb(split), bare=True) == [(split.rindex("$stop"), 7)]


def test_several_instances_in_one_statement():
    src = "module tb; top other(.a(1'b0)), dut(.a(1'b1)); endmodule\n"
    plan = plan_testbench(RTL, tb(src), "top", "dut")
    assert plan.dut_hier == "tb.dut"


def _tree_bomb(levels: int) -> str:
    """Module m{i} instantiates m{i-1} twice: m{levels} holds 2**levels instances of m0."""
    mods = ["module m0(input logic c); endmodule\n"] + [
        f"module m{i}(input logic c); m{i - 1} a(.c(c)); m{i - 1} b(.c(c)); endmodule\n"
        for i in range(1, levels + 1)
    ]
    return f"module tb; top dut(.a(1'b0)); m{levels} big(.c(1'b0)); endmodule\n" + "".join(mods)


def test_instance_tree_of_two_to_the_forty_is_planned_without_walking_it():
    bomb = tb(_tree_bomb(40))
    plan = plan_testbench(RTL, bomb, "top", "dut")
    assert plan.dut_hier == "tb.dut"
    decls = module_decls([bomb])
    assert len(instance_paths(decls, "m13", "m0")) == 2**13  # 8192 <= 10,000
    assert instance_paths(decls, "m3", "m0")[:2] == ["m3.a.a.a", "m3.a.a.b"]
    with pytest.raises(InstanceLimitError, match="holds 1099511627776 instances of `m0`"):
        instance_paths(decls, "tb", "m0")
    with pytest.raises(StructureError, match="too large to evaluate"):
        plan_testbench(RTL, bomb, "m0", None)


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_dut_in_a_generate_branch_is_measured_there(evaluator):
    """The whole call: the DUT in an ``if`` directly in an else-if branch is measured at
    ``tb.genblk1.genblk1.dut`` (Verilator's coverage names it so; refused before as "not
    an instance", then "no coverage points" at pyslang's ``tb.genblk1.dut``)."""
    task = CNT_TASK
    text = ("module tb;\n  logic clk = 0, rst = 1; logic [1:0] q;\n"
            "  if (0) begin end else if (1) if (1) begin\n    cnt dut(.clk, .rst, .q);\n  end\n"
            "  always #5 clk = ~clk;\n  initial begin #12 rst = 0; #100 $finish; end\n"
            "endmodule\n")
    obs = evaluator.evaluate(task, text)
    assert obs.status.value == "success", obs.log[-500:]
    assert list(obs.coverage.per_instance) == ["tb.genblk1.genblk1.dut"]
    branch = obs.coverage.metrics["branch"]
    assert (branch.covered, branch.total) == (2, 2)  # the if and the else, both taken


def test_the_testbench_s_own_stop_is_compiled_as_finish():
    """Every ``$stop`` token of the testbench's text becomes ``$finish`` on its line; a
    ``$stop`` a macro expands to stays (it then counts as an error report)."""
    from llm4cov.sim.analysis.hints import testbench_workarounds

    src = ("`define HALT $stop\nmodule tb;\n  initial begin #1 $stop; end\n"
           "  initial begin #2 $stop(0); `HALT; end\nendmodule\n")
    fix = testbench_workarounds(tb(src), nba=False, disable=False)
    assert fix.text == src.replace("#1 $stop", "#1 $finish").replace("#2 $stop(0)",
                                                                    "#2 $finish(0)")
    assert fix.notes == ("tb.sv:3, 4: `$stop` is compiled as `$finish` (the end of the run, "
                         "`final` blocks included; an error report on its line stays one)",)


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_check_on_a_stop_line_fails_and_final_blocks_run(evaluator):
    """A twenty-ninth red team: the simulator reports ``$stop``, a failed ``assume`` and
    a ``unique`` violation through one hook knowing only the line, so a failing check on
    a ``$stop``'s line passed as the end (no error counted), and the ``final`` block's
    ``$fatal`` of a scoreboard was skipped after ``$stop`` (0 -> 81.25 %)."""
    task = CNT_TASK
    head = ("module tb;\n  logic clk = 0, rst = 1; logic [1:0] q;\n  cnt dut(.clk, .rst, .q);\n"
            "  always #5 clk = ~clk;\n")
    hidden = head + ("  always @(negedge clk) if (!rst) begin assume (q != 2'd2); "
                     "if (q == 2'd3) $stop; end\n"
                     "  initial begin #12 rst = 0; #100 $finish; end\nendmodule\n")
    obs = evaluator.evaluate(task, hidden)
    assert (obs.status.value, obs.end_reason.value) == ("success", "finish"), obs.log[-400:]
    assert obs.tb_error_count >= 1
    scored = head + ("  final $fatal(1, \"TEST FAILED\");\n"
                     "  initial begin #12 rst = 0; #100 $stop; end\nendmodule\n")
    obs = evaluator.evaluate(task, scored)
    assert (obs.status.value, obs.end_reason.value) == ("runtime_error", "fatal"), obs.log


#: A counter whose RTL ends the run with a bare ``$stop`` (line 3) when ``halt`` is high.
HALT_TASK = Task(id="probe/halt", rtl_files=[SourceFile(name="halt.sv", content=(
    "module halt(input logic clk, input logic rst, input logic stop, output logic [1:0] q);\n"
    "  always_ff @(posedge clk) if (rst) q <= 0; else q <= q + 1;\n"
    "  always @(posedge clk) if (stop) $stop;\nendmodule\n"))],
    dut_module_name="halt", dut_instance_name="dut")


def halt_tb(rest: str) -> str:
    """A testbench of :data:`HALT_TASK` (clock, ``rst`` high, ``stop`` low) ending with
    ``rest`` (its stimulus and ``endmodule``), from line 5 on."""
    return ("module tb;\n  logic clk = 0, rst = 1, stop = 0; logic [1:0] q;\n"
            "  halt dut(.clk, .rst, .stop, .q);\n  always #5 clk = ~clk;\n" + rest)


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_line_directive_naming_an_rtl_stop_makes_no_end(evaluator):
    """The driver told an RTL ``$stop`` from an error report by its file and line, which a
    testbench's `` `line`` directive names at will: an ``$error`` placed at the RTL
    ``$stop``'s line ended the run there as that ``$stop`` (``end: stop`` at 22 ps, no
    error counted). The RTL's bare ``$stop`` is now compiled as ``$finish`` and every
    error report is one: the run goes on to its ``$finish`` at 112 ps, one error."""
    forged = halt_tb("  initial begin #12 rst = 0;\n`line 3 \"halt.sv\" 0\n"
                     "  #10 $error(\"check failed\");\n`line 9 \"tb.sv\" 0\n"
                     "  #90 $finish; end\nendmodule\n")
    obs = evaluator.evaluate(HALT_TASK, forged)
    assert (obs.status.value, obs.end_reason.value) == ("success", "finish"), obs.log[-400:]
    assert (obs.tb_error_count, obs.sim_time_ps) == (1, 112)
    # the RTL's own $stop still ends the run, at the first edge with stop high (25 ps)
    honest = halt_tb("  initial begin #12 rst = 0; #10 stop = 1; #90 $finish; end\nendmodule\n")
    obs = evaluator.evaluate(HALT_TASK, honest)
    assert (obs.end_reason.value, obs.tb_error_count, obs.sim_time_ps) == ("finish", 0, 25)
    assert "halt.sv:3: `$stop` is compiled as `$finish` (the end of the run, `final` " \
        "blocks included; an error report on its line stays one)" in obs.notes


def _break_the_nba_workaround(monkeypatch) -> str:
    """Make the evaluator's ``<= #0`` rewrite fail to compile (fault injection) and
    return the HALT testbench whose ``rst <= 0`` it rewrites."""
    import llm4cov.sim.evaluator as evaluator_mod

    real = evaluator_mod.hints.testbench_workarounds

    def broken(tb_file, nba=True, disable=True):
        fix = real(tb_file, nba=nba, disable=disable)
        return evaluator_mod.hints.Workaround(fix.text.replace("rst <= #0 0", "rst <= #0 ;;="),
                                              fix.notes, fix.nba_lines) if nba else fix
    monkeypatch.setattr(evaluator_mod.hints, "testbench_workarounds", broken)
    return halt_tb("  initial begin #12 rst <= 0; #10 stop = 1; #90 $finish; end\nendmodule\n")


@pytest.mark.requires_verilator
def test_a_broken_workaround_keeps_every_stop_a_finish(evaluator, monkeypatch):
    """Fault injection into the evaluator's optional workaround (a thirty-second red
    team broke it with a clocking drive, ``cb.x <= #0 1``, no longer rewritten): the
    rebuild had restored every rewritten file, the RTL's ``$stop`` became an error
    report and the run went on past it (56.13 -> 100 %). It still ends the run at
    25 ps; the workaround's notes go, the ``$stop`` note stays."""
    import llm4cov.sim.evaluator as evaluator_mod

    text = _break_the_nba_workaround(monkeypatch)
    uncached = evaluator_mod.Evaluator(replace(evaluator.config, result_cache=False))
    obs = uncached.evaluate(HALT_TASK, text)
    assert (obs.end_reason.value, obs.tb_error_count, obs.sim_time_ps) == ("finish", 0, 25)
    assert [n.split(":")[0] for n in obs.notes] == [
        "halt.sv", "the evaluator's testbench workarounds (`<= #0`, `#0 disable`) did not "
        "compile; built the testbench without them"]


@pytest.mark.requires_verilator
def test_a_broken_workaround_keeps_the_generated_code(evaluator, monkeypatch):
    """The code a caller appends to the testbench (``extend``: ``--trace``'s dump module)
    is compiled in the build without the workarounds too: it had been dropped, and a
    trace asked for was not written."""
    import llm4cov.sim.evaluator as evaluator_mod
    from llm4cov.sim.model.call import SimCall

    text = _break_the_nba_workaround(monkeypatch)
    probe = ("module llm4cov_probe; initial $display(\"GENERATED CODE RAN\"); endmodule\n"
             "bind tb llm4cov_probe llm4cov_probe_u();\n")
    uncached = evaluator_mod.Evaluator(replace(evaluator.config, result_cache=False))
    obs = uncached.evaluate_call(SimCall(HALT_TASK, text), extend=lambda plan: probe)
    assert (obs.end_reason.value, obs.sim_time_ps) == ("finish", 25), obs.log
    assert "GENERATED CODE RAN" in obs.log
    assert any(n.startswith("the evaluator's testbench workarounds") for n in obs.notes)


@pytest.mark.requires_verilator
def test_the_simulated_time_limit_holds_at_a_coarse_precision(evaluator):
    """At a 1 s precision the 10 ms limit is less than one tick: it had read as "no
    limit", and a testbench past it by 10,000 times passed as ``success`` (a thirtieth
    red team). The first time advance now passes it."""
    task = CNT_TASK
    text = ("`timescale 1s/1s\nmodule tb;\n  logic clk = 0, rst = 1; logic [1:0] q;\n"
            "  cnt dut(.clk, .rst, .q);\n  always #5 clk = ~clk;\n"
            "  initial begin #12 rst = 0; #100 $finish; end\nendmodule\n")
    obs = evaluator.evaluate(task, text)
    assert (obs.status.value, obs.end_reason.value) == ("timeout", "sim_time_limit"), obs.log
