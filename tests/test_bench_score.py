"""Scoring and reports of a bench run from hand-written result rows (no simulator)."""

from __future__ import annotations

import pytest

from llm4cov.bench.config import Arm, ArmKind
from llm4cov.bench.metrics import Estimator, Outcome
from llm4cov.bench.plan import Calibration, RunPlan, TaskInfo
from llm4cov.bench.plots import all_plots
from llm4cov.bench.report import html_report, markdown
from llm4cov.bench.score import score, trajectory

FAIL = (False, False, 0.0)


def row(arm: str, task: str, sample: int, rnd: int, state: tuple, sim: bool = True) -> dict:
    sim_pass, cov_pass, coverage = state
    return {"arm": arm, "task_id": task, "sample": sample, "round": rnd, "sim_pass": sim_pass,
            "cov_pass": cov_pass, "coverage": coverage,
            "testbench_sha256": "x" if sim else None, "prompt_tokens": 100,
            "completion_tokens": 10, "gen_s": 1.0, "build_s": 2.0, "run_s": 0.5,
            "observation": {"cached": rnd == 1}}


def info(task_id: str, source: str, difficulty, cal: Calibration, ref: bool,
         calibration_overall: float | None = None) -> TaskInfo:
    return TaskInfo(id=task_id, source=source, difficulty=difficulty, target=90.0,
                    target_source="x", calibration=cal, calibrated_on="verilator rev X",
                    has_reference=ref, calibration_overall=calibration_overall)


PLAN = RunPlan(
    command="llm4cov bench --tasks t.jsonl --model m --mode agentic --samples 2",
    identity={"mode": "agentic"}, tasks_file="t.jsonl", tasks_sha256="0",
    simulator="verilator rev X", coverage_options=["--coverage-line"],
    overall_metrics=["line", "branch", "expr", "toggle"], stop_at_full_coverage=True,
    arms=[Arm("m", ArmKind.AGENT, 2, 2), Arm("reference", ArmKind.REFERENCE, 1, 1)],
    tasks=[info("cvdp/a", "cvdp", "easy", Calibration.OTHER_SIMULATOR, False),
           info("rtllm/b", "rtllm", None, Calibration.THIS_SIMULATOR, True, 98.5),
           info("rtllm/c", "rtllm", None, Calibration.THIS_SIMULATOR, False)],
)
ROWS = [
    row("m", "cvdp/a", 0, 0, FAIL), row("m", "cvdp/a", 0, 1, (True, True, 100.0)),
    row("m", "cvdp/a", 1, 0, (True, False, 58.0)), row("m", "cvdp/a", 1, 1, FAIL, sim=False),
    row("m", "rtllm/b", 0, 0, (True, True, 100.0)),  # 100%: the sample stopped early
    row("m", "rtllm/b", 1, 0, FAIL), row("m", "rtllm/b", 1, 1, FAIL),
    row("m", "rtllm/c", 0, 0, (True, False, 40.0)),  # unfinished (killed run)
    row("reference", "rtllm/b", 0, 0, (True, True, 97.0)),
]


def test_trajectory_rules():
    full = row("m", "t", 0, 0, (True, True, 100.0))
    part = row("m", "t", 0, 0, (True, False, 40.0))
    best = Outcome(True, True, 100.0)
    assert trajectory([full], 3, stop_at_full=True) == [best, best, best]
    assert trajectory([full], 3, stop_at_full=False) is None
    assert trajectory([part], 2, stop_at_full=True) is None
    assert trajectory([part, row("m", "t", 0, 2, FAIL)], 3, True) is None  # round 1 missing
    assert trajectory([], 1, True) is None


