"""Intervals and paired tests between bench arms: can a difference be told from noise?

Per arm (one ``summary.json`` arm, its ``per_task`` entries):

- **rates** (Sim Pass, Cov Pass = pass@1): the Wilson score interval (Wilson 1927) of
  the passing samples over all samples (with one sample per task: tasks over tasks);
- **Avg Cov** (percent): a percentile bootstrap interval over tasks (10,000 resamples,
  fixed seed), the task's mean coverage over its samples as the unit.

Between two arms on the tasks both scored:

- **paired bootstrap** of the Avg Cov difference (B - A, percentage points): tasks
  resampled together for both arms;
- **sign test** (exact binomial, two-sided, p = 0.5) on the tasks whose Cov Pass (or
  Sim Pass) outcome differs, the task's majority over its samples as its outcome
  (ties count for neither).

Intervals are 95% (``confidence``). scipy does the arithmetic (``binomtest``,
``bootstrap``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 0


@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval, in percent."""

    value: float
    low: float
    high: float

    def render(self) -> str:
        return f"{self.value:.1f} [{self.low:.1f}, {self.high:.1f}]"


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """``successes`` of ``n`` as a percentage with its Wilson score interval.

    Raises:
        ValueError: ``n`` < 1 or ``successes`` outside ``[0, n]``.
    """
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1 (got {successes}, {n})")
    ci = stats.binomtest(successes, n).proportion_ci(confidence, method="wilson")
    return Interval(100 * successes / n, 100 * ci.low, 100 * ci.high)


