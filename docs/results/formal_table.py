"""Per-task table of a `llm4cov bench --model formal --baselines random` run directory.

Usage: python docs/results/formal_table.py RUN_DIR [TIMING_DIR]

Coverage, Sim Pass, Cov Pass and the formal verdicts (goals reached / proven unreachable /
unknown, best coverage with proven-unreachable excluded) come from RUN_DIR/summary.json
(the bench's own scoring; the verdicts are the `formal` policy's row annotations); wall
seconds per design are the sum of the rows' simulation and generation seconds per arm
(TIMING_DIR/results.jsonl, default RUN_DIR: a rerun served from the caches has no
meaningful times), the formal analyses included in the formal arm's generation seconds.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

VERDICTS = ("reached", "unreachable", "unknown")


def main(run_dir: Path, timing_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    arms = {name: {t["task_id"]: t for t in arm["per_task"]}
            for name, arm in summary["arms"].items()}
    wall: dict[tuple[str, str], float] = defaultdict(float)
    for line in (timing_dir / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        wall[(row["arm"], row["task_id"])] += row.get("wall_s", 0.0) + row.get("gen_s", 0.0)
    print("| task | random cov | formal cov | formal best cov, unreachable excluded | "
          "Sim Pass r/f | Cov Pass r/f | reached | unreachable | unknown | "
          "wall s random | wall s formal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for task in sorted(arms["formal"]):
        r, f = arms["random"][task], arms["formal"][task]
        v = f.get("formal", {})
        excluded = v.get("best_cov_unreachable_excluded", f["best_cov"])
        print(f"| {task} | {r['mean_cov']:.2f} | {f['mean_cov']:.2f} | {excluded:.2f} | "
              f"{r['sim_pass_count']}/{f['sim_pass_count']} | "
              f"{r['cov_pass_count']}/{f['cov_pass_count']} | "
              + " | ".join(str(v.get(k, 0)) for k in VERDICTS)
              + f" | {wall[('random', task)]:.1f} | {wall[('formal', task)]:.1f} |")
    total = summary["arms"]["formal"].get("formal", {})
    print(f"\nGoals: {total.get('reached', 0)} reached, {total.get('unreachable', 0)} proven "
          f"unreachable, {total.get('unknown', 0)} unknown; mean best coverage with "
          f"proven-unreachable excluded {total.get('avg_best_cov_unreachable_excluded')}")
    for name, arm in summary["arms"].items():
        h = arm["headline"]
        seconds = sum(w for (a, _), w in wall.items() if a == name)
        print(f"{name}: Sim Pass {h['sim_pass']:.1f}, Cov Pass {h['cov_pass']:.1f}, "
              f"Avg Cov {h['avg_cov']:.2f}, wall s {seconds:.0f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]))
