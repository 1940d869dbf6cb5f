"""Scoring a run from its plan and result rows (no simulator needed): ``summary.json``.

A sample's outcome after round r is its best state among rounds 1..r (the agent's own
ordering: Sim Pass, Cov Pass, coverage). A sample counts once it is finished: it has all
its rounds, or it stopped early because a round reached 100% (``stop_at_full_coverage``,
the agent's rule); later rounds then carry its final state. Unfinished samples (a
killed run, a reached budget) are left out and the summary says how many there are.
All numbers are percent (0-100) unless named ``*_count``. Rows are read in one streaming
pass that keeps only each row's round, outcome and testbench hash (never its observation
or response), so scoring memory does not grow with the size of the rows.

Tool failures (rows with ``tool_error``: the simulator itself failed, ``Status.TOOL_ERROR``
or an infrastructure error; not one the testbench brings out where the RTL alone builds,
``Observation.tool_error_testbench``, which is the sample's) are not the model's
failures: a sample whose best state is a failure after such a round is counted apart
(``tool_failures``) and left out of every metric's denominator, unless
``include_tool_failures`` (then it is a failed sample).
RTL errors (the row's observation has ``rtl_error``: the task's RTL does not compile on
its own) are counted the same way (``rtl_errors``, the tasks in ``rtl_error_tasks``) and
always left out: the task is broken, not the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, replace
from itertools import pairwise
from typing import Any, cast

from llm4cov.agent.response import extract_testbench
from llm4cov.bench.answer_checks import AnswerChecks, CheckCounts, Deferred, testbench_checks
from llm4cov.bench.config import REFERENCE, Arm, ArmKind
from llm4cov.bench.formal_notes import VERDICTS, FormalNotes
from llm4cov.bench.metrics import (
    Estimator,
    Headline,
    Outcome,
    best_so_far,
    headline,
    scored_outcomes,
)
from llm4cov.bench.plan import Calibration, RunPlan, TaskInfo
from llm4cov.bench.rows import outcome, simulated
from llm4cov.tasks.hdl import USES_MACROS

SUMMARY_SCHEMA_VERSION = 1
NO_GROUP = "-"
SCORED_FIELDS = ("round", "sim_pass", "cov_pass", "coverage", "tool_error")
"""What scoring keeps of a row (see :func:`trajectory`), with the observation's
``rtl_error``."""
Groups = dict[tuple[str, str, int], list[dict[str, Any]]]


def trajectory(rows: list[dict[str, Any]], rounds: int, stop_at_full: bool) -> list[Outcome] | None:
    """Best-so-far outcome after each of ``rounds`` rounds, or None when the sample is
    not finished (see the module docstring)."""
    if not rows or [r["round"] for r in rows] != list(range(len(rows))) or len(rows) > rounds:
        return None
    best = best_so_far([_outcome(r) for r in rows])
    if len(best) < rounds and not (stop_at_full and best[-1].coverage >= 100.0):
        return None
    return best + [best[-1]] * (rounds - len(best))


def _outcome(row: dict[str, Any]) -> Outcome:
    """The scored state of a row, marked when the simulator failed (rows written before
    ``tool_error`` existed read as no tool failure; likewise ``rtl_error``)."""
    base = outcome(row)
    return replace(base, tool_failure=bool(row.get("tool_error")) and not base.sim_pass,
                   rtl_error=bool(row.get("rtl_error")) and not base.sim_pass)


def _round_counts(states: list[Outcome]) -> dict[str, Any]:
    """One task's counts over its samples' states (final, or best after one round)."""
    return {"n": len(states), "sim_pass_count": sum(o.sim_pass for o in states),
            "tool_failure_count": sum(o.tool_failure for o in states),
            "cov_pass_count": sum(o.cov_pass for o in states),
            "mean_cov": sum(o.coverage for o in states) / len(states)}


def _headline_dict(h: Headline) -> dict[str, Any]:
    data = asdict(h)
    data["pass_at_k"] = {str(k): v for k, v in h.pass_at_k.items()}
    return data


def _groups(infos: list[TaskInfo], attr: str) -> dict[str, list[str]]:
    """Task ids by the value of ``attr`` (``-`` when it is unset)."""
    out: dict[str, list[str]] = defaultdict(list)
    for info in infos:
        out[getattr(info, attr) or NO_GROUP].append(info.id)
    return dict(sorted(out.items()))


class _Spent:
    """What one arm's rows spent, summed while streaming."""

    def __init__(self) -> None:
        self.rows = self.sim_calls = self.sim_cached = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.gen_s = self.build_s = self.run_s = 0.0

    def add(self, row: dict[str, Any]) -> None:
        sim = simulated(row)
        self.rows += 1
        self.sim_calls += sim
        self.sim_cached += sim and bool(row["observation"].get("cached"))
        self.prompt_tokens += row["prompt_tokens"]
        self.completion_tokens += row["completion_tokens"]
        self.gen_s += row["gen_s"]
        self.build_s += row["build_s"]
        self.run_s += row["run_s"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows, "sim_calls": self.sim_calls, "sim_cached": self.sim_cached,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "gen_s": round(self.gen_s, 3), "sim_build_s": round(self.build_s, 3),
            "sim_run_s": round(self.run_s, 3),
        }


