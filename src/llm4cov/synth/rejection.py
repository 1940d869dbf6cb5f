"""Coverage-guided rejection (paper, "Coverage-guided rejection" and Stage-0 curation).

A candidate transition from state ``s_t`` is kept only if its simulation passed,
``Cov(o_{t+1}) - Cov(o_t) >= tau_delta`` and (Stage 0) ``overall >= min_overall_percent``;
among the candidates that pass, only the one with the largest gain is kept (ties: the
lower index). ``Cov`` and ``tau_delta`` are fractions (0-1); ``min_overall_percent`` is
percent. Comparisons allow :data:`EPSILON` of float error, so a gain of exactly one
percentage point (e.g. 0.15 - 0.14 = 0.00999...) passes ``tau_delta = 0.01``.
"""

from __future__ import annotations

from llm4cov.sim.model.observation import Observation
from llm4cov.synth.config import RejectionConfig
from llm4cov.synth.records import Verdict

EPSILON = 1e-9


def coverage_gain(state_cov: float, next_obs: Observation) -> float:
    """``Cov(o_{t+1}) - Cov(o_t)`` as a fraction (negative when coverage dropped)."""
    return next_obs.cov() - state_cov


def _rule_verdict(state_cov: float, obs: Observation, config: RejectionConfig) -> Verdict:
    if not obs.sim_pass:
        return Verdict.SIM_FAILED
    if coverage_gain(state_cov, obs) < config.tau_delta - EPSILON:
        return Verdict.BELOW_TAU
    if obs.overall() < config.min_overall_percent - EPSILON * 100:
        return Verdict.BELOW_MIN_COVERAGE
    return Verdict.KEPT


def judge_transitions(
    state_cov: float, candidates: list[Observation], config: RejectionConfig
) -> list[Verdict]:
    """One verdict per candidate (same order); at most one is ``kept``."""
    verdicts = [_rule_verdict(state_cov, obs, config) for obs in candidates]
    passing = [i for i, v in enumerate(verdicts) if v is Verdict.KEPT]
    if passing:
        best = max(passing, key=lambda i: (candidates[i].cov(), -i))
        verdicts = [Verdict.NOT_BEST if (i in passing and i != best) else v
                    for i, v in enumerate(verdicts)]
    return verdicts
