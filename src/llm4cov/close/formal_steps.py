"""The loop's two formal steps (:mod:`llm4cov.close.loop`): an **analysis** of the merged
holes from reset, and a **continuation** of the kept test that covers most from the
state its simulation ends in.

Both return the step's record (its verdicts, the items analyzed, a note) and the
testbench to simulate, or None when they made none. Neither simulates the test it
returns: the loop does, and keeps it only when it adds points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm4cov.close.model import GoalVerdict, Origin, StepRecord
from llm4cov.sim.model.exclusions import ProvenUnreachable
from llm4cov.sim.model.observation import UncoveredItem

if TYPE_CHECKING:
    from llm4cov.close.loop import Closer, Plan
    from llm4cov.formal.closure import GoalResult

MAX_FORMAL_ITEMS = 400
"""Items one analysis (or continuation) is given; the others wait for the next one."""
JOB_S, MIN_JOB_S = 120.0, 15.0
"""CPU limit of one SBY job: ``formal``'s default, cut to half the (wall) budget left (at
least the minimum), so that an analysis ends near the budget; the prove jobs get a
quarter. Formal budgets are job seconds (:mod:`llm4cov.formal.tools`): on a machine
loaded past its cores a job may take up to three times as many wall seconds."""
CONTINUATION = "formal-continuation"
"""The ``Origin.policy`` of a continuation's test."""


def _left_s(closer: Closer) -> float:
    return max(0.0, closer.settings.budget_s - closer.state.elapsed_s)


def analysis_step(closer: Closer, plan: Plan) -> tuple[StepRecord, str | None]:
    """Analyze the merged holes not analyzed before (:func:`llm4cov.formal.analyze`:
    cover jobs from reset, k-induction); the witnesses become one test, phases after a
    short random testbench of ``plan.seed``."""
    from llm4cov.formal import FormalConfig, analyze
    from llm4cov.formal.closure import design_io
    from llm4cov.formal.stimulus import Phase, closing_testbench

    settings, task = closer.settings, closer.task
    items = [i for i in closer.holes() if i.key_text not in closer.state.analyzed]
    items = items[:MAX_FORMAL_ITEMS]
    record = StepRecord(step=closer.state.step, analyzed=[i.key_text for i in items])
    if not items:
        return record, None
    left = _left_s(closer)
    config = FormalConfig(cover_depth=settings.cover_depth, prove_depth=settings.prove_depth,
                          job_timeout_s=max(MIN_JOB_S, min(JOB_S, left / 2)),
                          prove_budget_s=min(settings.prove_budget_s, left / 4),
                          sandbox=closer.formal_sandbox)
    try:
        result = analyze(task, items, config)
    except ValueError as exc:
        record.note = f"formal: {exc}"
        record.formal_refused = str(exc)
        return record, None
    # items left without a goal (the analysis' goal budget ran out) stay for the next
    budget = f"goal budget of {config.max_goals}"
    placed = {g.item.key_text for g in result.goals if not g.reason.startswith(budget)}
    record.analyzed = [k for k in record.analyzed if k in placed] or record.analyzed
    record.verdicts = [GoalVerdict.of(g.item, g.what, g.metric, status=g.status,
                                      reason=g.reason, depth=g.step)
                       for g in result.goals if not g.reason.startswith(budget)]
    record.note = "; ".join((["formal result from the cache"] if result.cached else [])
                            + result.errors[:3])
    if not result.traces:
        return record, None
    design = design_io(task)
    phases = [Phase(f"trace {n}", steps) for n, steps in enumerate(result.traces)]
    try:
        tb, _how = closing_testbench(None, task, design.ports, design.clock, phases, plan.seed)
    except ValueError as exc:
        record.note = f"formal: {exc}"
        return record, None
    record.origin = Origin(source="formal", policy="formal", seed=plan.seed,
                           step=record.step, goals=_reached(result.goals))
    return record, tb


