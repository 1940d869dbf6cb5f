"""Coverage-guided rejection on hand-made observations (paper, "Coverage-guided
rejection"; Stage-0 curation)."""

from __future__ import annotations

import pytest

from llm4cov.synth.config import RejectionConfig
from llm4cov.synth.records import Verdict
from llm4cov.synth.rejection import coverage_gain, judge_transitions
from support.synth_data import make_obs

K, NB, LOW, MIN, FAIL = (Verdict.KEPT, Verdict.NOT_BEST, Verdict.BELOW_TAU,
                         Verdict.BELOW_MIN_COVERAGE, Verdict.SIM_FAILED)

# from a state at 40%: +0.5 pp, +1 pp, +20 pp, failed, +15 pp, -10 pp
CANDIDATES = [make_obs("success", 40.5), make_obs("success", 41.0), make_obs("success", 60.0),
              make_obs("compile_error", 90.0), make_obs("success", 55.0),
              make_obs("success", 30.0)]


def test_keeps_only_the_largest_gain_at_or_above_tau():
    verdicts = judge_transitions(0.40, CANDIDATES, RejectionConfig())
    assert verdicts == [LOW, NB, K, FAIL, NB, LOW]


def test_stage0_absolute_coverage_rule():
    """41% passes tau but not the 50% floor; 55% and 60% pass both."""
    verdicts = judge_transitions(0.40, CANDIDATES, RejectionConfig(min_overall_percent=50))
    assert verdicts == [LOW, MIN, K, FAIL, NB, LOW]


def test_one_percentage_point_exactly_passes_despite_float_error():
    assert 0.15 - 0.14 < 0.01  # the float error the rule must absorb
    assert judge_transitions(0.14, [make_obs("success", 15.0)], RejectionConfig()) == [K]
    assert judge_transitions(0.14, [make_obs("success", 14.9)], RejectionConfig()) == [LOW]


def test_ties_keep_the_lower_index_and_no_pass_keeps_nothing():
    tied = [make_obs("success", 60.0), make_obs("success", 60.0)]
    assert judge_transitions(0.0, tied, RejectionConfig()) == [K, NB]
    none = [make_obs("success", 40.0), make_obs("timeout", 90.0)]
    assert judge_transitions(0.40, none, RejectionConfig()) == [LOW, FAIL]


def test_gain_is_a_fraction_and_failures_score_zero():
    assert coverage_gain(0.40, make_obs("success", 60.0)) == pytest.approx(0.20)
    assert coverage_gain(0.40, make_obs("runtime_error", 90.0)) == pytest.approx(-0.40)