Notes = dict[tuple[str, str], FormalNotes]
Checks = dict[tuple[str, int], CheckCounts]


def repeats_by_round(groups: Groups, arm: str) -> dict[str, dict[str, int]]:
    """Per round from 2 (keys ``"2"``, ...): the arm's ``answers`` in that round and how
    many ``repeated`` the testbench of the round before unchanged (the same
    ``testbench_sha256``): a policy that does not act on the feedback."""
    out: dict[str, dict[str, int]] = {}
    for (name, _task, _sample), group in groups.items():
        if name != arm:
            continue
        for before, now in pairwise(group):
            counts = out.setdefault(str(now["round"] + 1), {"answers": 0, "repeated": 0})
            counts["answers"] += 1
            counts["repeated"] += bool(now["testbench_sha256"]) and \
                now["testbench_sha256"] == before["testbench_sha256"]
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _scan(rows: Iterable[dict[str, Any]], infos: dict[str, TaskInfo]
          ) -> tuple[Groups, dict[str, _Spent], Notes, Checks]:
    """One streaming pass: per sample its rows reduced to :data:`SCORED_FIELDS` (sorted
    by round), per arm what was spent, per (arm, round) the copy checks of its answers
    (rows with a response, on tasks whose plan names the DUT; an answer that uses the
    preprocessor is parsed after the pass, with every other such answer, in one bounded
    child: :class:`~llm4cov.bench.answer_checks.Deferred`), per (arm, task) the formal
    verdicts."""
    groups: Groups = defaultdict(list)
    spent: dict[str, _Spent] = defaultdict(_Spent)
    notes: Notes = defaultdict(FormalNotes)
    checks: Checks = defaultdict(CheckCounts)
    with Deferred() as deferred:
        for row in rows:
            info = infos.get(row["task_id"])
            if row.get("response") is not None and info is not None and info.dut_module:
                key = (row["arm"], row["round"])
                tb = extract_testbench(row["response"] or "", info.dut_module)
                if tb is None:
                    checks[key].add(AnswerChecks())
                elif USES_MACROS.search(tb):
                    deferred.add(key, tb, info.dut_module, info.dut_instance, info.dut_ports)
                else:
                    checks[key].add(testbench_checks(tb, info.dut_module, info.dut_instance,
                                                     info.dut_ports))
            groups[(row["arm"], row["task_id"], row["sample"])].append(
                {**{k: row.get(k) for k in SCORED_FIELDS},
                 "rtl_error": bool(row["observation"].get("rtl_error")),
                 "testbench_sha256": row.get("testbench_sha256")})
            spent[row["arm"]].add(row)
            notes[(row["arm"], row["task_id"])].add(row)
        for later, result in deferred.results():
            checks[cast(tuple[str, int], later)].add(result)
    for group in groups.values():
        group.sort(key=lambda r: r["round"])
    return dict(groups), spent, {k: n for k, n in notes.items() if n.annotated}, checks


