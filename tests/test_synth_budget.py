"""Budgets and seeds of a synthesis run (pure parts of llm4cov.synth.engine)."""

from __future__ import annotations

from llm4cov.policies import get_policy
from llm4cov.synth.config import resolve, stage_preset
from llm4cov.synth.engine import SynthRun, derive_seed
from llm4cov.synth.records import Role
from llm4cov.util.budget import Budget


def test_sim_call_budget_is_never_exceeded():
    budget = Budget(max_sim_calls=7, max_tokens=None)
    assert budget.try_reserve(3) and budget.try_reserve(3)
    assert not budget.try_reserve(2)  # 3 + 3 + 2 > 7
    budget.charge(sim_calls=2, tokens=0)
    budget.release(3)  # the first repo used 2 of its 3
    assert budget.try_reserve(2)  # 2 spent + 3 reserved + 2 = 7
    assert not budget.try_reserve(1)


def test_token_budget_stops_new_repos_once_used_up():
    budget = Budget(max_sim_calls=None, max_tokens=100)
    budget.charge(sim_calls=1, tokens=99)
    assert budget.try_reserve(5)
    budget.charge(sim_calls=1, tokens=1)
    assert not budget.try_reserve(0)


def test_worst_case_calls_per_repo(tmp_path):
    policies = {Role.INTERMEDIATE: get_policy("random"), Role.TRANSITION: get_policy("random")}
    stage0 = SynthRun(tmp_path / "a", stage_preset(0), policies, simulate=None)
    assert stage0.worst_case_calls() == 1 + 1 + 1 * 1  # probe + K=1 + min(3, K) x M=1
    stage1 = SynthRun(tmp_path / "b", stage_preset(1), policies, simulate=None)
    assert stage1.worst_case_calls() == 1 + 5 + 3 * 3
    best2 = resolve(stage_preset(1), None, ["selection.strategy=best",
                                            "selection.states_per_repo=2",
                                            "screen_compile=false"])
    assert SynthRun(tmp_path / "c", best2, policies, simulate=None).worst_case_calls() == 5 + 6


def test_derived_seeds_are_stable_and_distinct():
    a = derive_seed(0, "rtllm/accu", "int", "s0", 0)
    assert a == derive_seed(0, "rtllm/accu", "int", "s0", 0)
    assert 0 <= a < 2**31
    others = {derive_seed(0, "rtllm/accu", "int", "s0", k) for k in range(1, 50)}
    assert a not in others and len(others) == 49
