"""Markdown and JSON views of a formal closure (``llm4cov formal``).

The headline coverage is always the evaluator's; "coverage with proven-unreachable
excluded" is a separate figure (each proven goal removed from its metric's total).
"""

from __future__ import annotations

from typing import Any

from llm4cov.formal.closure import Closure, FormalResult


def _cov(obs) -> str:
    return f"{obs.overall():.2f}%" if obs.sim_pass else f"0 ({obs.status.value})"


def summary(closure: Closure) -> dict[str, Any]:
    """The closure as plain data: counts, coverage figures and every goal's verdict."""
    r = closure.result
    return {
        "task": r.task_id, "top": r.top, "clock": r.clock, "resets": r.resets,
        "cover_depth": r.cover_depth, "prove_depth": r.prove_depth,
        "reached": r.count("reached"), "unreachable": r.count("unreachable"),
        "unknown": r.count("unknown"), "error": r.count("error"),
        "confirmed": sum(bool(g.confirmed) for g in r.goals), "continued": r.continued,
        "coverage_before": closure.before.overall(),
        "coverage_after": closure.after.overall(),
        "status_after": closure.after.status.value,
        "coverage_unreachable_excluded": round(closure.excluded_coverage(), 4),
        "testbench": closure.how, "jobs": r.jobs, "formal_s": r.wall_s, "cached": r.cached,
        "notes": r.notes, "job_errors": r.errors,
        "goals": [{"file": g.item.file, "line": g.item.line, "kind": g.item.kind,
                   "item": g.item.detail, "goal": g.what, "status": g.status,
                   "step": g.step, "confirmed": g.confirmed, "reason": g.reason}
                  for g in r.goals],
    }


def unreachable_lines(result: FormalResult) -> list[str]:
    """One line per proven-unreachable goal: ``file:line [kind] goal (item)``."""
    return [f"{g.item.file}:{g.item.line} [{g.item.kind}] {g.what} ({g.item.detail})"
            for g in result.goals if g.status == "unreachable"]


def markdown(closure: Closure) -> str:
    """A human-readable report of ``closure``."""
    r = closure.result
    resets = ", ".join(f"{n} (active {'low' if low else 'high'})" for n, low in r.resets.items())
    lines = [
        f"# Formal closure: {r.task_id} (`{r.top}`)", "",
        f"- clock: `{r.clock or 'none (combinational)'}`; reset: {resets or 'none'}",
        f"- cover depth {r.cover_depth} cycles, k-induction depth {r.prove_depth}; "
        f"{r.jobs} SBY jobs, {r.wall_s:.1f} s{' (cached)' if r.cached else ''}",
        f"- goals: {r.count('reached')} reached "
        f"({sum(bool(g.confirmed) for g in r.goals)} confirmed by the evaluator"
        + (f"; {r.continued} by continuation from a simulated state" if r.continued else "")
        + "), "
        f"{r.count('unreachable')} proven unreachable, {r.count('unknown')} unknown"
        + (f", {r.count('error')} not classified (job error)" if r.count("error") else ""),
        f"- coverage: {_cov(closure.before)} before, {_cov(closure.after)} with the "
        f"closing testbench ({closure.how})",
        f"- coverage with proven-unreachable excluded (separate figure): "
        f"{closure.excluded_coverage():.2f}%",
    ]
    lines += [f"- job error: {e}" for e in r.errors]
    lines += [f"- note: {n}" for n in r.notes]
    proven = unreachable_lines(r)
    if proven:
        lines += ["", "Proven unreachable:", *(f"- {p}" for p in proven)]
    lines += ["", "| item | goal | status | cycles | confirmed | reason |",
              "|---|---|---|---|---|---|"]
    for g in r.goals:
        conf = {True: "yes", False: "no", None: ""}[g.confirmed]
        lines.append(f"| {g.item.file}:{g.item.line} [{g.item.kind}] | {g.what} | "
                     f"{g.status} | {g.step} | {conf} | {g.reason} |".replace("\n", " "))
    return "\n".join(lines) + "\n"
