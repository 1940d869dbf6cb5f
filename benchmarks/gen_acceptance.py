"""Acceptance run of `llm4cov gen` (issue 2): every task of one or more task files.

Runs the real CLI (`llm4cov gen --tasks FILE --id ID ...`) once per task as a
subprocess, then writes a Markdown table (task, status, overall coverage, target,
met?) from each run's `run.json`. Finished tasks (with a `run.json`) are skipped, so
an interrupted run resumes.

    python benchmarks/gen_acceptance.py --tasks ../shared/benchmarks/cvdp_example.jsonl \
        --tasks ../shared/benchmarks/rtllm.jsonl --out runs/gen_acceptance \
        --table docs/results/gen_random.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from llm4cov.tasks.loaders import load_tasks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", action="append", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=Path("runs/gen_acceptance"))
    ap.add_argument("--table", type=Path, default=Path("docs/results/gen_random.md"))
    ap.add_argument("--model", default="random")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)

    rows = []
    start = time.monotonic()
    for tasks_file in args.tasks:
        for task in load_tasks(tasks_file):
            out = args.out / task.id.replace("/", "__")
            cmd = ["llm4cov", "gen", "--tasks", str(tasks_file), "--id", task.id,
                   "--model", args.model, "--rounds", str(args.rounds), "--out", str(out)]
            if not (out / "run.json").exists():
                proc = subprocess.run(cmd, capture_output=True, text=True)
                print(f"{task.id}: exit {proc.returncode}", file=sys.stderr, flush=True)
                if not (out / "run.json").exists():
                    out.mkdir(parents=True, exist_ok=True)
                    (out / "stderr.txt").write_text(proc.stdout + proc.stderr)
                    rows.append((task.id, f"crash (exit {proc.returncode})", 0.0,
                                 task.target_for(), False))
                    continue
            run = json.loads((out / "run.json").read_text())
            best = run["rounds"][run["best_round"]]
            rows.append((task.id, best["status"], best["scored_overall"], task.target_for(),
                         best["targets_met"]))
    wall = time.monotonic() - start

    simulated = [r for r in rows if r[1] == "success"]
    covs = [r[2] for r in rows]
    lines = [
        f"# `llm4cov gen` acceptance run ({args.model} policy, {args.rounds} rounds)",
        "",
        "Command (from the repository root):",
        "",
        "```",
        "python benchmarks/gen_acceptance.py " + " ".join(
            f"--tasks {shlex.quote(str(t))}" for t in args.tasks
        ) + f" --model {args.model} --rounds {args.rounds} --out {args.out} --table {args.table}",
        "```",
        "",
        f"Tasks: {len(rows)}; best testbench simulates (Sim Pass): {len(simulated)}; "
        f"target met: {sum(r[4] for r in rows)}; median overall coverage: "
        f"{statistics.median(covs):.2f}%; mean: {statistics.mean(covs):.2f}%; "
        f"crashes: {sum(r[1].startswith('crash') for r in rows)}. Wall time {wall / 60:.1f} min "
        "(runs already finished are reused).",
        "",
        "Coverage is Verilator line/branch/expression/toggle, overall = mean of the metric "
        "percentages (0 when the simulation failed).",
        "",
        "| task | status | overall % | target % | met |",
        "|---|---|---|---|---|",
    ]
    for tid, status, cov, target, met in rows:
        tgt = "-" if target is None else f"{target:g}"
        lines.append(f"| {tid} | {status} | {cov:.2f} | {tgt} | {'yes' if met else 'no'} |")
    args.table.parent.mkdir(parents=True, exist_ok=True)
    args.table.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:12]))
    return 0 if not any(r[1].startswith("crash") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
