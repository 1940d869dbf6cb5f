"""Tool failures (the simulator failed, not the model) and RTL errors (the task's RTL does
not compile on its own) are counted apart by bench and synth and left out of metric
denominators (hand-written rows, no simulator)."""

from __future__ import annotations

import json

import pytest

from llm4cov.bench.metrics import Outcome, best_so_far, headline
from llm4cov.bench.report import markdown
from llm4cov.bench.score import score
from llm4cov.synth.engine import run_summary
from test_bench_score import FAIL, PLAN, ROWS, row

TOOL = Outcome(False, False, 0.0, tool_failure=True)


def test_best_so_far_marks_failed_states_after_a_tool_failure():
    ok = Outcome(True, False, 40.0)
    assert best_so_far([TOOL, Outcome(False, False, 0.0)]) == [TOOL, TOOL]
    # a later passing round makes the sample the model's again
    assert best_so_far([TOOL, ok]) == [TOOL, ok]


def test_headline_leaves_tool_failures_out_unless_asked():
    per_task = [[Outcome(True, True, 80.0), TOOL], [TOOL]]
    h = headline(per_task)
    assert (h.tasks, h.samples, h.tool_failures) == (1, 1, 2)
    assert (h.sim_pass, h.avg_cov) == (100.0, 80.0)
    both = headline(per_task, include_tool_failures=True)
    assert (both.tasks, both.samples, both.tool_failures) == (2, 3, 2)
    assert both.sim_pass == pytest.approx(25.0)  # task 1: 1/2, task 2: 0/1
    assert both.avg_cov == pytest.approx(20.0)  # (40 + 0) / 2


def test_summary_and_report_count_tool_failures_apart():
    # sample 1 of rtllm/b: both rounds were tool failures (was a model failure in ROWS)
    rows = [r for r in ROWS if not (r["task_id"] == "rtllm/b" and r["sample"] == 1
                                    and r["arm"] == "m")]
    rows += [{**row("m", "rtllm/b", 1, n, FAIL), "tool_error": True} for n in (0, 1)]
    base, summary = score(PLAN, ROWS), score(PLAN, rows)
    arm = summary["arms"]["m"]
    assert arm["tool_failures"] == 1 and base["arms"]["m"]["tool_failures"] == 0
    b = next(t for t in arm["per_task"] if t["task_id"] == "rtllm/b")
    assert (b["n"], b["tool_failure_count"], b["sim_pass_count"]) == (2, 1, 1)
    # cvdp/a's samples score 100 and 58 (mean 79); rtllm/b now has 1 scored sample
    # (100) instead of 2 (100, 0): Avg Cov goes from (79 + 50) / 2 to (79 + 100) / 2
    assert base["arms"]["m"]["headline"]["avg_cov"] == pytest.approx(64.5)
    assert arm["headline"]["avg_cov"] == pytest.approx(89.5)
    assert arm["headline"]["samples"] == 3
    assert score(PLAN, rows, include_tool_failures=True)["arms"]["m"]["headline"][
        "avg_cov"] == pytest.approx(64.5)
    md = markdown(summary)
    assert ("Tool failures (the simulator failed, not the model): 1 m sample(s); left out "
            "of every metric's denominator.") in md


def test_synth_run_summary_counts_tool_failures(tmp_path):
    (tmp_path / "repos.jsonl").write_text(json.dumps(
        {"status": "skipped", "reason": "tool_error"}) + "\n")
    (tmp_path / "points.jsonl").write_text("")
    sample = {"simulated": True, "prompt_tokens": 3, "completion_tokens": 4}
    (tmp_path / "samples.jsonl").write_text("".join(
        json.dumps({**sample, "observation": {"tool_error": flag}}) + "\n"
        for flag in (True, False, False)))
    summary = run_summary(tmp_path)
    assert summary == {"repos": {"skipped:tool_error": 1}, "points": {}, "sim_calls": 3,
                       "tool_failures": 1, "rtl_errors": 0, "tokens": 21}


# -- RTL errors (issue 23, item 9): the task's RTL does not compile on its own ----------

RTL = Outcome(False, False, 0.0, rtl_error=True)


def test_headline_always_leaves_rtl_errors_out():
    per_task = [[Outcome(True, True, 80.0)], [RTL, RTL]]
    for include in (False, True):
        h = headline(per_task, include_tool_failures=include)
        assert (h.tasks, h.samples, h.rtl_errors, h.avg_cov) == (1, 1, 2, 80.0)
    assert best_so_far([RTL, Outcome(False, False, 0.0)]) == [RTL, RTL]


def test_summary_and_report_count_rtl_errors_apart():
    # every row of rtllm/b (both samples) found that its RTL does not compile
    rows = [r for r in ROWS if not (r["task_id"] == "rtllm/b" and r["arm"] == "m")]
    rows += [{**row("m", "rtllm/b", s, n, FAIL), "observation": {"rtl_error": True}}
             for s in (0, 1) for n in (0, 1)]
    arm = score(PLAN, rows)["arms"]["m"]
    assert (arm["rtl_errors"], arm["rtl_error_tasks"], arm["tool_failures"]) == (
        2, ["rtllm/b"], 0)
    b = next(t for t in arm["per_task"] if t["task_id"] == "rtllm/b")
    assert (b["n"], b["rtl_error_count"]) == (2, 2)
    # only cvdp/a is scored: its samples score 100 and 58
    assert (arm["headline"]["tasks"], arm["headline"]["avg_cov"]) == (1, pytest.approx(79.0))
    assert score(PLAN, ROWS)["arms"]["m"]["rtl_errors"] == 0
    md = markdown(score(PLAN, rows))
    assert ("RTL errors (the task's RTL does not compile on its own, not the model's "
            "failure): 2 m sample(s), tasks rtllm/b; left out of every metric's "
            "denominator.") in md
    assert "| tool failures | RTL errors |" in md


def test_synth_run_summary_counts_rtl_errors(tmp_path):
    (tmp_path / "repos.jsonl").write_text(json.dumps(
        {"status": "skipped", "reason": "rtl_error"}) + "\n")
    (tmp_path / "points.jsonl").write_text("")
    sample = {"simulated": True, "prompt_tokens": 1, "completion_tokens": 1}
    (tmp_path / "samples.jsonl").write_text("".join(
        json.dumps({**sample, "observation": {"rtl_error": flag}}) + "\n"
        for flag in (True, True, False)))
    summary = run_summary(tmp_path)
    assert (summary["repos"], summary["rtl_errors"], summary["tool_failures"]) == (
        {"skipped:rtl_error": 1}, 2, 0)


def test_a_bench_row_keeps_the_observations_rtl_error_for_scoring():
    from llm4cov.bench.rows import make_row
    from llm4cov.sim.model.observation import Observation, Status
    from llm4cov.tasks.model import SourceFile, Task

    task = Task(id="rtllm/b", rtl_files=[SourceFile(name="b.sv", content="")],
                dut_module_name="b")
    obs = Observation(status=Status.COMPILE_ERROR, rtl_error=True)
    made = [make_row(arm="m", task=task, sample=s, round_=n, observation=obs,
                     testbench="module tb; endmodule", simulator="v", wall_s=0.0,
                     model="m").as_json() for s in (0, 1) for n in (0, 1)]
    rows = [r for r in ROWS if not (r["task_id"] == "rtllm/b" and r["arm"] == "m")] + made
    assert score(PLAN, rows)["arms"]["m"]["rtl_error_tasks"] == ["rtllm/b"]
