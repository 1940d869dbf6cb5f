"""Benchmark metrics against values computed by hand."""

from __future__ import annotations

from math import comb

import pytest

from llm4cov.bench.metrics import (
    Estimator,
    Outcome,
    avg_cov,
    best_of_n,
    best_so_far,
    headline,
    mean_pass_at_k,
    pass_at_k,
)

CVDP = Estimator.CVDP


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 3, 1 - 1 / 10),  # 1 - C(3,3)/C(5,3)
        (5, 2, 4, 1.0),  # n - c < k: every 4-subset holds a pass
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (5, 0, 3, 0.0),
        (5, 5, 1, 1.0),
        (1, 1, 1, 1.0),
    ],
)
def test_unbiased_pass_at_k_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_unbiased_product_form_equals_binomial_form_for_large_n():
    """The stable product form equals 1 - C(n-c,k)/C(n,k) (exact integers) at n = 200."""
    for c, k in ((1, 1), (17, 10), (150, 40), (199, 5)):
        exact = 1 - comb(200 - c, k) / comb(200, k)
        assert pass_at_k(200, c, k) == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(5, 2, 1, 0.4), (5, 2, 2, 1 - 0.6**2), (5, 2, 3, 1 - 0.6**3), (4, 4, 2, 1.0)],
)
def test_cvdp_estimator_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k, CVDP) == pytest.approx(expected, abs=1e-12)


def test_estimators_agree_at_k1_and_differ_above():
    assert pass_at_k(5, 2, 1) == pytest.approx(pass_at_k(5, 2, 1, CVDP), abs=1e-12)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.70)
    assert pass_at_k(5, 2, 2, CVDP) == pytest.approx(0.64)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_mean_pass_at_k_is_percent_averaged_over_tasks():
    outcomes = [[True, False, False, False, False], [True] * 5]
    assert mean_pass_at_k(outcomes, 1) == pytest.approx(60.0)  # (0.2 + 1.0) / 2
    assert mean_pass_at_k(outcomes, 2) == pytest.approx(70.0)  # (0.4 + 1.0) / 2
    with pytest.raises(ValueError):
        mean_pass_at_k([], 1)


def test_avg_cov_weighs_tasks_not_samples():
    # task means 25 and 60 -> 42.5 (a per-sample mean would give 32)
    assert avg_cov([[100.0, 0.0, 0.0, 0.0], [60.0]]) == pytest.approx(42.5)
    with pytest.raises(ValueError):
        avg_cov([[]])


def test_best_of_n():
    assert best_of_n([[10.0, 80.0], [60.0]]) == pytest.approx(70.0)


def test_best_so_far_keeps_the_best_state():
    fail = Outcome(False, False, 0.0)
    a = Outcome(True, False, 70.0)
    b = Outcome(True, False, 60.0)
    c = Outcome(True, True, 95.0)
    assert best_so_far([fail, a, b]) == [fail, a, a]
    assert best_so_far([a, c, b]) == [a, c, c]
    # a passing simulation beats a failed one whatever the failed one's coverage
    assert best_so_far([b, fail]) == [b, b]


def test_headline_by_hand():
    """Task 1: samples (pass, 100), (sim only, 50); task 2: (fail), (fail), (pass, 90)."""
    t1 = [Outcome(True, True, 100.0), Outcome(True, False, 50.0)]
    t2 = [Outcome(False, False, 0.0), Outcome(False, False, 0.0), Outcome(True, True, 90.0)]
    h = headline([t1, t2])
    assert h.tasks == 2 and h.samples == 5
    assert h.sim_pass == pytest.approx(100 * (1.0 + 1 / 3) / 2)
    assert h.cov_pass == pytest.approx(100 * (0.5 + 1 / 3) / 2)
    assert h.avg_cov == pytest.approx((75.0 + 30.0) / 2)
    assert h.best_of_n == pytest.approx(95.0)
    # k only up to the smallest n (2); task 2 pass@2 = 1 - C(2,2)/C(3,2) = 2/3
    assert set(h.pass_at_k) == {1, 2}
    assert h.pass_at_k[2] == pytest.approx(100 * (1.0 + 2 / 3) / 2)
    assert headline([t1, t2], CVDP).pass_at_k[2] == pytest.approx(
        100 * ((1 - 0.5**2) + (1 - (2 / 3) ** 2)) / 2)
