"""``llm4cov close``: merged coverage, the greedy minimization, the residual by cause,
``--replay`` and resuming after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from llm4cov.close.loop import STEPS, Closer, State
from llm4cov.close.merge import RunScope, encode_key, merge_all, minimize, run_points
from llm4cov.close.model import Cause, CloseSettings, GoalVerdict, StepRecord
from llm4cov.close.report import finalize, points_of
from llm4cov.close.residual import classify, closure_percent, proven_counts
from llm4cov.sim.model.coverage import DesignModules, Point, summarize
from llm4cov.tasks.loaders import task_from_dir
from support.replay_server import ReplayServer

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "close_tiny"
RESIDUAL = FIXTURES / "close_residual"


def _line(count: int, **attrs: str) -> str:
    return f"C '{encode_key(attrs.items())}' {count}\n"


def _dat(root: str, top: str, counts: dict[str, int]) -> str:
    """A coverage.dat of the tiny design: its 9 DUT points under ``root`` with
    ``counts`` (default 0) and one testbench point."""
    rows = [("line", "7", "3", "block"), ("branch", "8", "5", "if"),
            ("branch", "8", "6", "else")] + [
        ("toggle", str(line), "15", f"{sig}:{d}")
        for line, sig in ((3, "a"), (4, "b"), (5, "y")) for d in ("0->1", "1->0")]
    text = "# SystemC::Coverage-3\n"
    for t, line, col, comment in rows:
        text += _line(counts.get(comment, 0), t=t, f="tiny.v", l=line, n=col, o=comment,
                      h=root, page=f"v_{t}/tiny")
    return text + _line(1, t="line", f="tb.sv", l="5", n="3", o="block", h=top,
                        page=f"v_line/{top}")


def test_merge_of_two_runs_is_the_union_of_their_points():
    """Hand-counted: the tiny design has 9 points (1 block, 2 branch arms, 3 signals x 2
    toggle directions). Run 1 (``tb.dut``) hits 6, run 2 (``tb_top.u``: another top
    and instance name) hits 4, both hit the block: the union is 9 - 1 (b 1->0 missed
    by both) = 8, counts summed; the testbench's own points never count."""
    one = _dat("tb.dut", "tb", {"block": 3, "if": 1, "else": 1, "a:0->1": 1, "b:0->1": 1,
                                "y:0->1": 1})
    two = _dat("tb_top.u", "tb_top", {"block": 2, "else": 4, "a:1->0": 1, "y:1->0": 1})
    modules = DesignModules(frozenset({"tiny"}), frozenset({"tb", "tb_top"}))
    p1 = run_points(one, RunScope("tb.dut", frozenset({"tiny.v"}), modules), "tb.dut")
    p2 = run_points(two, RunScope("tb_top.u", frozenset({"tiny.v"}), modules), "tb.dut")
    assert len(p1) == len(p2) == 9 and set(p1) == set(p2)  # same identities after rewrite
    merged = merge_all([("t1", p1), ("t2", p2)])
    assert merged.covered() == merged.hits["t1"] | merged.hits["t2"]
    points = points_of(merged.counts)
    assert {p.hier for p in points} == {"tb.dut"}
    assert len(points) == 9 and sum(p.count > 0 for p in points) == 8
    block = next(p for p in points if p.comment == "block")
    assert block.count == 5
    rep = summarize(points, "tb.dut", {"tiny.v": (TINY / "tiny.v").read_text()})
    assert rep is not None
    assert {m: (c.covered, c.total) for m, c in rep.metrics.items()} == {
        "branch": (2, 2), "line": (1, 1), "toggle": (5, 6)}
    # the merged file reads back as the same points (a real coverage.dat)
    assert run_points(merged.dat_text(), RunScope("tb.dut", frozenset({"tiny.v"})),
                       "tb.dut") == merged.counts