def _formal_summary(per_task: list[dict[str, Any]]) -> dict[str, Any]:
    """Arm-level formal figures: goal counts summed over tasks, and the mean over scored
    tasks of the best coverage with proven-unreachable points excluded (a task without
    formal verdicts counts with its best coverage)."""
    excluded = [t["formal"]["best_cov_unreachable_excluded"] if "formal" in t else t["best_cov"]
                for t in per_task]
    return {**{v: sum(t.get("formal", {}).get(v, 0) for t in per_task) for v in VERDICTS},
            "tasks_with_unreachable": sum(bool(t.get("formal", {}).get("unreachable"))
                                          for t in per_task),
            "avg_best_cov_unreachable_excluded": sum(excluded) / len(excluded)
            if excluded else None}


def score_arm(
    plan: RunPlan, arm: Arm, groups: Groups, spent: dict[str, Any], estimator: Estimator,
    include_tool_failures: bool = False, notes: Notes | None = None,
) -> dict[str, Any]:
    """The summary of one arm (see :func:`score`); with formal ``notes`` for this arm,
    its tasks and the arm carry a ``formal`` entry (separate figures,
    :mod:`llm4cov.bench.formal_notes`)."""
    arm_notes = {task: n for (name, task), n in (notes or {}).items() if name == arm.name}
    infos = [t for t in plan.tasks if arm.kind is ArmKind.AGENT or t.has_reference]
    done: dict[str, list[list[Outcome]]] = {}
    for info in infos:
        trajs = [trajectory(groups.get((arm.name, info.id, s), []), arm.rounds,
                            plan.stop_at_full_coverage) for s in range(arm.samples)]
        finished = [t for t in trajs if t is not None]
        if finished:
            done[info.id] = finished
    scored = [t for t in infos if t.id in done]

    def metrics_of(ids: list[str], after: int = -1) -> dict[str, Any] | None:
        per_task = [[traj[after] for traj in done[i]] for i in ids if i in done]
        if not scored_outcomes(per_task, include_tool_failures):
            return None  # nothing but tool failures or RTL errors: no denominator
        return _headline_dict(headline(per_task, estimator, include_tool_failures))

    ids = [t.id for t in scored]
    per_task = []
    for info in scored:
        finals = [traj[-1] for traj in done[info.id]]
        per_task.append({
            "task_id": info.id, **_round_counts(finals),
            "rtl_error_count": sum(o.rtl_error for o in finals),
            "best_cov": max(o.coverage for o in finals),
            "target": info.target, "calibration": info.calibration.value,
        })
        if arm.rounds > 1:  # the same counts after each round (paired round comparisons)
            per_task[-1]["rounds"] = [_round_counts([traj[r] for traj in done[info.id]])
                                      for r in range(arm.rounds)]
        if info.id in arm_notes:
            per_task[-1]["formal"] = arm_notes[info.id].as_dict()
    formal = {"formal": _formal_summary(per_task)} if arm_notes else {}
    return {
        "kind": arm.kind.value, "samples": arm.samples, "rounds": arm.rounds,
        "tasks_planned": len(infos), "tasks_scored": len(scored),
        "samples_planned": len(infos) * arm.samples,
        "samples_finished": sum(len(v) for v in done.values()),
        "tool_failures": sum(t[-1].tool_failure for v in done.values() for t in v),
        "tool_failures_included": include_tool_failures,
        "rtl_errors": sum(t[-1].rtl_error for v in done.values() for t in v),
        "rtl_error_tasks": sorted(i for i, v in done.items() if any(t[-1].rtl_error for t in v)),
        "headline": metrics_of(ids),
        "per_round": [metrics_of(ids, r) for r in range(arm.rounds)],
        "by_difficulty": {g: metrics_of(i) for g, i in _groups(scored, "difficulty").items()},
        "by_source": {g: metrics_of(i) for g, i in _groups(scored, "source").items()},
        "per_task": per_task,
        "spent": spent,
        **formal,
    }