def _bootstrap(data: tuple[np.ndarray, ...], statistic, paired: bool,
               confidence: float) -> tuple[float, float]:
    if len(data[0]) < 2 or all(np.ptp(d) == 0 for d in data):
        value = float(statistic(*data))
        return value, value  # no spread: the interval is the point
    res = stats.bootstrap(data, statistic, paired=paired, vectorized=False,
                          n_resamples=RESAMPLES, confidence_level=confidence,
                          method="percentile", random_state=np.random.default_rng(SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def mean_interval(values: list[float], confidence: float = CONFIDENCE) -> Interval:
    """The mean of ``values`` (percent) with a percentile bootstrap interval.

    Raises:
        ValueError: ``values`` is empty.
    """
    if not values:
        raise ValueError("no values")
    arr = np.asarray(values, dtype=float)
    low, high = _bootstrap((arr,), np.mean, False, confidence)
    return Interval(float(arr.mean()), low, high)


def paired_difference(a: list[float], b: list[float],
                      confidence: float = CONFIDENCE) -> Interval:
    """Mean of ``b - a`` over paired tasks (percentage points) with a paired bootstrap
    interval.

    Raises:
        ValueError: the lists differ in length or are empty.
    """
    if len(a) != len(b) or not a:
        raise ValueError("paired values need two lists of the same, nonzero length")
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    low, high = _bootstrap((x, y), lambda u, v: np.mean(v - u), True, confidence)
    return Interval(float(np.mean(y - x)), low, high)


@dataclass(frozen=True)
class SignTest:
    """Tasks where B passed and A did not (``b_wins``), the reverse (``a_wins``), and the
    exact two-sided binomial p-value of that split (1.0 when no task differs)."""

    b_wins: int
    a_wins: int
    p_value: float


def sign_test(a: list[bool], b: list[bool]) -> SignTest:
    """The sign test of paired task outcomes ``a`` and ``b``.

    Raises:
        ValueError: the lists differ in length.
    """
    if len(a) != len(b):
        raise ValueError("paired outcomes need two lists of the same length")
    b_wins = sum(y and not x for x, y in zip(a, b, strict=True))
    a_wins = sum(x and not y for x, y in zip(a, b, strict=True))
    p = stats.binomtest(b_wins, b_wins + a_wins).pvalue if b_wins + a_wins else 1.0
    return SignTest(b_wins, a_wins, float(p))


@dataclass(frozen=True)
class ArmStats:
    """One arm's headline with intervals (percent) and its per-task values."""

    tasks: int
    samples: int
    sim_pass: Interval
    cov_pass: Interval
    avg_cov: Interval
    per_task: dict[str, dict[str, Any]]


def arm_stats(arm: dict[str, Any], confidence: float = CONFIDENCE,
              after_round: int | None = None) -> ArmStats:
    """Intervals of one arm of a bench ``summary.json`` (``arms[name]``); tasks with only
    tool failures are left out, as the bench's own headline does. ``after_round`` (1 =
    the first round): each sample's best state after that round instead of its final
    one, from an agentic arm's per-task ``rounds``; round 1 of an agentic run is direct
    inference (the same prompt), so a paired test of round 1 against round N measures
    what the feedback rounds add on the same tasks.

    Raises:
        ValueError: the arm scored no task, or has no round ``after_round``.
    """
    per_task = arm["per_task"]
    if after_round is not None:
        if not 1 <= after_round <= arm["rounds"] or any("rounds" not in t for t in per_task):
            raise ValueError(f"no round {after_round} in this arm (it has {arm['rounds']}"
                             " round(s); per-round counts need a summary scored by this code)")
        per_task = [{**t, **t["rounds"][after_round - 1]} for t in per_task]
    rows = [t for t in per_task if t["n"] > t["tool_failure_count"]]
    if not rows:
        raise ValueError("the arm scored no task")
    n = sum(t["n"] - t["tool_failure_count"] for t in rows)
    return ArmStats(
        tasks=len(rows), samples=n,
        sim_pass=wilson(sum(t["sim_pass_count"] for t in rows), n, confidence),
        cov_pass=wilson(sum(t["cov_pass_count"] for t in rows), n, confidence),
        avg_cov=mean_interval([t["mean_cov"] for t in rows], confidence),
        per_task={t["task_id"]: t for t in rows})


def _majority(task: dict[str, Any], key: str) -> bool:
    return 2 * task[key] > task["n"] - task["tool_failure_count"]


@dataclass(frozen=True)
class Comparison:
    """B against A on the tasks both scored."""

    tasks: int
    avg_cov_diff: Interval
    cov_pass: SignTest
    sim_pass: SignTest


def compare(a: ArmStats, b: ArmStats, confidence: float = CONFIDENCE) -> Comparison:
    """Paired comparison of arm ``b`` against arm ``a`` (see the module docstring).

    Raises:
        ValueError: the arms share no task.
    """
    common = sorted(set(a.per_task) & set(b.per_task))
    if not common:
        raise ValueError("the arms share no task")
    ta, tb = [a.per_task[i] for i in common], [b.per_task[i] for i in common]
    return Comparison(
        tasks=len(common),
        avg_cov_diff=paired_difference([t["mean_cov"] for t in ta],
                                       [t["mean_cov"] for t in tb], confidence),
        cov_pass=sign_test([_majority(t, "cov_pass_count") for t in ta],
                           [_majority(t, "cov_pass_count") for t in tb]),
        sim_pass=sign_test([_majority(t, "sim_pass_count") for t in ta],
                           [_majority(t, "sim_pass_count") for t in tb]))


BASELINE_ARMS = ("random", "reference")


def pick_arm(summary: dict[str, Any], arm: str | None = None) -> str:
    """``arm`` if given, else the run's model arm (its only arm, or the first one that is
    not a baseline).

    Raises:
        ValueError: ``arm`` is not an arm of the run (the message lists them).
    """
    names = list(summary["arms"])
    if arm is not None:
        if arm not in names:
            raise ValueError(f"no arm {arm!r} in this run; arms: {', '.join(names)}")
        return arm
    return next((n for n in names if n not in BASELINE_ARMS), names[0])


def markdown_table(labels: list[str], arms: list[ArmStats]) -> str:
    """Every arm with its intervals, and every arm after the first compared with the
    first (paired bootstrap of Avg Cov, sign tests), as one Markdown table."""
    head = ("| arm | tasks | samples | Sim Pass % [95% CI] | Cov Pass % [95% CI] | "
            "Avg Cov % [95% CI] | vs first: Avg Cov diff [95% CI] | Cov Pass wins/losses (p) "
            "| Sim Pass wins/losses (p) |")
    lines = [head, "|" + "---|" * 9]
    for n, (label, arm) in enumerate(zip(labels, arms, strict=True)):
        cells = [label, str(arm.tasks), str(arm.samples), arm.sim_pass.render(),
                 arm.cov_pass.render(), arm.avg_cov.render()]
        if n == 0:
            cells += ["-", "-", "-"]
        else:
            c = compare(arms[0], arm)
            cells += [f"{c.avg_cov_diff.render()} ({c.tasks} tasks)",
                      f"{c.cov_pass.b_wins}/{c.cov_pass.a_wins} ({c.cov_pass.p_value:.3g})",
                      f"{c.sim_pass.b_wins}/{c.sim_pass.a_wins} ({c.sim_pass.p_value:.3g})"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