def test_minimize_is_greedy_set_cover_then_drops_redundant_tests():
    hits = {"a": {1, 2, 3}, "b": {3, 4}, "c": {4, 5, 6, 7}, "d": {1, 2}, "e": {5}}
    kept = minimize({k: frozenset(map(str, v)) for k, v in hits.items()}, list(hits))
    assert kept == ["a", "c"]  # c (4 new), then a (3 new); b, d, e add nothing after
    same = minimize({"x": frozenset({"1"}), "y": frozenset({"1"})}, ["x", "y"])
    assert same == ["x"]  # ties go to the earlier test


def _p(metric: str, line: int, col: int, comment: str, count: int, lines: str = "") -> Point:
    return Point(metric, "close_residual.v", line, comment, "tb.dut", count, lines, col,
                 "close_residual")


def test_residual_classification_by_cause():
    """The fixture's three kinds of holes, from hand-made points (the points
    Verilator writes for close_residual.v) and formal verdicts."""
    sources = {"close_residual.v": (RESIDUAL / "close_residual.v").read_text()}
    default = _p("line", 25, 9, "case", 0, "25-26")
    const_then = _p("line", 35, 14, "if", 202, "35-36")
    const_else = _p("line", 35, 15, "else", 0, "37-38")
    deep = _p("branch", 47, 7, "if", 0, "47")
    hit = _p("branch", 47, 8, "else", 152)
    excluded = _p("toggle", 11, 15, "alarm:0->1", 0)
    verdicts = [
        GoalVerdict(file="close_residual.v", line=25, kind="line", item="case item default "
                    "of the case at close_residual.v:21 never executed", goal="case item",
                    metric="line", status="unreachable"),
        GoalVerdict(file="close_residual.v", line=47, kind="branch", item="then branch of "
                    "the if at close_residual.v:47 never taken", goal="then branch",
                    metric="branch", status="unknown",
                    reason="not reached within 12 cycles (cover fail); not 4-inductive")]
    residual = classify([default, const_then, const_else, deep, hit], [excluded], sources,
                        verdicts, "not hit by 2 random tests", "not analyzed", 4)
    by_line = {(r.metric, r.line): r for r in residual}
    assert by_line[("line", 25)].cause is Cause.UNREACHABLE
    assert "4-induction" in by_line[("line", 25)].reason and by_line[("line", 25)].proven
    assert by_line[("line", 37)].cause is Cause.CONSTANT
    assert by_line[("branch", 47)].cause is Cause.NOT_REACHED
    assert "not reached within 12 cycles" in by_line[("branch", 47)].reason
    assert "not hit by 2 random tests" in by_line[("branch", 47)].reason
    assert by_line[("toggle", 11)].cause is Cause.EXCLUDED
    assert len(residual) == 4
    # closure: line 1 covered + 1 proven of 3; branch 1 of 2 -> (66.67 + 50) / 2
    rep = summarize([default, const_then, const_else, deep, hit], "tb.dut", sources)
    assert rep is not None
    assert closure_percent(rep.metrics, proven_counts(residual)) == pytest.approx(58.3333)


def test_an_expression_row_that_needs_another_parameter_value_is_parameter_constant():
    """``rst = arst_i ^ ARST_LVL`` built with ARST_LVL = 0 (an active-low build of a core
    whose reset polarity is a parameter): Verilator's rows with ``ARST_LVL==1`` cannot
    be hit; the rows with ``ARST_LVL==0`` are the stimulus's (opencores' i2c left such
    rows not_reached)."""
    from llm4cov.close.residual import parameter_row

    rtl = ("module ctr #(parameter ARST_LVL = 1'b0) (input clk, input arst_i);\n"
           "  wire rst = arst_i ^ ARST_LVL;\nendmodule\n")
    rows = [Point("expr", "ctr.v", 2, f"(arst_i=={a} && ARST_LVL=={lvl}) => {a ^ lvl}",
                  "tb.dut", 0, col=21) for a in (0, 1) for lvl in (0, 1)]
    params = {"": {"ARST_LVL": 0}}
    dead = "the row needs ARST_LVL=1; the design is elaborated with ARST_LVL = 0"
    assert [parameter_row(p, params, "tb.dut") for p in rows] == [None, dead, None, dead]
    residual = classify(rows, [], {"ctr.v": rtl}, [], "not hit", "not analyzed", 4, params,
                        "tb.dut")
    assert [r.cause for r in residual] == [Cause.NOT_REACHED, Cause.CONSTANT,
                                           Cause.NOT_REACHED, Cause.CONSTANT]
    # a submodule's own parameters, by its instance path
    sub = Point("expr", "ctr.v", 2, "(u_arst==0 && ARST_LVL==1) => 1", "tb.dut.u", 0)
    assert parameter_row(sub, {"u": {"ARST_LVL": 0}}, "tb.dut") == dead
    assert parameter_row(sub, {"": {"ARST_LVL": 0}}, "tb.dut") is None


