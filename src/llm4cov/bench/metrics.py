"""Benchmark metrics as small pure functions (CVDP-ECov protocol, paper "Setup and numbers").

Units: :func:`pass_at_k` returns a probability (fraction 0-1) for one task; every
aggregate over tasks (``mean_*``, :func:`avg_cov`, :func:`best_of_n`) returns percent
(0-100). Coverage inputs are percent, already scored (0 for a failed simulation).
Aggregates are means over tasks of per-task values, so every task weighs the same
whatever its number of samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from math import prod


class Estimator(StrEnum):
    """pass@k estimators.

    - ``unbiased``: Chen et al. 2021 ("Evaluating Large Language Models Trained on
      Code", the Codex/HumanEval paper), ``1 - C(n-c, k) / C(n, k)``.
    - ``cvdp``: what CVDP's ``run_samples.py`` computes, ``1 - (1 - c/n)^k`` (sampling
      with replacement; equal to ``unbiased`` at k = 1, higher above).
    """

    UNBIASED = "unbiased"
    CVDP = "cvdp"

    @property
    def label(self) -> str:
        """How reports name the estimator."""
        if self is Estimator.UNBIASED:
            return "unbiased estimator 1 - C(n-c,k)/C(n,k) (Chen et al. 2021)"
        return "CVDP run_samples.py estimator 1 - (1 - c/n)^k"


def pass_at_k(n: int, c: int, k: int, estimator: Estimator = Estimator.UNBIASED) -> float:
    """Probability (0-1) that at least one of ``k`` samples passes, given ``c`` passing
    samples out of ``n``.

    ``unbiased`` uses the numerically stable product form of Chen et al. 2021:
    ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``, which equals ``1 - C(n-c, k)/C(n, k)``.

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if estimator is Estimator.CVDP:
        return 1.0 - (1.0 - c / n) ** k
    if n - c < k:
        return 1.0
    return 1.0 - prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("a metric needs at least one task")
    return sum(values) / len(values)


def mean_pass_at_k(
    outcomes: Sequence[Sequence[bool]], k: int, estimator: Estimator = Estimator.UNBIASED
) -> float:
    """pass@k in percent: the mean over tasks of :func:`pass_at_k` of each task's samples.

    At ``k = 1`` this is the rate of passing samples averaged over tasks (CVDP's pass@1,
    the headline Cov Pass / Sim Pass of the paper).

    Raises:
        ValueError: no tasks, or a task with fewer than ``k`` samples.
    """
    return 100.0 * _mean([pass_at_k(len(s), sum(s), k, estimator) for s in outcomes])


def avg_cov(coverage: Sequence[Sequence[float]]) -> float:
    """Avg Cov in percent: the mean over tasks of the mean sample coverage (paper: failed
    simulations count 0, which the scored coverage already is).

    Raises:
        ValueError: no tasks, or a task without samples.
    """
    return _mean([_mean(samples) for samples in coverage])


def best_of_n(coverage: Sequence[Sequence[float]]) -> float:
    """Best-of-n coverage in percent: the mean over tasks of the best sample's coverage.

    Raises:
        ValueError: no tasks, or a task without samples.
    """
    if any(not samples for samples in coverage):
        raise ValueError("best-of-n needs at least one sample per task")
    return _mean([max(samples) for samples in coverage])


@dataclass(frozen=True)
class Outcome:
    """A sample's scored state: Sim Pass, Cov Pass, coverage percent (0 when failed).

    States are ordered like ``llm4cov.agent.loop.state_key``: Sim Pass, then every
    target met, then coverage. ``tool_failure``: the state is a failure and the
    simulator itself failed on a round so far (``Status.TOOL_ERROR``), so the failure
    is the tool's, not the model's (not part of the ordering). ``rtl_error``: the state
    is a failure and a round so far found that the task's RTL does not compile on its
    own (``Observation.rtl_error``): no testbench could pass.
    """

    sim_pass: bool
    cov_pass: bool
    coverage: float
    tool_failure: bool = False
    rtl_error: bool = False

    def key(self) -> tuple[bool, bool, float]:
        return (self.sim_pass, self.cov_pass, self.coverage)


