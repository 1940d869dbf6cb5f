"""Per-task table of a `llm4cov bench --model formal --baselines random` run directory.

Usage: python docs/results/formal_table.py RUN_DIR SINCE_EPOCH [UNTIL_EPOCH]

Coverage, Sim Pass and Cov Pass come from RUN_DIR/summary.json (`per_task`, the bench's
own scoring); wall seconds per design are the sum of the rows' simulation and
generation seconds per arm (RUN_DIR/results.jsonl); the formal verdicts are the
analyses the `formal` policy cached (``~/.cache/llm4cov/formal/*.json``, or
``$LLM4COV_CACHE_DIR/formal``) between SINCE_EPOCH and UNTIL_EPOCH, summed per task.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path


def main(run_dir: Path, since: float, until: float) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    arms = {name: {t["task_id"]: t for t in arm["per_task"]}
            for name, arm in summary["arms"].items()}
    wall: dict[tuple[str, str], float] = defaultdict(float)
    best: dict[str, dict] = {}  # formal arm: the metrics of its best passing round
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        wall[(row["arm"], row["task_id"])] += row.get("wall_s", 0.0) + row.get("gen_s", 0.0)
        if row["arm"] == "formal" and row["sim_pass"] and row["coverage"] >= best.get(
                row["task_id"], {}).get("coverage", -1):
            best[row["task_id"]] = row
    base = os.environ.get("LLM4COV_CACHE_DIR") or Path.home() / ".cache" / "llm4cov"
    verdicts: dict[str, Counter] = defaultdict(Counter)
    gone: dict[str, Counter] = defaultdict(Counter)  # proven-unreachable points per metric
    formal_s: dict[str, float] = defaultdict(float)
    for f in Path(base, "formal").glob("*.json"):
        if since <= f.stat().st_mtime <= until:
            result = json.loads(f.read_text())
            verdicts[result["task_id"]].update(g["status"] for g in result["goals"])
            gone[result["task_id"]].update(g["metric"] for g in result["goals"]
                                           if g["status"] == "unreachable")
            formal_s[result["task_id"]] += result["wall_s"]
    print("| task | random cov | formal cov | formal cov, unreachable excluded | "
          "Sim Pass r/f | Cov Pass r/f | reached | unreachable | unknown | formal s | "
          "wall s random | wall s formal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for task in sorted(arms["formal"]):
        r, f = arms["random"][task], arms["formal"][task]
        v = verdicts.get(task, Counter())
        print(f"| {task} | {r['mean_cov']:.2f} | {f['mean_cov']:.2f} | "
              f"{_excluded(best.get(task), gone[task]):.2f} | "
              f"{r['sim_pass_count']}/{f['sim_pass_count']} | "
              f"{r['cov_pass_count']}/{f['cov_pass_count']} | {v['reached']} | "
              f"{v['unreachable']} | {v['unknown']} | {formal_s.get(task, 0):.1f} | "
              f"{wall[('random', task)]:.1f} | {wall[('formal', task)]:.1f} |")
    total = Counter()
    for task in arms["formal"]:
        total.update(verdicts.get(task, Counter()))
    seconds = sum(formal_s.get(task, 0.0) for task in arms["formal"])
    print(f"\nGoals: {total['reached']} reached, {total['unreachable']} unreachable, "
          f"{total['unknown']} unknown; formal seconds {seconds:.1f}")


def _excluded(row: dict | None, gone: Counter) -> float:
    """Overall percent of ``row`` with ``gone`` points removed from each metric's total
    (the mean over metrics with points, as ``overall``)."""
    if row is None:
        return 0.0
    pcts = []
    for metric, (covered, total) in row["metrics"].items():
        total = max(covered, total - gone.get(metric, 0))
        if total and metric in ("line", "branch", "expr", "toggle", "fsm"):
            pcts.append(100.0 * covered / total)
    return sum(pcts) / len(pcts) if pcts else 0.0


if __name__ == "__main__":
    main(Path(sys.argv[1]), float(sys.argv[2]),
         float(sys.argv[3]) if len(sys.argv) > 3 else float("inf"))