def test_schedule_is_a_function_of_the_finished_steps():
    """Random lengths in turn (a length is left at its first test that adds nothing),
    then formal analyses until one has nothing to analyze, with one continuation after
    the first, then done; the same records give the same plans."""
    settings = CloseSettings(lengths=(10, 20), formal=True)

    def rec(step: int, kept: bool, analyzed: list[str] | None = None) -> StepRecord:
        return StepRecord(step=step, name=f"t{step:04d}", kept=kept, analyzed=analyzed or [])

    state = State(settings, formal_ready=True)
    plans = []
    for record in (rec(0, True), rec(1, False), rec(2, False), rec(3, True, ["x"]),
                   rec(4, True), rec(5, False, [])):
        plan = state.plan()
        assert plan is not None
        plans.append((plan.source, plan.seed, plan.length))
        record.phase = plan.source  # as the loop names it
        state.observe(record, None)
    assert plans == [("random", 1, 10), ("random", 2, 10), ("random", 3, 20),
                     ("formal", 4, None), ("continue", 5, None), ("formal", 6, None)]
    assert state.plan() is None
    stop = State(CloseSettings(lengths=(10,), continue_steps=0), formal_ready=True)
    for record in (rec(0, False), rec(1, False, ["x"]), rec(2, False, [])):
        assert stop.plan() is not None and stop.plan().source != "continue"
        stop.observe(record, None)
    assert stop.plan() is None
    once = State(CloseSettings(lengths=(10,), formal_rounds=1), formal_ready=True)
    for record in (rec(0, False), rec(1, False, ["x"])):
        once.observe(record, None)
    assert once.plan().source == "continue"
    once.observe(StepRecord(step=2, phase="continue", name="t0002", kept=True), None)
    assert once.plan() is None
    # a log written before steps named their phase (no continuation then): its analyses
    # fold as analyses, and the continuation is due after them
    old = State(CloseSettings(lengths=(10,)), formal_ready=True)
    for record in (rec(0, False), rec(1, False, ["x"]), rec(2, False, ["y"])):
        old.observe(record, None)
    assert (old.formal_rounds, old.continued, old.plan().source) == (2, False, "continue")
    new = State(CloseSettings(lengths=(10,)), formal_ready=True)
    for record in (rec(0, False), rec(1, False, ["x"]), rec(2, False)):
        record.phase = ("random", "formal", "continue")[record.step]
        new.observe(record, None)
    assert (new.formal_rounds, new.continued, new.plan().source) == (1, True, "formal")
    no_formal = State(CloseSettings(lengths=(10,)), formal_ready=False)
    no_formal.observe(rec(0, False), None)
    assert no_formal.plan() is None


# -- with the simulator -----------------------------------------------------------------
TB_ONE = """module tb;
  reg a, b;
  wire y;
  tiny dut (.a(a), .b(b), .y(y));
  initial begin
    a = 0; b = 0;
    #1 a = 1;
    #1 b = 1;
    #1 b = 0;
    #1 $finish;
  end
endmodule
"""
TB_TWO = """module tb_top;
  reg a, b;
  wire y;
  tiny u (.a(a), .b(b), .y(y));
  initial begin
    a = 0; b = 0;
    #1 a = 1;
    #1 a = 0;
    #1 $finish;
  end
endmodule
"""


