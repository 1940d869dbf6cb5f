"""The table of docs/results/realip_close.md from `llm4cov close` run directories.

    python docs/results/realip_close_table.py RUNS_DIR [WALLS_FILE]

RUNS_DIR holds one run directory per core (named by the id's last part, e.g.
RUNS_DIR/prince) with its ``run.json`` (or ``run.json.gz``, as kept under
experiments/); WALLS_FILE has lines ``<core> rc=<rc> wall=<seconds> ...`` (the
driver's). The human testbench's coverage is the task's own
``meta.reference_coverage.overall`` (the same evaluator, ../shared/benchmarks).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

TASKS = Path(__file__).resolve().parents[2] / ".." / "shared" / "benchmarks" / "realip_dev.jsonl"


def main(runs: Path, walls_file: Path | None) -> str:
    walls = {}
    if walls_file and walls_file.exists():
        for line in walls_file.read_text().splitlines():
            parts = dict(p.split("=", 1) for p in line.split()[1:3] if "=" in p)
            if "wall" in parts:
                walls[line.split()[0]] = (float(parts["wall"]), parts.get("rc", ""))
    rows = ["| core | human TB % | merged % | closure % | >= human | tests kept (run) | "
            "ended | wall s | residual by cause |", "|---|---|---|---|---|---|---|---|---|"]
    merged_all, closure_all = [], []
    for line in TASKS.read_text().splitlines():
        task = json.loads(line)
        core = task["id"].split("/", 1)[1]
        human = task["meta"].get("reference_coverage", {}).get("overall")
        run_json = runs / core / "run.json"
        if not run_json.exists() and run_json.with_suffix(".json.gz").exists():
            run_json = run_json.with_suffix(".json.gz")  # as kept under experiments/
        if not run_json.exists():
            rows.append(f"| {core} | {human:.2f} | not run | | | | | | |")
            continue
        run = json.loads(gzip.decompress(run_json.read_bytes()) if run_json.suffix == ".gz"
                         else run_json.read_text())
        merged, closure = run["merged"]["overall"] or 0.0, run["closure"]
        merged_all.append(merged)
        closure_all.append(closure)
        wall = walls.get(core, (run["wall_s"], ""))[0]
        causes = ", ".join(f"{k} {v}" for k, v in run["residual_counts"].items() if v) or "-"
        ok = "yes" if human is not None and merged >= human else "no"
        rows.append(f"| {core} | {human:.2f} | {merged:.2f} | {closure:.2f} | {ok} | "
                    f"{len(run['tests'])} ({run['steps']} steps) | {run['ended']} | "
                    f"{wall:.0f} | {causes} |")
    if closure_all:
        rows.append(f"| **mean of {len(closure_all)} run** | | "
                    f"**{sum(merged_all) / len(merged_all):.2f}** | "
                    f"**{sum(closure_all) / len(closure_all):.2f}** | | | | | |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None), end="")