def best_so_far(rounds: Sequence[Outcome]) -> list[Outcome]:
    """The outcome after each round: the best state among rounds 1..r (the agent keeps
    its best state; the official LLM4Cov release scores ``best_cov_result`` the same way).
    A best state that is a failure after a round that hit a tool failure is marked
    ``tool_failure`` (after an RTL error: ``rtl_error``).
    """
    out: list[Outcome] = []
    tool = rtl = False
    for outcome in rounds:
        tool = tool or outcome.tool_failure
        rtl = rtl or outcome.rtl_error
        best = outcome if not out or outcome.key() > out[-1].key() else out[-1]
        out.append(replace(best, tool_failure=tool and not best.sim_pass,
                           rtl_error=rtl and not best.sim_pass))
    return out


@dataclass(frozen=True)
class Headline:
    """The CVDP-ECov metrics of one set of tasks, all percent (0-100).

    ``pass_at_k`` maps k to Cov Pass pass@k; ``sim_pass`` and ``cov_pass`` are pass@1.
    ``tool_failures``: samples whose outcome is a tool failure; they are left out of
    every number above (``tasks``, ``samples`` included) unless
    ``tool_failures_included``. ``rtl_errors``: samples whose task's RTL does not
    compile on its own; always left out (the task is broken, not the model).
    """

    tasks: int
    samples: int
    sim_pass: float
    cov_pass: float
    avg_cov: float
    best_of_n: float
    pass_at_k: dict[int, float]
    tool_failures: int = 0
    tool_failures_included: bool = False
    rtl_errors: int = 0


def scored_outcomes(
    outcomes: Sequence[Sequence[Outcome]], include_tool_failures: bool = False,
) -> list[list[Outcome]]:
    """Per task the samples that enter the metrics: never an ``rtl_error``, and no tool
    failure unless ``include_tool_failures``; tasks left with none dropped."""
    kept = [[o for o in s if not o.rtl_error and (include_tool_failures or not o.tool_failure)]
            for s in outcomes]
    return [s for s in kept if s]


def headline(
    outcomes: Sequence[Sequence[Outcome]],
    estimator: Estimator = Estimator.UNBIASED,
    include_tool_failures: bool = False,
) -> Headline:
    """Sim Pass, Cov Pass, Avg Cov, best-of-n and pass@k (k = 1 .. the smallest number
    of samples of a task) of per-task sample outcomes. Tool failures are counted apart
    and left out of the denominators unless ``include_tool_failures`` (then they count
    as failed samples); RTL errors are counted apart and always left out.

    Raises:
        ValueError: no tasks, or a task without samples (after leaving tool failures
            and RTL errors out).
    """
    failures = sum(o.tool_failure for s in outcomes for o in s)
    rtl_errors = sum(o.rtl_error for s in outcomes for o in s)
    outcomes = scored_outcomes(outcomes, include_tool_failures)
    if not outcomes or any(not s for s in outcomes):
        raise ValueError("metrics need at least one task and one sample per task")
    cov = [[o.coverage for o in s] for s in outcomes]
    passed = [[o.cov_pass for o in s] for s in outcomes]
    return Headline(
        tasks=len(outcomes),
        samples=sum(len(s) for s in outcomes),
        sim_pass=mean_pass_at_k([[o.sim_pass for o in s] for s in outcomes], 1, estimator),
        cov_pass=mean_pass_at_k(passed, 1, estimator),
        avg_cov=avg_cov(cov),
        best_of_n=best_of_n(cov),
        pass_at_k={k: mean_pass_at_k(passed, k, estimator)
                   for k in range(1, min(len(s) for s in outcomes) + 1)},
        tool_failures=failures,
        tool_failures_included=include_tool_failures,
        rtl_errors=rtl_errors,
    )
