"""Formal verdicts in a bench run: what a tool policy (``formal``) reported with its
answers (the ``annotations`` of its result rows), per arm and task.

Separate figures only: the headline metrics and the CVDP protocol never change. "Best
coverage with proven-unreachable excluded" takes the task's best passing row and removes
each proven-unreachable goal (one point) from its metric's total, as ``llm4cov formal``
does (:func:`llm4cov.sim.model.observation.overall_without`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from llm4cov.sim.model.observation import MetricCoverage, overall_without

VERDICTS = ("reached", "unreachable", "unknown")


class FormalNotes:
    """The formal annotations of one (arm, task), summed while streaming its rows."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.items: dict[tuple, dict[str, Any]] = {}
        self.annotated = False
        self.best: tuple[float, dict[str, list[int]]] | None = None

    def add(self, row: dict[str, Any]) -> None:
        """Take one result row (any row: unannotated ones still set the best state)."""
        if row["sim_pass"] and (self.best is None or row["coverage"] > self.best[0]):
            self.best = (row["coverage"], row.get("metrics") or {})
        notes = (row.get("annotations") or {}).get("formal")
        if not notes:
            return
        self.annotated = True
        self.counts.update({v: notes.get(v, 0) for v in VERDICTS})
        from llm4cov.sim.model.exclusions import ProvenUnreachable  # loads pyslang

        for item in notes.get("unreachable_items", ()):  # distinct items, by construct
            self.items.setdefault(ProvenUnreachable.from_annotation(item).item_key, item)

    def excluded_best(self) -> float:
        """Best passing coverage (percent) with the proven-unreachable points left out;
        0 when no row passed."""
        if self.best is None:
            return 0.0
        metrics = {m: MetricCoverage(covered=c, total=t) for m, (c, t) in self.best[1].items()}
        return overall_without(metrics, Counter(i["metric"] for i in self.items.values()))

    def as_dict(self) -> dict[str, Any]:
        """``reached``/``unreachable``/``unknown`` goal counts (summed over the task's
        analyses), ``unreachable_items`` (distinct) and ``best_cov_unreachable_excluded``
        (percent)."""
        return {**{v: self.counts[v] for v in VERDICTS},
                "unreachable_items": list(self.items.values()),
                "best_cov_unreachable_excluded": round(self.excluded_best(), 4)}


def unreachable_lines(per_task: list[dict[str, Any]]) -> list[str]:
    """One line per proven-unreachable item of an arm's ``per_task`` entries:
    ``task: file:line [kind] goal (item)``."""
    return [f"{t['task_id']}: {i['file']}:{i['line']} [{i['kind']}] {i['goal']} ({i['item']})"
            for t in per_task for i in t.get("formal", {}).get("unreachable_items", ())]
