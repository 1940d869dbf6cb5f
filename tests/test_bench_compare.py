"""Intervals and paired tests of `llm4cov bench compare` (bench/compare.py), against
values computed by hand from the textbook formulas."""

from __future__ import annotations

import json
import math

import pytest

from llm4cov.bench.compare import (
    arm_stats,
    mean_interval,
    paired_difference,
    pick_arm,
    sign_test,
    wilson,
)
from llm4cov.cli.app import main

Z = 1.959964  # the 97.5% normal quantile


def test_wilson_interval_matches_the_formula():
    # 0 of 60: [0, z^2 / (n + z^2)]
    none = wilson(0, 60)
    assert none.value == 0 and none.low == pytest.approx(0, abs=1e-9)
    assert none.high == pytest.approx(100 * Z**2 / (60 + Z**2), abs=1e-3)
    # 5 of 10: centre 0.5, half width z*sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)
    half = Z * math.sqrt(0.025 + Z**2 / 400) / (1 + Z**2 / 10)
    mid = wilson(5, 10)
    assert (mid.low, mid.high) == pytest.approx((100 * (0.5 - half), 100 * (0.5 + half)),
                                                abs=1e-3)
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_sign_test_counts_only_differing_tasks():
    result = sign_test([False, False, False, False, True, False],
                       [True, True, True, True, True, False])
    assert (result.b_wins, result.a_wins) == (4, 0)
    assert result.p_value == pytest.approx(2 * 0.5**4)  # 0.125, two-sided
    assert sign_test([True], [True]).p_value == 1.0


def test_bootstrap_intervals_of_constant_differences_are_points():
    diff = paired_difference([10.0, 20.0, 30.0], [15.0, 25.0, 35.0])
    assert (diff.value, diff.low, diff.high) == (5.0, 5.0, 5.0)
    spread = mean_interval([0.0, 100.0] * 20)
    assert spread.value == 50.0 and spread.low < 50.0 < spread.high


def _summary(per_task, arm="m"):
    return {"arms": {arm: {"per_task": per_task}, "random": {"per_task": per_task}}}


def _task(i, sim, cov_pass, cov):
    return {"task_id": f"t{i}", "n": 1, "sim_pass_count": sim, "tool_failure_count": 0,
            "cov_pass_count": cov_pass, "mean_cov": cov}


def test_arm_stats_and_the_cli_table(tmp_path, capsys):
    a = [_task(i, 0, 0, 0.0) for i in range(10)]
    b = [_task(i, 1, int(i < 5), 80.0) for i in range(10)]
    assert pick_arm(_summary(a)) == "m"
    with pytest.raises(ValueError, match="arms: m, random"):
        pick_arm(_summary(a), "nope")
    stats_b = arm_stats(_summary(b)["arms"]["m"])
    assert (stats_b.tasks, stats_b.samples, stats_b.cov_pass.value) == (10, 10, 50.0)
    for name, rows in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(_summary(rows)))
    assert main(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "| b:m | 10 | 10 | 100.0 [72.2, 100.0] | 50.0 [23.7, 76.3] | 80.0 [80.0, 80.0] |" in out
    assert "80.0 [80.0, 80.0] (10 tasks) | 5/0 (0.0625) | 10/0 (0.00195) |" in out


def test_compare_after_a_round_of_an_agentic_run(tmp_path, capsys):
    # 10 tasks, 3 rounds: round 1 passes 2 tasks, round 3 passes 8 (direct vs agentic)
    tasks = [{**_task(i, 1, int(i < 8), 90.0 if i < 8 else 40.0),
              "rounds": [_task(i, int(i < 5), int(i < 2), 90.0 if i < 2 else 10.0),
                         _task(i, 1, int(i < 5), 50.0), _task(i, 1, int(i < 8), 60.0)]}
             for i in range(10)]
    summary = {"arms": {"m": {"rounds": 3, "per_task": tasks}}}
    first = arm_stats(summary["arms"]["m"], after_round=1)
    assert (first.sim_pass.value, first.cov_pass.value) == (50.0, 20.0)
    assert first.avg_cov.value == pytest.approx(26.0)  # (2 * 90 + 8 * 10) / 10
    with pytest.raises(ValueError, match="no round 4"):
        arm_stats(summary["arms"]["m"], after_round=4)
    (tmp_path / "agentic").mkdir()
    (tmp_path / "agentic" / "summary.json").write_text(json.dumps(summary))
    run = str(tmp_path / "agentic")
    assert main(["bench", "compare", f"{run}@r1", run]) == 0
    out = capsys.readouterr().out
    assert "| agentic:m@r1 | 10 | 10 | 50.0 [" in out
    assert "| agentic:m | 10 | 10 | 100.0 [72.2, 100.0] | 80.0 [" in out
    assert "| 6/0 (0.0312) | 5/0 (0.0625) |" in out  # Cov Pass: tasks 2-7; Sim Pass: 5-9
    assert main(["bench", "compare", f"{run}@r9", run]) == 2


def test_an_arm_name_with_colons_is_picked_by_name(tmp_path, capsys):
    """A model arm is named ``MODE:MODEL`` and a local model ``local:PATH``: RUN:ARM
    splits at the first colon that ends a run directory, not at the last one."""
    arm = "direct:local:runs/x/checkpoint"
    rows = [_task(i, 1, int(i < 3), 50.0) for i in range(10)]
    other = [_task(i, 0, 0, 0.0) for i in range(10)]
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps(
        {"arms": {"random": {"per_task": other}, arm: {"per_task": rows}}}))
    assert main(["bench", "compare", f"{run}:random", f"{run}:{arm}"]) == 0
    out = capsys.readouterr().out
    assert f"| run:{arm} | 10 | 10 | 100.0 [72.2, 100.0] | 30.0 [" in out
    assert main(["bench", "compare", f"{run}:nope:x"]) == 2
    assert "no arm 'nope:x'" in capsys.readouterr().err