def _keeping():
    from llm4cov.sim.evaluator import Evaluator
    from llm4cov.sim.model.call import SimCall

    evaluator = Evaluator()

    def simulate(task, tb):
        return evaluator.evaluate_call(SimCall(task, tb, keep_coverage=True, any_instance=True))
    return simulate


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_two_real_testbenches_merge_to_the_union():
    """Hand-counted on tiny.v (9 points: the block, the if's two arms, a/b/y x 0->1 and
    1->0; the initial evaluation takes the else arm in every run). TB one (``tb.dut``)
    hits block, if, else, a 0->1, b both ways, y both ways: 8 (not a 1->0). TB two
    (``tb_top.u``) hits block, if, else, a both ways: 5. Union: all 9."""
    task = task_from_dir(TINY)
    simulate = _keeping()
    runs = []
    for tb in (TB_ONE, TB_TWO):
        obs = simulate(task, tb)
        assert obs.sim_pass and obs.coverage_data is not None, obs.log
        data = obs.coverage_data
        text = zlib.decompress(data.dat_zlib).decode()
        scope = RunScope(data.dut_hier, frozenset({"tiny.v"}),
                         DesignModules(frozenset(data.rtl_modules), frozenset(data.tb_modules)))
        runs.append(run_points(text, scope, "tb.dut"))
    assert [sum(n > 0 for n in r.values()) for r in runs] == [8, 5]
    assert all(len(r) == 9 for r in runs)
    merged = merge_all([("one", runs[0]), ("two", runs[1])])
    assert len(merged.covered()) == 9 == len(merged.hits["one"] | merged.hits["two"])
    rep = summarize(points_of(merged.counts), "tb.dut",
                    {f.name: f.content for f in task.rtl_files})
    assert rep is not None and rep.overall == 100.0


def _close(out: Path, *extra: str) -> list[str]:
    return ["close", str(RESIDUAL), "--out", str(out), "--lengths", "5,20,50,100",
            "--no-formal", "--budget", "600", *extra]


@pytest.mark.requires_verilator
@pytest.mark.slow
def test_replay_reproduces_and_a_stopped_run_resumes(tmp_path):
    from llm4cov.cli.app import main

    task = task_from_dir(RESIDUAL)
    settings = CloseSettings(lengths=(5, 20, 50), formal=False)
    whole = Closer(task, tmp_path / "whole", settings, _keeping())
    done = whole.run()
    first = Closer(task, tmp_path / "part", settings, _keeping())
    assert first.run(stop_after=2).ended == "stopped"
    again = Closer(task, tmp_path / "part", settings, _keeping())
    assert again.resume() == 2
    resumed = again.run()
    timed = ("wall_s", "seal")  # the seal covers the record, its time too
    strip = [{k: v for k, v in r.model_dump().items() if k not in timed}
             for r in resumed.state.records]
    assert strip == [{k: v for k, v in r.model_dump().items() if k not in timed}
                     for r in done.state.records]
    assert finalize(again, resumed).names == finalize(whole, done).names
    out = tmp_path / "cli"
    assert main(_close(out)) == 0
    saved = json.loads((out / "run.json").read_text())
    assert main(["close", "--replay", str(out)]) == 0
    replayed = json.loads((out / "replay.json").read_text())
    assert replayed["same"] and replayed["replayed"]["overall"] == saved["merged"]["overall"]


