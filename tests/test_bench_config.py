"""Bench configuration, arms, budgets and the run plan (no simulator)."""

from __future__ import annotations

import json

import pytest

from conftest import fixture_task, shared_path
from llm4cov.bench.config import ArmKind, BenchConfig, Mode
from llm4cov.bench.plan import (
    Calibration,
    RunDirError,
    load_plan,
    make_plan,
    open_plan,
    task_info,
)
from llm4cov.bench.rows import charge_prior
from llm4cov.tasks.cvdp import load_any_tasks
from llm4cov.util.budget import Budget, BudgetExhausted

SIM = "verilator rev vUNKNOWN-built20260516-4e853d8"
OPTIONS = ["--coverage-line", "--coverage-expr", "--coverage-toggle", "--coverage-user"]


def test_arms_modes_and_seeds():
    config = BenchConfig(tasks="t.jsonl", model="qwen", samples=3)
    assert [(a.name, a.kind, a.samples, a.rounds) for a in config.arms()] == [
        ("qwen", ArmKind.AGENT, 3, 3), ("random", ArmKind.AGENT, 3, 3),
        ("reference", ArmKind.REFERENCE, 1, 1)]
    direct = BenchConfig(tasks="t.jsonl", mode="direct", baselines=("reference",))
    assert direct.mode is Mode.DIRECT and direct.agent_rounds == 1
    assert [a.name for a in direct.arms()] == ["random", "reference"]
    agent = config.agent_config(2)
    assert (agent.rounds, agent.seed, agent.params.temperature, agent.params.top_p) == (
        3, 2000, 0.7, 0.8)


@pytest.mark.parametrize("bad", [dict(samples=0), dict(rounds=0), dict(baselines=("best",)),
                                 dict(model="reference"), dict(start_from="worst"),
                                 dict(max_concurrency=0)])
def test_invalid_settings(bad):
    with pytest.raises(ValueError):
        BenchConfig(tasks="t.jsonl", **bad)


def test_command_and_identity():
    config = BenchConfig(tasks="../shared/benchmarks/rtllm.jsonl", ids=("a", "b"),
                         baselines=("reference",), sim={"fsm": True, "workers": 2},
                         max_sim_calls=9)
    assert config.command() == (
        "llm4cov bench --tasks ../shared/benchmarks/rtllm.jsonl --model random "
        "--mode agentic --samples 5 --baselines reference --id a --id b --fsm "
        "--workers 2 --max-sim-calls 9")
    identity = config.identity()
    assert identity["mode"] == "agentic" and identity["ids"] == ["a", "b"]
    assert not {"tasks", "base_url", "workers", "max_sim_calls"} & set(identity)
    assert BenchConfig(tasks="x").command() == (
        "llm4cov bench --tasks x --model random --mode agentic --samples 5")


def test_budget_limits_and_prior_spending():
    budget = Budget(max_samples=2, max_sim_calls=3, max_tokens=100)
    charge_prior(budget, [
        {"arm": "m", "task_id": "t", "sample": 0, "testbench_sha256": "x",
         "prompt_tokens": 60, "completion_tokens": 30},
        {"arm": "m", "task_id": "t", "sample": 0, "testbench_sha256": None,
         "prompt_tokens": 5, "completion_tokens": 0},
    ])
    assert (budget.samples, budget.sim_calls, budget.tokens) == (1, 1, 95)
    budget.start_sample()
    with pytest.raises(BudgetExhausted) as exc:
        budget.start_sample()
    assert exc.value.what == "samples" and budget.exhausted == "samples"
    budget.start_sim()
    budget.start_sim()
    with pytest.raises(BudgetExhausted):
        budget.start_sim()
    budget.check_tokens()
    budget.add_tokens(5)
    with pytest.raises(BudgetExhausted):
        budget.check_tokens()
    assert budget.exhausted == "samples"  # the first limit reached is the one reported
    assert budget.as_dict()["spent"] == {"samples": 2, "sim_calls": 3, "tokens": 100}


def test_threshold_calibration_of_the_shared_tasks():
    rtllm = load_any_tasks(shared_path("benchmarks", "rtllm.jsonl"))
    infos = [task_info(t, SIM) for t in rtllm]
    assert {i.calibration for i in infos} == {Calibration.THIS_SIMULATOR}
    accu = next(i for i in infos if i.id == "rtllm/accu")
    assert (accu.target, accu.calibration_overall, accu.has_reference) == (76, 76.0811, True)
    assert task_info(rtllm[0], "verilator 5.020").calibration is Calibration.OTHER_VERSION
    (cvdp,) = load_any_tasks(shared_path("benchmarks", "cvdp_example.jsonl"))
    info = task_info(cvdp, SIM)
    assert (info.calibration, info.difficulty, info.target) == (
        Calibration.OTHER_SIMULATOR, "easy", 90)
    assert task_info(fixture_task("mux2"), SIM).calibration is Calibration.NO_TARGET


def test_run_dir_refuses_other_settings(tmp_path):
    tasks = [fixture_task("mux2")]
    plan = make_plan(BenchConfig(tasks="t.jsonl"), tasks, SIM, OPTIONS)
    assert open_plan(tmp_path, plan) == plan
    assert load_plan(tmp_path) == plan
    # a resume may change workers, budgets and the tasks path
    resumed = make_plan(BenchConfig(tasks="other/t.jsonl", sim={"workers": 8}, max_samples=3),
                        tasks, SIM, OPTIONS)
    assert open_plan(tmp_path, resumed).command == plan.command
    with pytest.raises(RunDirError, match="samples"):
        open_plan(tmp_path, make_plan(BenchConfig(tasks="t.jsonl", samples=2), tasks, SIM,
                                      OPTIONS))
    with pytest.raises(RunDirError, match="simulator"):
        open_plan(tmp_path, make_plan(BenchConfig(tasks="t.jsonl"), tasks, "verilator 5.020",
                                      OPTIONS))
    (tmp_path / "run.json").write_text(json.dumps({"command": 1}))
    with pytest.raises(RunDirError, match="not a valid run plan"):
        load_plan(tmp_path)