def test_score_by_hand():
    s = score(PLAN, ROWS)
    m = s["arms"]["m"]
    assert (m["tasks_planned"], m["tasks_scored"]) == (3, 2)
    assert (m["samples_planned"], m["samples_finished"]) == (6, 4)
    assert s["complete"] is False
    h = m["headline"]
    # finals: a = (pass 100), (sim 58); b = (pass 100), (fail)
    assert h["sim_pass"] == pytest.approx(75.0)  # (2/2 + 1/2) / 2
    assert h["cov_pass"] == pytest.approx(50.0)  # (1/2 + 1/2) / 2
    assert h["avg_cov"] == pytest.approx(64.5)  # (79 + 50) / 2
    assert h["best_of_n"] == pytest.approx(100.0)
    assert h["pass_at_k"] == {"1": pytest.approx(50.0), "2": pytest.approx(100.0)}
    # after round 1: a = (fail), (sim 58); b = (pass 100), (fail)
    r1 = m["per_round"][0]
    assert (r1["sim_pass"], r1["cov_pass"], r1["avg_cov"]) == pytest.approx((50.0, 25.0, 39.5))
    assert m["per_round"][1] == h
    easy, none = m["by_difficulty"]["easy"], m["by_difficulty"]["-"]
    assert (easy["tasks"], easy["sim_pass"], easy["cov_pass"], easy["avg_cov"]) == (
        1, 100.0, 50.0, 79.0)
    assert (none["tasks"], none["sim_pass"], none["avg_cov"]) == (1, 50.0, 50.0)
    assert set(m["by_source"]) == {"cvdp", "rtllm"}
    assert m["spent"]["sim_calls"] == 7  # one round had no testbench
    assert m["spent"]["sim_cached"] == 2  # the simulated second rounds (marked cached)
    assert m["spent"]["prompt_tokens"] == 800
    a_row = next(t for t in m["per_task"] if t["task_id"] == "cvdp/a")
    assert (a_row["n"], a_row["sim_pass_count"], a_row["cov_pass_count"]) == (2, 2, 1)
    assert a_row["calibration"] == "other_simulator"
    # after round 1: s0 failed, s1 simulated at 58; after round 2: s0 passes at 100
    assert a_row["rounds"] == [
        {"n": 2, "sim_pass_count": 1, "tool_failure_count": 0, "cov_pass_count": 0,
         "mean_cov": 29.0},
        {"n": 2, "sim_pass_count": 2, "tool_failure_count": 0, "cov_pass_count": 1,
         "mean_cov": 79.0}]

    ref = s["arms"]["reference"]
    assert (ref["tasks_planned"], ref["samples_finished"]) == (1, 1)
    assert ref["headline"]["avg_cov"] == pytest.approx(97.0)
    assert ref["headline"]["pass_at_k"] == {"1": pytest.approx(100.0)}

    assert s["thresholds"]["calibrated_count"] == 2
    assert s["thresholds"]["not_calibrated"] == {"other_simulator": ["cvdp/a"]}
    # the reference scored 97 here, 98.5 in the calibration run that set the target
    assert s["thresholds"]["reference_compared"] == 1
    assert s["thresholds"]["reference_drift"] == [{
        "task_id": "rtllm/b", "calibration": 98.5, "measured": 97.0, "target": 90.0,
        "below_target": False}]


def test_cvdp_estimator_changes_pass_at_2_only():
    h = score(PLAN, ROWS, Estimator.CVDP)["arms"]["m"]["headline"]
    assert h["cov_pass"] == pytest.approx(50.0)
    assert h["pass_at_k"]["2"] == pytest.approx(75.0)  # (1 - 0.5^2) for both tasks


def test_reports_state_the_protocol():
    s = score(PLAN, ROWS)
    md = markdown(s)
    assert "llm4cov bench --tasks t.jsonl --model m --mode agentic --samples 2" in md
    assert "Simulator: verilator rev X" in md
    assert "line (basic blocks), branch, expr, toggle" in md
    assert "unbiased estimator 1 - C(n-c,k)/C(n,k) (Chen et al. 2021)" in md
    assert "† 1 of 3 thresholds were NOT calibrated for this simulator: CVDP thresholds" in md
    assert "INCOMPLETE RUN" in md
    assert ("scores as in the calibration run on 0 of 1 tasks; it differs on 1 (largest "
            "difference 1.50 percentage points).") in md
    assert "| m | 2/3 | 2 | 2 | 75.0% | 50.0% | 64.5% | 100.0% | 100.0% |" in md
    assert "| reference | 1/1 | 1 | 1 | 100.0% | 100.0% | 97.0% | 97.0% | - |" in md
    assert "| m | 1 | 50.0% | 25.0% | 39.5% |" in md
    assert "| cvdp/a | 90† | 79.0% | 1/2 | - | - |" in md
    assert "CVDP run_samples.py estimator" in markdown(score(PLAN, ROWS, Estimator.CVDP))

    plots = all_plots(s)
    assert set(plots) == {"coverage_by_round", "task_coverage_distribution", "pass_at_k"}
    assert all(png.startswith(b"\x89PNG") for png in plots.values())
    page = html_report(s, plots)
    assert page.count("<img") == 3 and "<td>75.0%</td>" in page