def continuation_step(closer: Closer, plan: Plan) -> tuple[StepRecord, str | None]:
    """Continue the kept test that covers most (:meth:`Closer.best_test`) from the
    state its simulation ends in (:func:`llm4cov.formal.continuation.continue_closure`,
    ``continue_steps`` steps, ``continue_budget_s`` of cover jobs, at most half the
    budget left; none under :data:`MIN_JOB_S`) for the merged holes not settled by a
    proof or a failed job (first :data:`MAX_FORMAL_ITEMS`). Its test is that testbench
    with the continuation's phases appended. Needs the evaluator's settings
    (``closer.sim_config``): the state a test ends in depends on them (its seed). Any
    error of the continuation ends the step without a test, named in its note (the
    step is optional; raising would stop the run and every rerun of it at the same
    step)."""
    from llm4cov.formal import FormalConfig
    from llm4cov.formal.continuation import continue_closure

    settings, task = closer.settings, closer.task
    record = StepRecord(step=closer.state.step)
    start = closer.best_test()
    items = _open_holes(closer)[:MAX_FORMAL_ITEMS]
    if closer.sim_config is None or start is None or not items:
        record.note = ("continuation: no evaluator settings" if closer.sim_config is None
                       else "continuation: no kept test" if start is None
                       else "continuation: no open holes")
        return record, None
    name, testbench = start
    budget = min(settings.continue_budget_s, _left_s(closer) / 2)
    if budget < MIN_JOB_S:  # its simulations would be spent for a job cut to nothing
        record.note = f"continuation: {budget:.0f} s of the budget left for it"
        return record, None
    config = FormalConfig(cover_depth=settings.cover_depth, prove_depth=settings.prove_depth,
                          continue_steps=settings.continue_steps, continue_budget_s=budget,
                          sandbox=closer.formal_sandbox)
    try:
        cont = continue_closure(task, testbench, items, closer.sim_config, config)
    except Exception as exc:  # an optional step: its failure ends the step, not the run
        # (a rerun plans the same step: an exception here would stop every rerun too)
        record.note = f"continuation failed: {type(exc).__name__}: {exc}"[:500]
        return record, None
    record.verdicts = _verdicts(closer, cont.goals)
    record.note = "; ".join(cont.notes[:2] + cont.errors[:2])
    if not cont.phases:
        return record, None
    record.origin = Origin(source="formal", policy=CONTINUATION, seed=plan.seed,
                           step=record.step, goals=_reached(cont.goals), start=name)
    return record, cont.testbench


def _reached(goals: list[GoalResult]) -> list[str]:
    return [f"{g.item.file}:{g.item.line} {g.what}" for g in goals if g.status == "reached"]


def _item_key(item: UncoveredItem) -> tuple:
    """``item``'s :attr:`~llm4cov.close.model.GoalVerdict.item_key` (by the verdicts'
    own rule, :meth:`~llm4cov.sim.model.exclusions.ProvenUnreachable.of`)."""
    return ProvenUnreachable.of(item, "", "").item_key


def _open_holes(closer: Closer) -> list[UncoveredItem]:
    """The merged holes less the items every verdict of which is a proof or a failed
    job (nothing to search from a simulated state)."""
    settled: dict[tuple, bool] = {}
    for v in closer.state.verdicts:
        settled[v.item_key] = settled.get(v.item_key, True) and v.status in (
            "unreachable", "error")
    return [i for i in closer.holes() if not settled.get(_item_key(i), False)]


def _verdicts(closer: Closer, goals: list[GoalResult]) -> list[GoalVerdict]:
    """The continuation's verdicts worth keeping: each goal it reached, and each it
    searched for without reaching (``step``: cycles explored), its reason after the
    goal's earlier verdict from reset (the residual shows the last one); none for a
    goal already proven unreachable (a proof stands)."""
    before = {(v.item_key, v.goal): v for v in closer.state.verdicts}
    proven = {(v.item_key, v.goal) for v in closer.state.verdicts if v.status == "unreachable"}
    out = []
    for g in goals:
        if g.status != "reached" and not g.step:
            continue
        item = g.item
        if (_item_key(item), g.what) in proven:
            continue
        prior = before.get((_item_key(item), g.what))
        reason = f"continuation: {g.reason}"
        if g.status != "reached" and prior is not None and prior.reason:
            reason = f"{prior.reason}; {reason}"
        out.append(GoalVerdict.of(item, g.what, g.metric, status=g.status, reason=reason,
                                  depth=g.step))
    return out
