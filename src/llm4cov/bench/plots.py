"""Plots of a scored run (matplotlib, Agg backend): PNG bytes keyed by caption.

- coverage by round: Avg Cov and Cov Pass after each round, per arm;
- per-task coverage distribution: each task's mean sample coverage, per arm;
- pass@k curve: Cov Pass pass@k against k, per arm.
"""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axis import Axis
from matplotlib.ticker import MaxNLocator


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _integer_ticks(axis: Axis) -> None:
    """Ticks of ``axis`` at integers only."""
    locator = axis.get_major_locator()
    assert isinstance(locator, MaxNLocator)  # the default, an AutoLocator
    locator.set_params(integer=True)


def coverage_by_round(summary: dict[str, Any]) -> bytes:
    fig, (ax_cov, ax_pass) = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, arm in summary["arms"].items():
        points = [(r, h) for r, h in enumerate(arm["per_round"], 1) if h]
        if not points:
            continue
        rounds = [r for r, _ in points]
        style = "o-" if arm["rounds"] > 1 else "s"
        ax_cov.plot(rounds, [h["avg_cov"] for _, h in points], style, label=name)
        ax_pass.plot(rounds, [h["cov_pass"] for _, h in points], style, label=name)
    for ax, label in ((ax_cov, "Avg Cov (%)"), (ax_pass, "Cov Pass (%)")):
        ax.set_xlabel("round")
        ax.set_ylabel(label)
        ax.set_ylim(0, 100)
        _integer_ticks(ax.xaxis)
        ax.grid(alpha=0.3)
    ax_pass.legend(loc="lower right")
    fig.suptitle("Coverage by round (best state so far)")
    return _png(fig)


def task_distribution(summary: dict[str, Any]) -> bytes:
    names = [n for n, a in summary["arms"].items() if a["per_task"]]
    data = [[t["mean_cov"] for t in summary["arms"][n]["per_task"]] for n in names]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(names) + 2), 3.6))
    if data:
        ax.boxplot(data, showmeans=True)
        for i, values in enumerate(data, 1):
            ax.scatter([i] * len(values), values, s=10, alpha=0.5)
        ax.set_xticks(range(1, len(names) + 1), names)
    ax.set_ylabel("mean sample coverage per task (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3, axis="y")
    ax.set_title("Per-task coverage distribution")
    return _png(fig)


def pass_at_k_curve(summary: dict[str, Any]) -> bytes:
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for name, arm in summary["arms"].items():
        if not arm["headline"]:
            continue
        curve = sorted((int(k), v) for k, v in arm["headline"]["pass_at_k"].items())
        ax.plot([k for k, _ in curve], [v for _, v in curve], "o-", label=name)
    ax.set_xlabel("k")
    ax.set_ylabel("Cov Pass pass@k (%)")
    ax.set_ylim(0, 100)
    _integer_ticks(ax.xaxis)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(f"pass@k ({summary['estimator']} estimator)")
    return _png(fig)


def all_plots(summary: dict[str, Any]) -> dict[str, bytes]:
    """Every plot, keyed by a file-name-safe caption."""
    return {
        "coverage_by_round": coverage_by_round(summary),
        "task_coverage_distribution": task_distribution(summary),
        "pass_at_k": pass_at_k_curve(summary),
    }