def _unreachable(line: int, kind: str) -> dict:
    return {"file": "b.v", "line": line, "kind": kind, "item": f"{kind} at {line}",
            "goal": "never", "metric": kind}


def test_formal_verdicts_are_separate_figures_and_listed():
    plan = RunPlan(command="c", identity={"mode": "agentic"}, tasks_file="t.jsonl",
                   tasks_sha256="0", simulator="v", coverage_options=[],
                   overall_metrics=["line", "branch"], stop_at_full_coverage=True,
                   arms=[Arm("formal", ArmKind.AGENT, 1, 2)],
                   tasks=[info("rtllm/b", "rtllm", None, Calibration.THIS_SIMULATOR, False)])
    first = {**row("formal", "rtllm/b", 0, 0, (True, False, 70.0)),
             "metrics": {"line": [8, 10], "branch": [6, 10]}}
    second = {**row("formal", "rtllm/b", 0, 1, (True, False, 75.0)),
              "metrics": {"line": [9, 10], "branch": [6, 10]},
              "annotations": {"formal": {
                  "reached": 1, "unreachable": 2, "unknown": 1,
                  "unreachable_items": [_unreachable(7, "line"), _unreachable(9, "branch")]}}}
    s = score(plan, [first, second])
    arm = s["arms"]["formal"]
    assert arm["headline"]["avg_cov"] == pytest.approx(75.0)  # the headline is unchanged
    [task] = arm["per_task"]
    # best row: line 9/(10-1) = 100 %, branch 6/(10-1) = 66.67 %; mean 83.33 %
    assert task["formal"]["best_cov_unreachable_excluded"] == pytest.approx(83.3333)
    assert (task["formal"]["reached"], task["formal"]["unreachable"],
            task["formal"]["unknown"]) == (1, 2, 1)
    assert arm["formal"]["avg_best_cov_unreachable_excluded"] == pytest.approx(83.3333)
    md = markdown(s)
    assert "| rtllm/b | 1 | 2 | 1 | 75.0% | 83.3% |" in md
    # notes are literal text: the brackets escaped, rendered as written
    assert "proven unreachable: rtllm/b: b.v:9 \\[branch\\] never (branch at 9)" in md
    assert "formal" not in score(PLAN, ROWS)["arms"]["m"]  # no verdicts, no entry


def test_task_fields_in_the_markdown_report_stay_text():
    """A task row's ``source`` and ``difficulty`` reach the "By source"/"By difficulty"
    tables: rendered (markdown-it, HTML on) they open no heading, row, HTML or link,
    and no raw control character is written."""
    from markdown_it import MarkdownIt

    evil = "x | FORGED | 100% |\n## Results\n<img src=x onerror=alert(1)>\x1b]0;t\x07"
    plan = PLAN.model_copy(update={
        "tasks": [info("cvdp/a", evil, evil, Calibration.OTHER_SIMULATOR, False),
                  *PLAN.tasks[1:]], "command": "llm4cov bench ```\n# forged"})
    md = markdown(score(plan, ROWS))
    assert "\x1b" not in md and "\x07" not in md
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<img" not in html and html.count("<h2>Results") == 1  # the report's own
    assert "<td>x | FORGED | 100% |" in html and "<h1>forged" not in html  # one cell
