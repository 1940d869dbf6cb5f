"""Which sampled intermediate states get transitions (paper, "Learning offline").

Worst-state-prioritized rule (the paper's practical form), on the K candidates that
``M_int`` sampled from ``s_0``:

1. optionally one failed state (recovery from compile/runtime errors);
2. if every candidate failed, only that failed state (even with ``include_failure``
   off: otherwise the repo would give no agentic data);
3. otherwise the lowest-coverage successful state, plus the median-coverage successful
   state when its ``Cov`` exceeds the worst one's by more than ``median_margin``;
4. at most ``max_states`` (paper: 3).

Ablation baselines (paper Fig. 5, "equal simulator and data budgets"): ``best``,
``median`` and ``uniform`` select as many states as the worst rule selects on the same
candidates (or ``states_per_repo``), so every strategy samples the same K candidates
and the same number of transitions.

All functions are pure; ``Cov`` is a fraction (0-1), ties go to the lower index.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llm4cov.sim.model.observation import Observation
from llm4cov.synth.config import SelectionConfig

WORST_RULE_STATES = 3
"""The most states the worst-state rule can select per repo: one failed state, the
worst successful one and the median one (paper, "Worst-state-prioritized synthesis":
"in practice up to three states per repo"; docs/synth.md, "Worst-state-prioritized
selection")."""


def max_selected_states(config: SelectionConfig) -> int:
    """The most states one repo can have selected under ``config``: the worst rule
    picks at most :data:`WORST_RULE_STATES` and at most ``max_states``; an ablation
    strategy picks as many as the worst rule would, or ``states_per_repo`` when set
    (docs/synth.md, "Ablation selectors and budget matching")."""
    worst = min(config.max_states, WORST_RULE_STATES)
    if config.strategy == "worst":
        return worst
    return config.states_per_repo or worst


@dataclass(frozen=True)
class Selected:
    """A selected candidate: its index among the K samples and why it was chosen
    (``failure``, ``worst``, ``median``, ``best``, ``uniform``)."""

    index: int
    reason: str


def _by_coverage(observations: list[Observation]) -> list[int]:
    """Indices ordered by (Sim Pass, Cov, index): failures first, then ascending Cov."""
    return sorted(range(len(observations)),
                  key=lambda i: (observations[i].sim_pass, observations[i].cov(), i))


def _failure_rank(obs: Observation, priority: tuple[str, ...]) -> int:
    status = obs.status.value
    return priority.index(status) if status in priority else len(priority)


def select_worst(observations: list[Observation], config: SelectionConfig) -> list[Selected]:
    """The paper's worst-state-prioritized rule (module docstring), in priority order
    worst, failure, median (truncated to ``max_states`` in that order)."""
    failed = [i for i, o in enumerate(observations) if not o.sim_pass]
    passed = [i for i in _by_coverage(observations) if observations[i].sim_pass]
    failure = min(failed, key=lambda i: (_failure_rank(observations[i],
                                                       config.failure_priority), i),
                  default=None)
    if not passed:
        return [] if failure is None else [Selected(failure, "failure")]
    worst = passed[0]
    chosen = [Selected(worst, "worst")]
    if config.include_failure and failure is not None:
        chosen.append(Selected(failure, "failure"))
    median = passed[len(passed) // 2]
    gap = observations[median].cov() - observations[worst].cov()
    if median != worst and gap > config.median_margin:
        chosen.append(Selected(median, "median"))
    return chosen[: config.max_states]


def select_best(observations: list[Observation], count: int) -> list[Selected]:
    """The ``count`` highest-coverage candidates (successful before failed)."""
    return [Selected(i, "best") for i in reversed(_by_coverage(observations)[-count:])]


def select_median(observations: list[Observation], count: int) -> list[Selected]:
    """``count`` candidates in the middle of the coverage order (failures lowest): the
    window ``order[(K - count) // 2 :][:count]``."""
    order = _by_coverage(observations)
    start = max(0, (len(order) - count) // 2)
    return [Selected(i, "median") for i in order[start : start + count]]


def select_uniform(observations: list[Observation], count: int, seed: int) -> list[Selected]:
    """``count`` candidates drawn uniformly without replacement (``random.Random(seed)``)."""
    picks = random.Random(seed).sample(range(len(observations)), min(count, len(observations)))
    return [Selected(i, "uniform") for i in picks]


def select_states(
    observations: list[Observation], config: SelectionConfig, seed: int = 0
) -> list[Selected]:
    """The states selected by ``config.strategy``; ablation strategies are budget-matched
    to the worst rule (module docstring). ``seed`` is used by ``uniform`` only."""
    worst = select_worst(observations, config)
    if config.strategy == "worst":
        return worst
    count = config.states_per_repo or len(worst)
    if config.strategy == "best":
        return select_best(observations, count)
    if config.strategy == "median":
        return select_median(observations, count)
    return select_uniform(observations, count, seed)