def reference_drift(plan: RunPlan, groups: Groups) -> list[dict[str, Any]]:
    """Tasks whose reference testbench scores differently in this run than in the
    calibration run that set the target (by more than 0.01 percentage points)."""
    out = []
    for info in plan.tasks:
        rows = groups.get((REFERENCE, info.id, 0))
        if not rows or info.calibration_overall is None:
            continue
        measured = rows[0]["coverage"]
        if abs(measured - info.calibration_overall) > 0.01:
            out.append({"task_id": info.id, "calibration": info.calibration_overall,
                        "measured": measured, "target": info.target,
                        "below_target": info.target is not None and measured < info.target})
    return out


def score(
    plan: RunPlan, rows: Iterable[dict[str, Any]], estimator: Estimator = Estimator.UNBIASED,
    include_tool_failures: bool = False,
) -> dict[str, Any]:
    """``summary.json``: per arm the headline metrics (Sim Pass, Cov Pass = pass@1, Avg Cov,
    best-of-n, pass@k), the per-round curve, breakdowns by difficulty and by source,
    per-task numbers and what was spent (and, for a tool policy that reports formal
    verdicts, a separate ``formal`` entry; for an arm whose rows hold answers, their
    copy checks, ``answer_checks``, :mod:`llm4cov.bench.answer_checks`, and for a
    multi-round arm ``answer_checks_by_round``, keyed by round from 1, and
    ``repeated_testbench_by_round``, :func:`repeats_by_round`); plus the
    simulator, its coverage metrics and which thresholds were not calibrated for it. Tool
    failures are counted per arm (``tool_failures``) and left out of the metrics unless
    ``include_tool_failures``; RTL errors (``rtl_errors``, ``rtl_error_tasks``) always are."""
    groups, spent, notes, checks = _scan(rows, {t.id: t for t in plan.tasks})
    arms = {arm.name: score_arm(plan, arm, groups, spent.get(arm.name, _Spent()).as_dict(),
                                estimator, include_tool_failures, notes) for arm in plan.arms}
    for name, arm in arms.items():
        rounds = sorted(k for a, k in checks if a == name)
        if rounds:
            arm["answer_checks"] = CheckCounts.total(checks[(name, k)] for k in rounds).as_dict()
        if len(rounds) > 1:
            arm["answer_checks_by_round"] = {str(k + 1): checks[(name, k)].as_dict()
                                             for k in rounds}
        if arm["rounds"] > 1:
            arm["repeated_testbench_by_round"] = repeats_by_round(groups, name)
    not_calibrated: dict[str, list[str]] = defaultdict(list)
    for info in plan.tasks:
        if info.calibration is not Calibration.THIS_SIMULATOR:
            not_calibrated[info.calibration.value].append(info.id)
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "command": plan.command,
        "tasks_file": plan.tasks_file,
        "tasks": len(plan.tasks),
        "mode": plan.identity.get("mode"),
        "simulator": plan.simulator,
        "coverage_options": plan.coverage_options,
        "overall_metrics": plan.overall_metrics,
        "estimator": estimator.value,
        "estimator_label": estimator.label,
        "thresholds": {
            "calibrated_count": len(plan.tasks) - sum(map(len, not_calibrated.values())),
            "calibrated_on": sorted({t.calibrated_on for t in plan.tasks
                                     if t.calibration is Calibration.THIS_SIMULATOR}),
            "not_calibrated": dict(not_calibrated),
            "reference_compared": sum(t.calibration_overall is not None and
                                      (REFERENCE, t.id, 0) in groups for t in plan.tasks),
            "reference_drift": reference_drift(plan, groups),
        },
        "complete": all(a["samples_finished"] == a["samples_planned"] for a in arms.values()),
        "arms": arms,
        "invocations": plan.invocations,
    }