@pytest.mark.requires_verilator
@pytest.mark.slow
def test_kill_9_mid_run_then_rerun_gives_the_same_regression(tmp_path):
    """A real ``kill -9`` of the process group once a step is on disk; the rerun
    finishes the same regression (same steps, same kept tests, same figure)."""
    cmd = [str(Path(sys.executable).parent / "llm4cov")]
    clean = tmp_path / "clean"
    subprocess.run([*cmd, *_close(clean)], check=True, capture_output=True, timeout=600)
    killed = tmp_path / "killed"
    proc = subprocess.Popen([*cmd, *_close(killed)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        steps = killed / STEPS
        if steps.exists() and steps.read_text().count("\n") >= 1:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait(timeout=60)
    assert not (killed / "run.json").exists()  # killed before the end
    subprocess.run([*cmd, *_close(killed)], check=True, capture_output=True, timeout=600)

    def regression(out: Path) -> tuple:
        run = json.loads((out / "run.json").read_text())
        steps = [json.loads(line) for line in (out / STEPS).read_text().splitlines()]
        return (run["tests"], run["merged"], [(s["step"], s["tb_sha256"], s["kept"])
                                              for s in steps])

    assert regression(killed) == regression(clean)


@pytest.mark.requires_solver
@pytest.mark.requires_verilator
@pytest.mark.slow
def test_residual_fixture_end_to_end(tmp_path):
    """close_residual.v through the whole command: the default item proven
    unreachable, the MODE else arm parameter-constant, the alarm branch not reached."""
    from llm4cov.cli.app import main
    out = tmp_path / "res"
    assert main(["close", str(RESIDUAL), "--out", str(out), "--lengths", "50,200",
                 "--cover-depth", "12", "--prove-depth", "4", "--prove-budget", "20"]) == 0
    run = json.loads((out / "run.json").read_text())
    causes = {(r["metric"], r["line"]): r for r in run["residual"]}
    assert causes[("line", 25)]["cause"] == "proven_unreachable"
    assert causes[("line", 37)]["cause"] == "parameter_constant"
    assert causes[("branch", 47)]["cause"] == "not_reached"
    assert "not reached within 12 cycles" in causes[("branch", 47)]["reason"]
    assert run["closure"] > run["merged"]["overall"]
    md = (out / "coverage.md").read_text()
    assert "### proven_unreachable" in md and "### parameter_constant" in md
    assert "Residual by cause and module" in (out / "html" / "index.html").read_text()


TB_RESIDUAL = """module tb;
  reg clk = 0, rst_n = 0, en = 0;
  reg [1:0] op = 0;
  wire [7:0] acc;
  wire alarm;
  close_residual dut (.clk(clk), .rst_n(rst_n), .en(en), .op(op), .acc(acc), .alarm(alarm));
  always #5 clk = ~clk;
  initial begin
    #12 rst_n = 1; en = 1; op = 3;
    #3000 $finish;
  end
endmodule
"""


@pytest.mark.requires_verilator
@pytest.mark.slow
def test_model_tests_get_the_merged_holes_in_the_prompt(tmp_path):
    """With a model: after the random phase, the agent's prompt holds the merged
    coverage and its uncovered items; a useful answer is kept, a useless one dropped."""
    from llm4cov.policies import get_policy

    task = task_from_dir(RESIDUAL)
    answers = [f"```systemverilog\n{TB_RESIDUAL}```"]
    # a budget that never binds: on a loaded machine 240 s ended the run first
    settings = CloseSettings(lengths=(1,), formal=False, model="recorded", model_tests=3,
                             budget_s=1e6)
    with ReplayServer(answers, cycle=True) as server:
        policy = get_policy("recorded", base_url=server.base_url)
        closer = Closer(task, tmp_path / "m", settings, _keeping(), policy=policy)
        regression = closer.run()
    model = [r for r in regression.state.records if r.origin and r.origin.source == "model"]
    assert [r.kept for r in model] == [True, False, False]  # the same answer adds nothing
    assert regression.ended == "converged"  # two answers that add nothing end the phase
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "Simulation result of the current testbench" in prompt and "never" in prompt


def test_minimize_of_no_tests_is_no_tests():
    assert minimize({}, []) == []


@pytest.mark.requires_verilator
def test_a_design_that_does_not_compile_ends_the_run_at_its_first_test(tmp_path, capsys):
    """No test can pass: the first test's compile error (the design's own) ends the
    loop, with a one-line error naming it (exit 2) and no formal step after it."""
    from llm4cov.cli.app import main

    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "broken.v").write_text("module broken(input clk, input a, output reg q)\n"
                                  "  always @(posedge clk) q <= a;\nendmodule\n")
    out = tmp_path / "run"
    assert main(["close", str(rtl), "--top", "broken", "--out", str(out), "--lengths", "20",
                 "--no-html"]) == 2
    step_line, error = capsys.readouterr().err.strip().splitlines()
    assert step_line.startswith("step 0: random seed 1, 20 cycles: compile_error")
    assert error.startswith("error: local/broken: the design does not compile")
    assert "broken.v:2" in error and error.endswith("use another --out")
    [step] = [json.loads(line) for line in (out / STEPS).read_text().splitlines()]
    assert step["rtl_error"] is True and step["phase"] == "random" and not step["kept"]


def test_a_refused_rerun_names_what_differs(tmp_path, capsys):
    from llm4cov.cli.app import main
    from llm4cov.cli.close_cmd import _differs

    mine = {"task_id": "t", "task_sha256": "a", "exclusions": [],
            "settings": CloseSettings().identity()}
    other = {**mine, "settings": CloseSettings(minimize=False, seed=3).identity()}
    assert _differs(other, mine) == "settings (minimize, seed)"
    assert _differs({**other, "task_sha256": "b", "exclusions": ["x"]}, mine) == (
        "RTL and settings (minimize, seed) and exclusion rules")
    assert main(["close", str(RESIDUAL), "--replay", str(tmp_path), "--out",
                 str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: give --out DIR (run or resume) or --replay DIR (re-simulate it), not both")


@pytest.mark.requires_verilator
def test_a_resumed_run_refuses_what_llm4cov_did_not_write(tmp_path):
    """A resume folded ``coverage/*.dat`` as measured (an edited one turned 62.67 % into
    100 %), and a ``pruned`` link made finalizing delete a folder outside ``--out``:
    each kept step is sealed with this host's key (record, test, data), a link anywhere
    in the run directory is refused, and a step's name names no other path."""
    from llm4cov.close.model import StepRecord
    from llm4cov.util.rundir import RunDirForged

    task = task_from_dir(RESIDUAL)
    settings = CloseSettings(lengths=(5, 20), formal=False)
    out = tmp_path / "run"
    first = Closer(task, out, settings, _keeping())
    assert first.run(stop_after=1).ended == "stopped"
    (record,) = first.state.records
    assert record.kept and len(record.seal) == 64
    assert Closer(task, out, settings, _keeping()).resume() == 1
    dat = out / "coverage" / f"{record.name}.dat"
    honest = dat.read_text()
    dat.write_text(honest.replace("\x02\x01", "\x02\x09", 1) + " ")
    with pytest.raises(RunDirForged, match=r"step 0 \(t0000\) does not match"):
        Closer(task, out, settings, _keeping()).resume()
    dat.write_text(honest)
    # a step that keeps no test is sealed too (a thirty-ninth red team appended one whose
    # formal verdicts called every hole unreachable: closure 83.48 -> 100 %), and the
    # steps are read in order (a sealed record repeated is refused)
    steps = out / "steps.jsonl"
    lines = steps.read_text()
    forged = StepRecord(step=1, verdicts=[])
    steps.write_text(lines + forged.model_dump_json() + "\n")
    with pytest.raises(RunDirForged, match=r"step 1 \(no test\) does not match"):
        Closer(task, out, settings, _keeping()).resume()
    steps.write_text(lines + lines)
    with pytest.raises(RunDirForged, match=r"step 0 \(t0000\) does not match"):
        Closer(task, out, settings, _keeping()).resume()
    steps.write_text(lines)
    (out / "pruned").symlink_to(tmp_path)
    with pytest.raises(RunDirForged, match="pruned is a symbolic link"):
        Closer(task, out, settings, _keeping()).resume()
    with pytest.raises(ValueError, match="not a test name"):
        StepRecord(step=1, name="../../victim")
