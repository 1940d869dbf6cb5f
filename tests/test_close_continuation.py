"""``close``'s continuation step: the kept test that covers most, continued from the
state its simulation ends in, for the holes no proof settled.

Fixture of the end-to-end test: ``tests/fixtures/formal_continue/deep_key.v`` (``open``
needs 100 enabled clocks and then the key 16'hBEEF, about 102 cycles from reset).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm4cov.close.formal_steps import _open_holes, _verdicts
from llm4cov.close.loop import Closer
from llm4cov.close.model import CloseSettings, GoalVerdict
from llm4cov.formal.closure import GoalResult
from llm4cov.sim.model.coverage import Point, uncovered_items
from llm4cov.tasks.loaders import task_from_dir

FIXTURES = Path(__file__).parent / "fixtures"
RESIDUAL = FIXTURES / "close_residual"
DEEP = FIXTURES / "formal_continue"


def test_identity_names_the_continuation_only_when_not_the_default():
    """A run directory written before the continuation existed (its identity has no
    such fields) resumes with the defaults; another setting is part of the identity."""
    default = CloseSettings().identity()
    assert "continue_steps" not in default and "continue_budget_s" not in default
    assert CloseSettings(continue_steps=0).identity()["continue_steps"] == 0
    assert CloseSettings(continue_budget_s=5).identity() == {**default,
                                                             "continue_budget_s": 5.0}


def _closer(tmp_path: Path) -> tuple[Closer, list]:
    """A closer on close_residual.v whose merged holes are its line-25 block (the
    ``default`` item) and the then branch of line 47 (``alarm``)."""
    sources = {"close_residual.v": (RESIDUAL / "close_residual.v").read_text()}
    points = [Point("line", "close_residual.v", 25, "block", "tb.dut", 0, "25", 11,
                    "close_residual"),
              Point("branch", "close_residual.v", 47, "if", "tb.dut", 0, "47", 7,
                    "close_residual")]
    items, _ = uncovered_items(points, "tb.dut", sources)
    closer = Closer(task_from_dir(RESIDUAL), tmp_path, CloseSettings(),
                    simulate=None)  # type: ignore[arg-type]
    closer.holes = lambda: items  # type: ignore[method-assign]
    return closer, items


def test_holes_a_proof_settled_are_not_continued(tmp_path):
    closer, (block, then47) = _closer(tmp_path)
    assert _open_holes(closer) == [block, then47]
    closer.state.verdicts = [
        GoalVerdict.of(block, "line", "line", status="unreachable", reason="proven"),
        GoalVerdict.of(then47, "then branch", "branch", status="unknown",
                       reason="not reached within 12 cycles (cover fail)", depth=12)]
    assert _open_holes(closer) == [then47]
    # an item one of whose goals is only unknown stays open
    closer.state.verdicts.append(GoalVerdict.of(block, "block", "line", status="unknown"))
    assert _open_holes(closer) == [block, then47]


def test_a_continuation_verdict_follows_the_goals_verdict_from_reset(tmp_path):
    """An unknown goal the continuation searched keeps the reason from reset before its
    own (the residual shows the last verdict); a goal it never searched gets none; a
    proof is not followed by anything; a reached goal is kept as it is."""
    closer, (block, then47) = _closer(tmp_path)
    closer.state.verdicts = [
        GoalVerdict.of(block, "line", "line", status="unreachable", reason="proven"),
        GoalVerdict.of(block, "line", "line", status="unknown", reason="a later look"),
        GoalVerdict.of(then47, "then branch", "branch", status="unknown",
                       reason="not reached within 12 cycles (cover fail)", depth=12)]
    searched = GoalResult(item=then47, what="then branch", metric="branch", status="unknown",
                          reason="not reached from the simulated state within 48 cycles",
                          step=48)
    [after] = _verdicts(closer, [
        searched,
        GoalResult(item=block, what="line", metric="line", status="unknown",
                   reason="not reached from the simulated state within 48 cycles", step=48),
        GoalResult(item=then47, what="else branch", metric="branch", status="unknown",
                   reason="not searched from a simulated state", step=0)])
    assert (after.status, after.depth, after.goal) == ("unknown", 48, "then branch")
    assert after.reason == ("not reached within 12 cycles (cover fail); continuation: not "
                            "reached from the simulated state within 48 cycles")
    reached = searched.model_copy(update={"status": "reached", "step": 7,
                                          "reason": "reached by continuation 1 at step 7"})
    [hit] = _verdicts(closer, [reached])
    assert (hit.status, hit.depth, hit.reason) == (
        "reached", 7, "continuation: reached by continuation 1 at step 7")


@pytest.mark.slow
@pytest.mark.requires_verilator
@pytest.mark.requires_solver
def test_close_continues_the_best_test_past_what_reset_reaches(tmp_path):
    """Two 60-cycle random tests cannot count to 100; cover jobs of 12 cycles from reset
    reach none of the 12 deep points (branch 2, expression 2, toggle 8: ``armed`` and
    ``open`` both ways, ``cnt[5]`` and ``cnt[6]`` both ways), so without a continuation
    the regression stays at (6/8 + 6/8 + 1/1 + 48/56) / 4 = 83.93 %. The continuation of
    the kept random test reaches all twelve from its end state: 100 %, one test."""
    from llm4cov.cli.app import main

    def close(out: Path, *extra: str) -> dict:
        assert main(["close", str(DEEP / "deep_key.v"), "--top", "deep_key", "--out",
                     str(out), "--lengths", "60", "--cover-depth", "12", "--prove-depth",
                     "3", "--prove-budget", "20", "--budget", "900", "--no-html",
                     *extra]) == 0
        return json.loads((out / "run.json").read_text())

    without = close(tmp_path / "without", "--continue-steps", "0")
    assert round(without["merged"]["overall"], 2) == 83.93
    assert len(without["residual"]) == 12
    assert {r["cause"] for r in without["residual"]} == {"not_reached"}

    run = close(tmp_path / "with", "--continue-budget", "300")
    assert run["merged"]["overall"] == 100.0 and run["residual"] == []
    [test] = run["contributions"]
    origin = test["origin"]
    assert origin["policy"] == "formal-continuation" and origin["start"] == "t0000"
    assert "deep_key.v:17 then branch" in origin["goals"] and len(origin["goals"]) == 12
    tb = (tmp_path / "with" / "tests" / test["name"] / "tb.sv").read_text()
    assert "continuation 1.0 (from the simulated state)" in tb


def test_the_kept_runs_table_is_rebuilt_from_the_committed_files():
    """docs/results/close_continuation_table.py on experiments/close_continuation: the
    ac97 row's figures are the ones its two runs printed (the continuation step: "+20
    points ... (230 s)"; without it, the second analysis "+17 points" in 78 s and the
    third, which added nothing, in 56 s)."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "close_continuation_table", root / "docs" / "results" / "close_continuation_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.table(root / "experiments" / "close_continuation").splitlines()
    [ac97] = [r for r in rows if r.startswith("| ac97 ")]
    assert ac97 == ("| ac97 | 600.0 | 94.82 / 94.81 | 94.82 / 94.81 | 15 / 17 | +20 (230) "
                    "| +17 (134) |")
    text = (root / "docs" / "results" / "realip_close.md").read_text()
    assert "\n".join(rows) in text


def test_no_continuation_on_a_budget_too_small_for_a_job(tmp_path):
    """Half the budget left under the minimum job time: no simulation is spent on it
    (ac97 once spent 18 s of simulations on a 2 s job budget)."""
    from llm4cov.close.formal_steps import continuation_step
    from llm4cov.close.loop import Plan
    from llm4cov.sim.config import SimConfig

    closer, _items = _closer(tmp_path)
    closer.sim_config = SimConfig()
    closer.best_test = lambda: ("t0000", "module tb; endmodule\n")  # type: ignore[method-assign]
    closer.state.elapsed_s = closer.settings.budget_s - 20  # 10 s would be its share
    record, tb = continuation_step(closer, Plan("continue", 9))
    assert tb is None and record.note == "continuation: 10 s of the budget left for it"
