"""Simulator calls per minute with 1 and 2 workers, on the local pool and on Ray.

Workload: random-policy testbenches (``llm4cov.policies.random_stimulus``) for the
bundled example designs and the first ``--rtllm`` RTLLM tasks, ``--calls-per-design``
per design. Designs whose random testbench does not depend on the seed (exhaustive
stimulus) are left out, so every call has a testbench of its own: each configuration
gets seeds no other configuration uses. The result cache is off (every call really
simulates); ccache stays on, and one warm-up call per design (its own seed) fills it
and the build-artifact store with the design's and the runtime's objects first, as on
any machine after its first calls. ``SimConfig.build_jobs = 1`` in every configuration,
so one worker is one CPU. Each configuration's executor is started, its workers warmed
with one call each, and then every call of the configuration is submitted at once;
calls per minute = calls / wall seconds from the first submission to the last result
x 60. ``--repeats`` runs the four configurations that many times in turn, to spread the
noise of a shared machine over all of them; the table sums calls and seconds over the
repeats, and a second table shows each repeat.

    python benchmarks/scale.py --rtllm 6 --calls-per-design 3 --repeats 2 \
        --out docs/results/scale.md
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections import defaultdict
from itertools import count
from pathlib import Path

from llm4cov.exec import get_executor
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.sim.model.observation import Status
from llm4cov.tasks.loaders import load_tasks, task_from_dir
from llm4cov.tasks.model import Task

REPO = Path(__file__).resolve().parents[1]
RTLLM = REPO.parent / "shared" / "benchmarks" / "rtllm.jsonl"
CONFIGS = (("local", 1), ("local", 2), ("ray", 1), ("ray", 2))
SIM = SimConfig(result_cache=False, build_jobs=1)


def designs(rtllm: int) -> list[Task]:
    """The example designs and the first ``rtllm`` RTLLM tasks whose random testbench
    varies with the seed."""
    tasks = [task_from_dir(p) for p in sorted((REPO / "examples").iterdir()) if p.is_dir()]
    if rtllm and RTLLM.exists():
        tasks += load_tasks(RTLLM)[:rtllm]
    varied = []
    for task in tasks:
        try:
            if random_testbench(task, seed=1) != random_testbench(task, seed=2):
                varied.append(task)
        except ValueError:  # ports the random policy cannot drive
            continue
    return varied


def workload(tasks: list[Task], per_design: int, seeds: count) -> list[tuple[Task, str]]:
    return [(t, random_testbench(t, seed=next(seeds))) for _ in range(per_design)
            for t in tasks]


async def timed(executor, jobs: list[tuple[Task, str]]) -> tuple[float, list[Status]]:
    """Wall seconds to simulate every job at once, and the statuses."""
    start = time.monotonic()
    observations = await asyncio.gather(*(executor.simulate(t, tb) for t, tb in jobs))
    return time.monotonic() - start, [o.status for o in observations]


def measure(kind: str, workers: int, jobs: list[tuple[Task, str]],
            warm: list[tuple[Task, str]]) -> tuple[float, list[Status]]:
    with get_executor(kind, workers=workers, config=SIM) as executor:
        asyncio.run(timed(executor, warm))
        return asyncio.run(timed(executor, jobs))


def ratios(rate: dict[tuple[str, int], float]) -> list[str]:
    """Speed-up 2w/1w per executor, then Ray's overhead (local / Ray) at 1 and 2 workers."""
    return [f"{rate[(k, 2)] / rate[(k, 1)]:.2f}" for k in ("local", "ray")] + [
        f"{rate[('local', w)] / rate[('ray', w)]:.2f}" for w in (1, 2)]


def tables(runs: list[dict[tuple[str, int], tuple[int, float]]]) -> list[str]:
    """The totals over all repeats, then one row per repeat."""
    totals = {c: (sum(r[c][0] for r in runs), sum(r[c][1] for r in runs)) for c in CONFIGS}
    rate = {c: calls / wall * 60 for c, (calls, wall) in totals.items()}
    speedup = dict(zip(("local", "ray"), ratios(rate)[:2], strict=True))
    overhead = dict(zip((1, 2), ratios(rate)[2:], strict=True))
    lines = ["| executor | workers | calls | wall s | calls/min | speed-up 2w/1w | "
             "Ray overhead (local/Ray) |", "|---|---|---|---|---|---|---|"]
    for kind, workers in CONFIGS:
        calls, wall = totals[(kind, workers)]
        lines.append(f"| {kind} | {workers} | {calls} | {wall:.1f} | "
                     f"{rate[(kind, workers)]:.1f} | {speedup[kind] if workers == 2 else ''} | "
                     f"{overhead[workers] if kind == 'ray' else ''} |")
    lines += ["", "Per repeat (calls/min):", "",
              "| repeat | local 1 | local 2 | ray 1 | ray 2 | speed-up local | speed-up ray "
              "| Ray overhead 1w | Ray overhead 2w |", "|---|---|---|---|---|---|---|---|---|"]
    for n, run in enumerate(runs, 1):
        per = {c: calls / wall * 60 for c, (calls, wall) in run.items()}
        cells = [f"{per[c]:.1f}" for c in CONFIGS] + ratios(per)
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtllm", type=int, default=6, help="RTLLM tasks to add.")
    parser.add_argument("--calls-per-design", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, help="Write the Markdown table here.")
    args = parser.parse_args(argv)

    tasks = designs(args.rtllm)
    seeds = count(1000)
    load_before = os.getloadavg()
    print(f"{len(tasks)} designs: {', '.join(t.id for t in tasks)}", file=sys.stderr)
    statuses: dict[Status, int] = defaultdict(int)
    for status in measure("local", 2, workload(tasks, 1, seeds), [])[1]:
        statuses[status] += 1  # the warm-up pass
    runs: list[dict[tuple[str, int], tuple[int, float]]] = []
    for _ in range(args.repeats):
        runs.append({})
        for kind, workers in CONFIGS:
            jobs = workload(tasks, args.calls_per_design, seeds)
            warm = workload(tasks[:workers], 1, seeds)
            wall, got = measure(kind, workers, jobs, warm)
            for status in got:
                statuses[status] += 1
            runs[-1][(kind, workers)] = (len(jobs), wall)
            print(f"{kind} x{workers}: {len(jobs)} calls in {wall:.1f} s", file=sys.stderr)
    lines = tables(runs)
    load_after = os.getloadavg()
    notes = [
        f"Designs ({len(tasks)}): {', '.join(t.id for t in tasks)}; "
        f"{args.calls_per_design} calls per design and configuration, {args.repeats} "
        f"repeat(s); statuses of all calls: "
        + ", ".join(f"{n} {s.value}" for s, n in sorted(statuses.items())) + ".",
        f"CPUs: {os.cpu_count()}; load average (1 min) before {load_before[0]:.2f}, "
        f"after {load_after[0]:.2f}.",
    ]
    print("\n".join([*lines, "", *notes]))
    if args.out:
        command = "python benchmarks/scale.py " + " ".join(argv or sys.argv[1:])
        args.out.write_text("\n".join(["# Simulator throughput: local pool vs Ray, 1 and 2 "
                                       "workers", "", "```", command, "```", "", *lines, "",
                                       *notes, ""]), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
