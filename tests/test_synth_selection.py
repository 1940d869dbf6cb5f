"""Worst-state-prioritized selection and the budget-matched ablation selectors on
hand-made coverage values (paper, "Learning offline"; Fig. 5)."""

from __future__ import annotations

import random

import pytest

from llm4cov.synth.config import SelectionConfig
from llm4cov.synth.selection import (
    select_best,
    select_median,
    select_states,
    select_uniform,
    select_worst,
)
from support.synth_data import make_obs

# index: 0 compile_error, 1 40%, 2 70%, 3 55%, 4 runtime_error
MIXED = [make_obs("compile_error", 30.0), make_obs("success", 40.0), make_obs("success", 70.0),
         make_obs("success", 55.0), make_obs("runtime_error", 80.0)]


def picks(selected):
    return [(s.index, s.reason) for s in selected]


def test_worst_failure_and_median_when_median_is_far_enough():
    """Successes sorted: 40 (1), 55 (3), 70 (2); the median 55 exceeds the worst 40 by
    15 points > 10, so it is added; compile_error ranks before runtime_error."""
    assert picks(select_worst(MIXED, SelectionConfig())) == [
        (1, "worst"), (0, "failure"), (3, "median")]


def test_median_within_margin_is_not_added():
    obs = [make_obs("success", 40.0), make_obs("success", 45.0), make_obs("success", 90.0)]
    assert picks(select_worst(obs, SelectionConfig())) == [(0, "worst")]


def test_median_gap_must_exceed_the_margin_strictly():
    """0.50 - 0.25 is exactly 0.25 in binary floating point: not "more than" 0.25."""
    at = [make_obs("success", 25.0), make_obs("success", 50.0)]
    above = [make_obs("success", 25.0), make_obs("success", 50.5)]
    cfg = SelectionConfig(median_margin=0.25)
    assert picks(select_worst(at, cfg)) == [(0, "worst")]
    assert picks(select_worst(above, cfg)) == [(0, "worst"), (1, "median")]


def test_all_failed_selects_only_the_priority_failure():
    obs = [make_obs("timeout"), make_obs("runtime_error"), make_obs("compile_error")]
    assert picks(select_worst(obs, SelectionConfig())) == [(2, "failure")]
    no_failure = SelectionConfig(include_failure=False)
    assert picks(select_worst(obs, no_failure)) == [(2, "failure")]


def test_failure_options_and_max_states():
    assert picks(select_worst(MIXED, SelectionConfig(include_failure=False))) == [
        (1, "worst"), (3, "median")]
    runtime_first = SelectionConfig(failure_priority=("runtime_error", "compile_error"))
    assert picks(select_worst(MIXED, runtime_first))[1] == (4, "failure")
    assert picks(select_worst(MIXED, SelectionConfig(max_states=2))) == [
        (1, "worst"), (0, "failure")]
    assert picks(select_worst(MIXED, SelectionConfig(max_states=1))) == [(1, "worst")]


def test_single_candidate():
    assert picks(select_worst([make_obs("success", 10.0)], SelectionConfig())) == [(0, "worst")]


def test_best_and_median_baselines_order_failures_lowest():
    """Coverage order (failures first): 0, 4, 1 (40), 3 (55), 2 (70)."""
    assert picks(select_best(MIXED, 3)) == [(2, "best"), (3, "best"), (1, "best")]
    assert picks(select_median(MIXED, 3)) == [(4, "median"), (1, "median"), (3, "median")]
    assert picks(select_median(MIXED, 1)) == [(1, "median")]
    assert picks(select_best(MIXED, 1)) == [(2, "best")]


def test_ablations_match_the_worst_rule_budget():
    """Worst selects 3 states on MIXED, so every baseline selects 3 (equal budgets)."""
    for strategy in ("best", "median", "uniform"):
        chosen = select_states(MIXED, SelectionConfig(strategy=strategy), seed=7)
        assert len(chosen) == 3
        assert len({s.index for s in chosen}) == 3
    two = [make_obs("success", 40.0), make_obs("success", 45.0), make_obs("success", 90.0)]
    assert len(select_states(two, SelectionConfig(strategy="best"))) == 1
    fixed = SelectionConfig(strategy="best", states_per_repo=2)
    assert picks(select_states(two, fixed)) == [(2, "best"), (1, "best")]


def test_uniform_is_seeded():
    first = select_uniform(MIXED, 2, seed=11)
    assert first == select_uniform(MIXED, 2, seed=11)
    assert [s.index for s in first] == random.Random(11).sample(range(5), 2)


def test_invalid_strategy_is_rejected():
    with pytest.raises(ValueError, match="strategy must be one of"):
        SelectionConfig(strategy="worst-first")
