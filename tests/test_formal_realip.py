"""Formal on real IP (issue 41, part 3): macros from included files in case labels,
RTL delays (`<= #1`) in the formal working copy.

The placement tests need no solver; the analysis tests run the solver and are skipped
without the formal tools or their compiled WebAssembly cache (``llm4cov formal
warmup``), like ``tests/test_formal_solver.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llm4cov.formal import FormalConfig, analyze
from llm4cov.formal.goals import place_goals
from llm4cov.formal.rtl_file import header_of, parse_with
from llm4cov.sim.model.observation import UncoveredItem
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.tasks.model import SourceFile

FIXTURES = Path(__file__).parent / "fixtures"
MACRO = FIXTURES / "formal_macro"
DELAY = FIXTURES / "formal_delay"


needs_solver = pytest.mark.requires_solver

GO = UncoveredItem(kind="branch", file="cmd_fsm.v", line=8,
                   detail="case item `CMD_GO never taken")
STOP = UncoveredItem(kind="line", file="cmd_fsm.v", line=9,
                     detail="case item `CMD_STOP of the case at cmd_fsm.v:7 never executed")


def _errors(tree) -> list[str]:
    return [str(d.code) for d in tree.diagnostics if d.isError()
            and "ExceededMaxIncludeDepth" not in str(d.code)]


def test_a_macro_case_label_from_an_included_file_gets_its_goal_in_place():
    task = task_from_dir(MACRO)
    placement = place_goals(task.rtl_files, [GO, STOP])
    assert placement.unplaced == []
    assert [g.what for g in placement.goals] == ["case item", "case item"]
    marked = next(f for f in placement.files if f.name == "cmd_fsm.v")
    assert "`CMD_GO: begin llm4cov_g0: cover (1'b1); st <= st_a; end" in marked.content
    assert "`CMD_STOP: begin llm4cov_g1: cover (1'b1); st <= 2'd2; end" in marked.content
    files = {f.name: f for f in placement.files}
    tree = parse_with(marked, header_of(marked, files, None, {}))
    assert _errors(tree) == []


def test_a_statement_and_a_delay_from_macros_are_placed_at_their_use():
    task = task_from_dir(MACRO)
    text = ('`include "cmd_defs.v"\n`define SET(a, b) a <= b\n`define DLY #1\n'
            "module m(input clk, input [1:0] cmd, output reg [1:0] st);\n"
            "  always @(posedge clk)\n    case (cmd)\n"
            "      `CMD_GO: `SET(st, 2'd3);\n      `CMD_STOP: st <= `DLY `CMD_GO;\n"
            "      default: st <= st;\n    endcase\nendmodule\n")
    files = [task.rtl_files[0], task.rtl_files[1].model_copy(update={"content": text})]
    items = [GO.model_copy(update={"line": 7}), STOP.model_copy(update={"line": 8})]
    placement = place_goals(files, items, defines={"UNUSED": "1"})
    marked = placement.files[1].content
    assert "`CMD_GO: begin llm4cov_g0: cover (1'b1); `SET(st, 2'd3); end" in marked
    assert "`CMD_STOP: begin llm4cov_g1: cover (1'b1); st <=      `CMD_GO; end" in marked


def test_a_statement_that_ends_inside_a_macro_is_closed_after_its_use():
    text = ("`define SETS(a, b) a <= b;\n"
            "module m(input clk, input [1:0] cmd, output reg [1:0] st);\n"
            "  always @(posedge clk)\n    case (cmd)\n      2'd1: `SETS(st, 2'd3)\n"
            "      default: st <= st;\n    endcase\nendmodule\n")
    item = UncoveredItem(kind="branch", file="m.v", line=5, detail="case item never taken")
    placement = place_goals([SourceFile(name="m.v", content=text)], [item])
    assert "2'd1: begin llm4cov_g0: cover (1'b1); `SETS(st, 2'd3) end\n" in \
        placement.files[0].content


def test_delays_are_blanked_in_the_working_copy_with_a_note():
    task = task_from_dir(DELAY)
    item = UncoveredItem(kind="line", file="delay_reg.v", line=12,
                         detail="case item 2'b01 of the case at delay_reg.v:10 never executed")
    placement = place_goals(task.rtl_files, [item])
    marked = placement.files[0].content
    assert "#" not in marked.split("\n", 1)[1]  # the header comment keeps its text
    assert marked.count("\n") == task.rtl_files[0].content.count("\n")
    assert "2'b01: begin llm4cov_g0: cover (1'b1); data <=    dat_i; end" in marked
    assert len(placement.notes) == 1
    assert placement.notes[0].startswith("timing controls ignored in the formal model: "
                                         "6 delays (`#...`) in delay_reg.v removed")
    unchanged = place_goals(task.rtl_files, [])
    assert "#" not in unchanged.files[0].content.split("\n", 1)[1]
    assert task.rtl_files[0].content.count("#1") == 6  # the input is not modified


@needs_solver
def test_a_macro_case_label_goal_is_classified():
    task = task_from_dir(MACRO)
    result = analyze(task, [GO, STOP], FormalConfig(cover_depth=4, prove_depth=2, cache=False))
    assert result.errors == []
    assert [g.status for g in result.goals] == ["reached", "reached"]


@needs_solver
def test_rtl_with_nba_delays_is_classified():
    task = task_from_dir(DELAY)
    items = [
        UncoveredItem(kind="line", file="delay_reg.v", line=12,
                      detail="case item 2'b01 of the case at delay_reg.v:10 never executed"),
        UncoveredItem(kind="toggle", file="delay_reg.v", line=3,
                      detail="hit never toggled 0->1"),
    ]
    result = analyze(task, items, FormalConfig(cover_depth=6, prove_depth=2, cache=False))
    assert result.errors == []
    assert [g.status for g in result.goals] == ["reached", "reached"]
    assert any(n.startswith("timing controls ignored") for n in result.notes)


BASECASE_LOG = """\
SBY 1:00:00 [prove3] engine_0.basecase: ##   0:00:00  Checking assertions in step 3..
SBY 1:00:00 [prove3] engine_0.induction: ##   0:00:00  Trying induction in step 4..
SBY 1:00:00 [prove3] engine_0.basecase: ##   0:00:00  Checking assertions in step 4..
SBY 1:00:00 [prove3] engine_0.basecase: ##   0:00:00  BMC failed!
SBY 1:00:00 [prove3] engine_0.basecase: ##   0:00:00  Assert failed in formal_lock: llm4cov_g0
SBY 1:00:00 [prove3] engine_0.basecase: ## Writing trace to Yosys witness file: engine_0/trace.yw
SBY 1:00:00 [prove3] DONE (FAIL, rc=2)
"""


def test_a_failed_base_case_gives_its_step_and_witness():
    from llm4cov.formal.sby import parse_log

    result = parse_log(BASECASE_LOG, "prove3")
    assert result.status == "FAIL"
    assert result.failed == {"llm4cov_g0": "basecase"}
    assert (result.base_step, result.base_trace) == (4, "prove3/engine_0/trace.yw")


@needs_solver
@pytest.mark.heavy
def test_a_goal_whose_base_case_fails_within_k_is_reached_and_replayable():
    """Deeper than the cover job (3 cycles) but within k = 6: the prove job's base case
    reaches it, and its witness is kept like a cover trace (whichever of the prove job's
    parallel phases logs its failure first: :func:`llm4cov.formal.sby.parse_log`)."""
    task = task_from_dir(FIXTURES / "formal_lock")
    unlock = UncoveredItem(kind="branch", file="formal_lock.v", line=27,
                           detail="then branch of the if at formal_lock.v:27 never taken")
    result = analyze(task, [unlock], FormalConfig(cover_depth=3, prove_depth=6, cache=False))
    goal = result.goals[0]
    assert goal.status == "reached" and goal.step == 4
    assert "base case" in goal.reason
    trace = result.traces[goal.trace]
    assert [s["code"] for s in trace[1:4]] == [0xA5, 0x3C, 0x7E]


@needs_solver
@pytest.mark.heavy
def test_depth_is_escalated_for_the_goals_left_open():
    """A goal 41 cycles deep: unknown at cover depth 12; with an escalation budget the
    deeper cover jobs (24, 48 cycles) reach it."""
    task = task_from_dir(FIXTURES / "formal_deep")
    item = UncoveredItem(kind="branch", file="deep_count.v", line=10,
                         detail="then branch of the if at deep_count.v:10 never taken")
    flat = analyze(task, [item], FormalConfig(cover_depth=12, prove_depth=2, cache=False))
    assert flat.goals[0].status == "unknown" and flat.goals[0].step == 12
    deep = analyze(task, [item], FormalConfig(cover_depth=12, prove_depth=2, cache=False,
                                              escalate_budget_s=120, max_cover_depth=48))
    goal = deep.goals[0]
    assert goal.status == "reached" and goal.reason == "reached by a deeper cover job (48 cycles)"
    assert len(deep.traces[goal.trace]) > 40


@pytest.mark.slow
@pytest.mark.requires_verilator
@needs_solver
def test_the_policy_starts_from_randoms_round_and_reads_the_whole_hole_list(tmp_path):
    """Round r starts from the random policy's round-r testbench (with the earlier
    rounds' traces), simulated once for every hole, not the feedback's shown few."""
    from llm4cov.agent.response import extract_testbench
    from llm4cov.policies import GenerationRequest
    from llm4cov.policies.base import AgentState
    from llm4cov.policies.formal import FormalPolicy
    from llm4cov.sim.config import SimConfig
    from llm4cov.sim.model.observation import Observation, Status

    task = task_from_dir(FIXTURES / "formal_lock")
    policy = FormalPolicy(config=FormalConfig(cover_depth=12, prove_depth=4, cache=False),
                          sim_config=SimConfig(cache_dir=str(tmp_path / "c")))
    first = policy.generate(GenerationRequest(task, [], seed=0))
    tb = extract_testbench(first.text, task.dut_module_name)
    assert tb is not None
    shown = Observation(status=Status.SUCCESS, uncovered=[],
                        notes=["7 more uncovered items not listed"])
    second = policy.generate(GenerationRequest(task, [], seed=1, state=AgentState(1, tb, shown)))
    head = second.text.split("\n")[1]
    assert head.startswith("// llm4cov formal: random round 2 start; ")
    formal = second.annotations["formal"]
    assert formal["reached"] >= 1 and formal["error"] == 0
    assert "n < 198;" in tb and "n < 398;" in second.text  # random's round-2 length
    tb2 = extract_testbench(second.text, task.dut_module_name)
    third = policy.generate(GenerationRequest(task, [], seed=2, state=AgentState(2, tb2, shown)))
    assert re.match(r"// llm4cov formal: random round 3 start \+ \d+ earlier traces; ",
                    third.text.split("\n")[1])
    assert "n < 798;" in third.text


def test_a_bit_of_a_part_select_is_folded_into_one_select():
    from llm4cov.formal.goals import branch_condition

    item = UncoveredItem(kind="expr", file="p.v", line=3,
                         detail="`x` never evaluated to 1 with out_slt0[14:6][4]=1, "
                                "y[0:3][1]=0")
    assert branch_condition(item) == "((out_slt0[10]) == 1 && (y[2]) == 0)"  # LSB: y[3]


def test_a_lone_negedge_clock_is_clocked_at_posedge_in_the_model():
    text = ("module m(input clk, input rst_n, input d, output reg q, output reg r);\n"
            "  always @(posedge clk or negedge rst_n) if (!rst_n) q <= 0; else q <= d;\n"
            "  always @(negedge clk) r <= q;\nendmodule\n")
    placement = place_goals([SourceFile(name="m.v", content=text)], [])
    marked = placement.files[0].content
    assert "always @(posedge clk) r <= q;" in marked
    assert "or negedge rst_n)" in marked  # an async reset keeps its edge
    assert placement.notes == [
        "negedge-clocked blocks clocked at posedge in the formal model: 1 in m.v (the "
        "design also uses posedge; one solver step steps every flip-flop, and a clock "
        "used with both edges cannot be modelled so)"]
