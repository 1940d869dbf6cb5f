"""Formal closure with the real solver (SBY + Yices as WebAssembly) on the
``tests/fixtures/formal_lock`` design, whose three holes are known by construction:

- ``unlocked <= 1'b1`` (then branch at line 27) needs the codes A5, 3C, 7E on three
  consecutive clocks after reset: reached, at cycle 4 (reset cycle 0, three code cycles,
  the clocked cover reports one cycle later);
- the ``default`` case item (line 32): ``state`` only takes S0..S2, proven unreachable;
- ``alarm <= 1'b1`` (line 45) needs 65535 enabled clocks: unknown at the cover depth.

The default run keeps one test (a few seconds once the WebAssembly is compiled); it is
skipped when the formal tools or their compiled cache are missing (first CI run: run
``llm4cov formal warmup``). The evaluator round trips are ``slow``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm4cov.cli.app import main
from llm4cov.formal import FormalConfig, analyze, close
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import UncoveredItem
from llm4cov.tasks.loaders import task_from_dir

LOCK = Path(__file__).parent / "fixtures" / "formal_lock"


pytestmark = pytest.mark.requires_solver


def _item(kind: str, line: int, detail: str) -> UncoveredItem:
    return UncoveredItem(kind=kind, file="formal_lock.v", line=line, detail=detail)


UNLOCK = _item("branch", 27, "then branch of the if at formal_lock.v:27 never taken")
DEFAULT = _item("line", 32, "case item default of the case at formal_lock.v:23 never executed")
ALARM = _item("branch", 45, "then branch of the if at formal_lock.v:45 never taken")


@pytest.mark.heavy
def test_reached_unreachable_and_deep_holes_are_classified():
    task = task_from_dir(LOCK)
    config = FormalConfig(cover_depth=12, prove_depth=4, cache=False)
    result = analyze(task, [UNLOCK, DEFAULT, ALARM], config)
    by_line = {g.item.line: g for g in result.goals}
    assert (result.clock, result.resets) == ("clk", {"rst_n": True})
    assert by_line[27].status == "reached" and by_line[27].step == 4
    assert by_line[32].status == "unreachable"
    assert by_line[32].reason == "proven by 4-induction"
    assert by_line[45].status == "unknown" and by_line[45].step == 12
    assert by_line[45].reason.startswith("not reached within 12 cycles")
    assert "not 4-inductive" in by_line[45].reason
    trace = result.traces[by_line[27].trace]
    assert [s["code"] for s in trace[1:4]] == [0xA5, 0x3C, 0x7E]
    assert trace[0]["rst_n"] == 0 and trace[1]["rst_n"] == 1


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_witness_replay_is_confirmed_by_the_evaluator(tmp_path):
    task = task_from_dir(LOCK)
    evaluator = Evaluator(SimConfig(feedback_limit=10_000, cache_dir=str(tmp_path / "c")))
    config = FormalConfig(cover_depth=12, prove_depth=4, prove_budget_s=60,
                          cache_dir=str(tmp_path / "c"))
    closure = close(task, None, evaluator, config)
    unlock = next(g for g in closure.result.goals if g.item.line == 27 and g.what == "then branch")
    assert unlock.status == "reached" and unlock.confirmed is True
    assert closure.how == "merged" and closure.after.sim_pass
    assert not any(u.line == 27 and u.detail == UNLOCK.detail for u in closure.after.uncovered)
    assert closure.after.overall() > closure.before.overall()
    default = next(g for g in closure.result.goals if g.item.line == 32)
    assert default.status == "unreachable"
    assert closure.excluded_coverage() > closure.after.overall()
    again = analyze(task, closure.before.uncovered, config)
    assert again.cached
    assert again.goals == [g.model_copy(update={"confirmed": None}) for g in closure.result.goals]


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_cli_writes_the_closing_testbench(tmp_path, capsys):
    out = tmp_path / "closing_tb.sv"
    code = main(["formal", "--rtl", str(LOCK), "--out", str(out), "--json",
                 "--cover-depth", "12", "--prove-depth", "4", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["reached"] >= 1 and data["unreachable"] >= 1
    assert data["coverage_after"] > data["coverage_before"]
    assert "llm4cov formal: trace 0" in out.read_text()


@pytest.mark.heavy
def test_the_formal_policy_reports_its_verdicts_with_the_answer():
    """The bench lists proven-unreachable items from the policy's annotation."""
    from llm4cov.policies import GenerationRequest
    from llm4cov.policies.base import AgentState
    from llm4cov.policies.formal import FormalPolicy
    from llm4cov.sim.model.observation import Observation, Status

    task = task_from_dir(LOCK)
    tb = "module tb;\n  initial $finish;\nendmodule"
    state = AgentState(1, tb, Observation(status=Status.SUCCESS,
                                          uncovered=[UNLOCK, DEFAULT, ALARM]))
    policy = FormalPolicy(config=FormalConfig(cover_depth=12, prove_depth=4, cache=False))
    answer = policy.generate(GenerationRequest(task, [], state=state))
    formal = answer.annotations["formal"]
    assert (formal["reached"], formal["unreachable"], formal["unknown"]) == (1, 1, 1)
    assert [(i["line"], i["kind"], i["metric"]) for i in formal["unreachable_items"]] == [
        (32, "line", "line")]


CC_STYLE = Path(__file__).parent / "fixtures" / "cc_style"
FORMAL_ERROR = Path(__file__).parent / "fixtures" / "formal_error"


