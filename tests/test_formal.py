"""Formal closure without the solver: goal placement, log and witness parsing, the
testbench merge and the ``formal`` policy's reading of the feedback.

Expected values are read off the fixtures by hand: ``tests/fixtures/formal_lock``
(the design) and ``tests/fixtures/formal_logs`` (an SBY cover and prove run of that
design with three hand-placed markers h0, h1, h2, and the cover witness).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm4cov.agent.prompt import build_messages
from llm4cov.cli.app import main
from llm4cov.formal.goals import branch_condition, place_goals, toggle_targets
from llm4cov.formal.sby import job_text, parse_log, read_witness
from llm4cov.formal.soundness import SIM_DEFINES, frontend_macros, own_constraints
from llm4cov.formal.stimulus import Phase, merge_phases
from llm4cov.policies import get_policy
from llm4cov.policies.base import AgentState, GenerationRequest
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.model.observation import Observation, Status, UncoveredItem
from llm4cov.tasks.hdl import task_ports
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.tasks.model import SourceFile

FIXTURES = Path(__file__).parent / "fixtures"
LOCK = FIXTURES / "formal_lock"
LOGS = FIXTURES / "formal_logs"


def _item(kind: str, line: int, detail: str) -> UncoveredItem:
    return UncoveredItem(kind=kind, file="formal_lock.v", line=line, detail=detail)


THEN_27 = _item("branch", 27, "then branch of the if at formal_lock.v:27 never taken")
NO_ELSE_27 = _item("branch", 27, "the if at formal_lock.v:27 never saw its condition false "
                   "(it has no else)")
DEFAULT_32 = _item("line", 32, "case item default of the case at formal_lock.v:23 never executed")
ALARM_45 = _item("branch", 45, "then branch of the if at formal_lock.v:45 never taken")


@pytest.fixture(scope="module")
def lock_task():
    return task_from_dir(LOCK)


def test_branch_goals_are_placed_inside_their_branches(lock_task):
    placement = place_goals(lock_task.rtl_files, [THEN_27, NO_ELSE_27, DEFAULT_32, ALARM_45])
    assert [g.label for g in placement.goals] == [f"llm4cov_g{i}" for i in range(4)]
    assert [g.what for g in placement.goals] == [
        "then branch", "else branch", "case item", "then branch"]
    text = placement.files[0].content
    assert "if (code == 8'h7E) begin /* llm4cov */ begin llm4cov_g0: cover (1'b1); begin" in text
    assert "end end end else begin llm4cov_g1: cover (1'b1); end" in text
    assert "default: begin llm4cov_g2: cover (1'b1); begin" in text
    assert ("if (ticks == 16'hFFFF) begin llm4cov_g3: cover (1'b1); alarm <= 1'b1; end"
            in text)
    assert placement.unplaced == []


def test_prove_mode_writes_only_kept_goals_as_assertions(lock_task):
    placement = place_goals(lock_task.rtl_files, [THEN_27, DEFAULT_32], mode="prove",
                            keep={"llm4cov_g1"})
    text = placement.files[0].content
    assert "llm4cov_g1: assert (!(1'b1));" in text
    assert "llm4cov_g0" not in text
    assert len(placement.goals) == 2


def test_toggle_goals_get_a_clocked_history_register(lock_task):
    item = UncoveredItem(kind="toggle", file="formal_lock.v", line=16,
                         detail="ticks[15:14] never toggled 0->1")
    placement = place_goals(lock_task.rtl_files, [item])
    assert [g.what for g in placement.goals] == ["ticks[14] 0->1", "ticks[15] 0->1"]
    text = placement.files[0].content
    assert "always @(posedge clk) llm4cov_g0_prev <= ticks[14];" in text
    assert "llm4cov_g1: cover (!llm4cov_g1_prev && ticks[15]);" in text
    assert text.rstrip().endswith("endmodule")


def test_a_module_without_its_own_clock_toggles_on_its_clock_port():
    """``top`` only wires a submodule's register to its output: no edge of its own, but
    a port named as the design's clock. Its output toggles get the clocked history
    register too (value goals made ``q 1->0`` "reached" at cycle 0, while ``q`` starts
    at 0); a module with no such port keeps value goals."""
    from llm4cov.tasks.model import SourceFile

    rtl = SourceFile(name="top.v", content=(
        "module top (input clk, input [1:0] d, output [1:0] q, output [1:0] n);\n"
        "  sub u (.clk(clk), .d(d), .q(q));\n"
        "  inv v (.a(q), .y(n));\n"
        "endmodule\n"
        "module sub (input clk, input [1:0] d, output reg [1:0] q = 0);\n"
        "  always @(posedge clk) q <= d;\n"
        "endmodule\n"
        "module inv (input [1:0] a, output [1:0] y);\n"
        "  assign y = ~a;\n"
        "endmodule\n"))
    items = [UncoveredItem(kind="toggle", file="top.v", line=1,
                           detail="q[0] never toggled 1->0"),
             UncoveredItem(kind="toggle", file="top.v", line=8,
                           detail="y[0] never toggled 1->0")]
    text = place_goals([rtl], items).files[0].content
    assert "always @(posedge clk) llm4cov_g0_prev <= q[0];" in text
    assert "llm4cov_g0: cover (llm4cov_g0_prev && !q[0]);" in text
    assert "llm4cov_g1: cover (!y[0]);" in text and "llm4cov_g1_prev" not in text


def test_item_wordings_are_read():
    assert toggle_targets(_item("toggle", 1, "q[7:4,1] never toggled")) == (
        "q", [4, 5, 6, 7, 1], ["0->1", "1->0"])
    assert toggle_targets(_item("toggle", 1, "s.f[2] never toggled")) is None
    assert branch_condition(_item("expr", 1, "expression term (a==0 && b==1) => 1 never seen")
                            ) == "(a==0 && b==1)"
    assert branch_condition(_item("expr", 1, "`timer == 4'h9` never true")) == "(timer == 4'h9)"
    assert branch_condition(_item(  # one term of a larger condition: the term alone
        "expr", 1, "`timer == 4'h9` never true (term of `timer == 4'd9 || (a && b)`)")
    ) == "(timer == 4'h9)"
    assert branch_condition(_item(
        "expr", 1, "`sel && en` never evaluated to 1 with sel=1, `en` false")
    ) == "((sel) == 1 && !(en))"


LOOPED = """module lp(input logic clk, input logic [3:0] a, output logic [3:0] y);
  always_comb begin
    for (int i = 0; i < 4; i++) begin
      if (a[i]) y[i] = 1'b1;
      else y[i] = 1'b0;
    end
  end
  always_ff @(posedge clk) if (a == 4'hF) y[0] <= 1'b0;
endmodule
"""


def test_a_branch_in_a_procedural_loop_is_not_placed():
    """A procedural loop is unrolled in the formal model, so a label in its body repeats
    and Yosys refuses the model (an APB GPIO's per-pin loop: 365 of 400 goals failed);
    the branch outside the loop is placed as before."""
    rtl = SourceFile(name="lp.sv", content=LOOPED)
    items = [UncoveredItem(kind="branch", file="lp.sv", line=4,
                           detail="then branch of the if at lp.sv:4 never taken"),
             UncoveredItem(kind="branch", file="lp.sv", line=8,
                           detail="then branch of the if at lp.sv:8 never taken")]
    placement = place_goals([rtl], items)
    assert [g.item.line for g in placement.goals] == [8]
    assert [(i.line, r.split(":")[0]) for i, r in placement.unplaced] == [
        (4, "the statement lies in a procedural loop")]


def test_unplaceable_items_say_why(lock_task):
    fsm = _item("fsm", 23, "state S3 never reached")
    other = UncoveredItem(kind="line", file="missing.v", line=3, detail="block never executed")
    placement = place_goals(lock_task.rtl_files, [fsm, other])
    assert placement.goals == []
    assert [r for _, r in placement.unplaced] == [
        "no formal goal for fsm points", "file 'missing.v' is not among the RTL files"]


def test_cover_log_maps_labels_to_their_witness():
    result = parse_log((LOGS / "cover.log").read_text(), "job")
    assert result.status == "FAIL"
    assert result.reached == {"h0": (4, "job/engine_0/trace0.yw")}
    assert result.depth == 19  # depth 20: steps 0..19


def test_prove_log_names_the_assertion_that_is_not_inductive():
    result = parse_log((LOGS / "prove.log").read_text(), "prove")
    assert result.status == "UNKNOWN"
    assert result.failed == {"h2": "induction"}


def test_witness_steps_are_the_lock_code_sequence():
    steps = read_witness(LOGS / "lock_trace.yw", {"code", "en", "rst_n"})
    assert [s["code"] for s in steps] == [0x00, 0xA5, 0x3C, 0x7E, 0x00]
    assert [s["rst_n"] for s in steps] == [0, 1, 1, 1, 0]
    assert all(s["en"] == 0 for s in steps)


def test_job_text_reads_with_slang_and_pins_registers_to_zero(lock_task):
    text = job_text(lock_task.rtl_files, "formal_lock", "cover", 25, {"W": "8"})
    assert "mode cover\ndepth 25" in text
    sim_macros = " ".join(f"-D{k}={v}" for k, v in SIM_DEFINES.items())
    assert f"read_slang -j 1 --top formal_lock {sim_macros} -U SYNTHESIS -G W=8 " \
        "formal_lock.v" in text
    assert "-DVERILATOR=1 " in text  # the simulation's text: Verilator's macros
    assert "setundef -zero -init" in text
    assert text.endswith("[files]\nformal_lock.v formal_lock.v\n")


def test_a_value_the_formal_script_would_read_as_structure_is_refused(lock_task):
    """A task's define or parameter value went into the Yosys script as text: ``;``
    ran Yosys commands of its own (``chformal -assert2assume``: 24 forged "proven
    unreachable"), a line break started SBY sections (its Python ran). A line break is
    refused when the task loads, any other structure when the script is written."""
    from llm4cov.tasks.model import Task, TaskError

    for value in ("1 formal_lock.v ; chformal -assert2assume ; #", "a#b", '"s"', "x y"):
        with pytest.raises(TaskError, match="cannot be passed to the formal tools"):
            job_text(lock_task.rtl_files, "formal_lock", "cover", 5, defines={"D": value})
        with pytest.raises(TaskError, match="cannot be passed to the formal tools"):
            job_text(lock_task.rtl_files, "formal_lock", "prove", 5, {"W": value})
    with pytest.raises(ValueError, match="holds a line break"):
        Task(id="t", rtl_files=lock_task.rtl_files, dut_module_name="formal_lock",
             defines={"D": "1\n--pycode-begin--"})
    text = job_text(lock_task.rtl_files, "formal_lock", "cover", 5, {"W": "8'h3+2"},
                    defines={"D": "{1'b0,X[3:0]}"})
    assert "-DD={1'b0,X[3:0]} -U SYNTHESIS -G W=8'h3+2" in text


def test_job_files_keep_their_folders_and_headers_are_copied():
    """SBY copies a bare [files] entry by its base name; the script reads src/x.sv and
    `include "cc/registers.svh"` searches include/: every file keeps its relative path
    (DEST SOURCE), the header too, and the -I list is the evaluator's."""
    from llm4cov.tasks.hdl import compile_order, search_dirs

    task = task_from_dir(FIXTURES / "cc_style", filelist=FIXTURES / "cc_style" / "cc.f")
    compiled = compile_order(task.rtl_files, task.compile_files)
    text = job_text(compiled, "cc_fifo", "cover", 5,
                    include_dirs=search_dirs(task.rtl_files, task.include_dirs),
                    copied=task.rtl_files)
    assert "read_slang -j 1 --top cc_fifo -Iinclude -I. -Iinclude/cc -Isrc -D" in text
    assert "-U SYNTHESIS src/cc_pkg.sv src/cc_fifo.sv" in text
    files = text.split("[files]\n", 1)[1].split()
    assert sorted(zip(files[::2], files[1::2], strict=True)) == [
        ("include/cc/registers.svh", "include/cc/registers.svh"),
        ("src/cc_fifo.sv", "src/cc_fifo.sv"), ("src/cc_pkg.sv", "src/cc_pkg.sv")]


@pytest.mark.parametrize("style", ["compact", "vectors"])
def test_phases_go_before_the_final_finish(lock_task, style):
    ports = task_ports(lock_task)
    base = random_testbench(lock_task, 0, style=style)
    merged = merge_phases(base, lock_task, ports, "clk",
                          [Phase("t0", [{"rst_n": 0}, {"rst_n": 1, "code": 0xA5}])], style)
    assert merged is not None
    head, tail = merged.rsplit("$finish;", 1)
    assert tail.strip() == "end\nendmodule"
    if style == "vectors":
        assert "rst_n = 1'h1; code = 8'ha5; en = 1'h0; @(negedge clk);" in head
    else:  # one packed row per step: {rst_n, code, en} = {1, 8'ha5, 0} = 10'h34a
        assert "logic [9:0] trace [2] = '{10'h0, 10'h34a};" in head
        assert "rst_n = trace[t][9:9];\n        code = trace[t][8:1];" in head
    assert head.index("// llm4cov formal: t0 (2 steps)") > head.index("repeat (2)")


def test_phases_are_not_merged_when_an_input_is_tied_off(lock_task):
    tb = ("module tb; logic c = 0; formal_lock dut(.clk(c), .rst_n(1'b1), .code(8'h0), "
          ".en(1'b0), .unlocked(), .alarm()); initial begin #10 $finish; end endmodule\n")
    assert merge_phases(tb, lock_task, task_ports(lock_task), "clk", [Phase("t", [{}])]) is None


def test_policy_reads_the_state_not_the_prompt_text(lock_task):
    """The agent's state reaches the policy as data: with no prompt text at all, the
    current testbench comes back (every hole of the state was tried before)."""
    policy = get_policy("formal")
    tb = "module tb; endmodule\n"
    policy._new_items(lock_task, [THEN_27])  # tried: nothing new to analyze
    state = AgentState(1, tb, Observation(status=Status.SUCCESS, uncovered=[THEN_27]))
    answer = policy.generate(GenerationRequest(task=lock_task, messages=[], state=state))
    assert answer.text == ("```systemverilog\n// llm4cov formal: no new holes in the "
                           "feedback\nmodule tb; endmodule\n```\n")


def test_policy_first_round_is_the_random_testbench(lock_task):
    policy = get_policy("formal")
    request = GenerationRequest(task=lock_task, messages=build_messages(lock_task), seed=3)
    answer = policy.generate(request)
    assert answer.model == "formal"
    assert random_testbench(lock_task, 3) in answer.text


def test_cli_bad_rtl_dir_exits_2(tmp_path):
    assert main(["formal", "--rtl", str(tmp_path / "nope"), "--out", str(tmp_path / "t.sv")]) == 2


def test_a_base_case_failure_decides_whatever_the_log_order():
    """SBY's prove phases run in parallel: an induction failure logged before the base
    case's must not hide that the goal is reachable (a race seen as ``unknown``)."""
    from llm4cov.formal.sby import parse_log

    ind = "SBY 1:00:00 [job] engine_0.induction: ##   0:00:00  Assert failed in top: g7\n"
    base = "SBY 1:00:01 [job] engine_0.basecase: ##   0:00:00  Assert failed in top: g7\n"
    assert parse_log(ind + base, "job").failed == {"g7": "basecase"}
    assert parse_log(base + ind, "job").failed == {"g7": "basecase"}
    assert parse_log(ind, "job").failed == {"g7": "induction"}


def test_a_proof_under_the_rtls_own_constraints_or_other_macros_is_not_counted(lock_task):
    r"""A red team's RTL constrained the formal inputs only (``\`ifndef VERILATOR ...
    assume``): 7 points the simulation reaches were "proven unreachable". The formal
    read now has the simulator's macros, so that branch is out; an ``assume`` or
    ``restrict`` in a branch the simulation compiles is found (no proof then counts),
    as are the macros only Yosys' own parser defines."""
    rtl = lock_task.rtl_files[0].content.replace("endmodule", (
        "`ifndef VERILATOR\n  always @* assume (1'b1);\n`endif\n"
        "`ifdef VERILATOR\n  always @* restrict property (1'b1);\n`endif\n"
        "`ifdef FORMAL\n  always @* assume (1'b0);\n`endif\nendmodule"), 1)
    task = lock_task.model_copy(update={"rtl_files": [
        lock_task.rtl_files[0].model_copy(update={"content": rtl})]})
    line = rtl.splitlines().index("  always @* restrict property (1'b1);") + 1
    assert own_constraints(task) == [f"formal_lock.v:{line}"]
    assert frontend_macros(task) == ["FORMAL"]
    assert own_constraints(lock_task) == [] and frontend_macros(lock_task) == []


def test_a_cut_short_cache_entry_is_a_miss_and_removed(tmp_path):
    """A formal cache entry written in place and cut short (a kill, a full disk) made
    every later run of that design fail until deleted by hand: entries are written
    whole (renamed into place) and one that does not validate is a miss."""
    from llm4cov.formal.closure import FormalResult, _cached

    entry = tmp_path / "key.json"
    entry.write_text('{"task_id": "t", "top": "m", "goa')
    assert _cached(entry) is None and not entry.exists()
    entry.write_text(FormalResult(task_id="t", top="m").model_dump_json())
    hit = _cached(entry)
    assert hit is not None and hit.cached and hit.task_id == "t"


@pytest.mark.parametrize("name", ["-DEASY=.sv", "+define+EASY=1.sv", "-fopts.sv"])
def test_a_file_name_that_reads_as_an_option_is_a_file_to_every_tool(lock_task, name):
    """The name rule admits ``-DEASY=.sv`` (real repositories use such names); as a bare
    word, ``read_slang`` and ``read_verilog`` read it as an option, so an empty file so
    named defined a macro for the formal tools only: reachable points were "proven
    unreachable" (a twenty-ninth red team). Every script and command line names it
    ``./``-prefixed, as Verilator's does."""
    from llm4cov.sim.analysis.structure import TestbenchPlan
    from llm4cov.sim.backends.verilator import VerilatorBackend
    from llm4cov.sim.config import SimConfig
    from llm4cov.tasks.model import Task

    files = [*lock_task.rtl_files, SourceFile(name=name, content="")]
    for frontend in ("slang", "verilog"):
        read = [line for line in job_text(files, "formal_lock", "cover", 5,
                                          frontend=frontend).splitlines()
                if line.startswith(("read_slang", "read_verilog"))]
        assert read and read[0].endswith(f" formal_lock.v ./{name}"), read
    task = Task(id="t", rtl_files=files, dut_module_name="formal_lock")
    command = VerilatorBackend(SimConfig()).verilate_command(
        task, SourceFile(name="tb.sv", content="module tb; endmodule\n"),
        TestbenchPlan("tb", "tb.dut"))
    assert f"./{name}" in command and name not in command