@pytest.mark.heavy
def test_rtl_in_subfolders_with_a_package_and_an_include_dir_is_read():
    """tests/fixtures/cc_style (common_cells layout: src/ with a package, include/cc/ with
    a macro header, a test/ testbench the filelist leaves out). SBY used to copy the
    files by base name while the script read src/cc_pkg.sv: every job failed. The
    error flag's branch (cc_fifo.sv:57) can never be taken; full_o rises after 4 pushes."""
    task = task_from_dir(CC_STYLE, filelist=CC_STYLE / "cc.f")
    never = UncoveredItem(kind="branch", file="src/cc_fifo.sv", line=57,
                          detail="then branch of the if at src/cc_fifo.sv:57 never taken")
    full = UncoveredItem(kind="toggle", file="src/cc_fifo.sv", line=17,
                         detail="full_o never toggled 0->1")
    result = analyze(task, [never, full], FormalConfig(cover_depth=8, prove_depth=3,
                                                       cache=False))
    assert result.errors == [] and result.count("error") == 0
    by_line = {g.item.line: g for g in result.goals}
    assert by_line[57].status == "unreachable"
    assert by_line[17].status == "reached" and by_line[17].step == 5  # reset + 4 pushes


@pytest.mark.heavy
def test_a_failed_job_is_an_error_verdict_not_unknown():
    """tests/fixtures/formal_error: neither frontend reads `$urandom`; each goal is
    `error` with the tool's own first error line, and the result is not cached."""
    task = task_from_dir(FORMAL_ERROR)
    item = UncoveredItem(kind="branch", file="formal_error.sv", line=14,
                         detail="then branch of the if at formal_error.sv:14 never taken")
    result = analyze(task, [item], FormalConfig(cover_depth=5, prove_depth=2, cache=False))
    assert [g.status for g in result.goals] == ["error"]
    assert "unsupported system task '$urandom'" in result.goals[0].reason
    assert result.all_jobs_failed() and result.runs == 1
    assert result.errors[0].startswith("cover job: slang: ERROR: unsupported system task")


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_cli_exits_1_with_the_reason_when_every_job_fails(tmp_path, capsys):
    out = tmp_path / "closing_tb.sv"
    code = main(["formal", "--rtl", str(FORMAL_ERROR), "--out", str(out), "--json",
                 "--cover-depth", "5", "--prove-depth", "2", "--no-cache"])
    captured = capsys.readouterr()
    assert code == 1
    data = json.loads(captured.out)
    assert data["error"] >= 1 and data["unknown"] == 0
    assert data["job_errors"][0].startswith("cover job: slang: ERROR")
    error = captured.err.strip().splitlines()[-1]  # after the progress lines
    assert error.startswith("error: formal: every SBY job failed")
    assert "unsupported system task '$urandom'" in captured.err
    assert out.exists()  # the (unchanged) testbench is still written


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_gen_with_the_formal_policy_marks_the_proven_default_unr(tmp_path):
    """The issue's acceptance run: `gen examples/traffic_fsm --model formal` proves the
    `default:` (traffic_light.sv:37) unreachable; coverage.md, run.json and the HTML
    report mark it UNR beside the unchanged headline."""
    from lxml import html as lxml_html

    out = tmp_path / "tf"
    examples = Path(__file__).parents[1] / "examples"
    assert main(["gen", str(examples / "traffic_fsm"), "--model", "formal",
                 "--out", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["formal"]["unreachable"] >= 1 and run["formal"]["error"] == 0
    cov = run["coverage"]
    assert {"file": "traffic_light.sv", "line": 37, "kind": "line", "mark": "UNR",
            "detail": "case item default of the case at traffic_light.sv:18 never executed"
            } in cov["items_apart"]
    assert cov["overall_unreachable_excluded"] > cov["overall"]
    md = (out / "coverage.md").read_text()
    assert "## Proven unreachable" in md
    assert "traffic_light.sv:37 [line] case item default" in md.split("## Proven")[1]
    page = lxml_html.parse(str(out / "html" / "index.html")).getroot()
    assert page.get_element_by_id("f0-L37").get("class") == "unr"


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_gen_with_the_formal_policy_on_rtl_in_subfolders(tmp_path):
    """tests/fixtures/cc_style through gen (the filelist names the RTL: the test/
    testbench is not RTL): the formal rounds classify goals, no job fails."""
    out = tmp_path / "cc"
    assert main(["gen", str(CC_STYLE), "-f", str(CC_STYLE / "cc.f"), "--top", "cc_fifo",
                 "--model", "formal", "--out", str(out), "--rounds", "2"]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["formal"]["error"] == 0 and run["formal"]["job_errors"] == []
    assert run["formal"]["reached"] + run["formal"]["unreachable"] > 0


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_gen_says_when_the_formal_jobs_fail(tmp_path, capsys):
    """It used to be invisible under gen ("0 reached, 3 unknown", exit 0): now each
    failed job is a note, the goals are `error` in run.json, the answer says so."""
    out = tmp_path / "fe"
    main(["gen", str(FORMAL_ERROR), "--model", "formal", "--out", str(out),
          "--rounds", "2"])
    printed = capsys.readouterr()
    assert "warning: round 2: formal: 3 goals not classified, a job failed: cover job: " \
        "slang: ERROR: unsupported system task '$urandom'" in printed.out + printed.err
    run = json.loads((out / "run.json").read_text())
    assert (run["formal"]["error"], run["formal"]["unknown"]) == (3, 0)
    assert "// llm4cov formal: job error: cover job: slang: ERROR" in \
        (out / "rounds" / "round_2.json").read_text()
