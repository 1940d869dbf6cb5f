"""Later-call latency of two llm4cov source trees, paired call by call in one run.

Each tree runs in its own worker process (``PYTHONPATH=<tree>``) with its own result
cache, build store and ``CCACHE_DIR``, warmed by one call on a design outside the
measured set (as ``sim_throughput.py`` warms its store). Then, for every design (every
k-th reference-testbench task of ``--tasks``) and seed, both workers evaluate a new
random-stimulus testbench of that design (``sim_throughput.new_testbench``: one per
seed and tree, so no compiler cache serves the other tree), the order alternating per
pair. Reported: each tree's median and p90 wall seconds per later call, the ratio of
the medians and the median of the per-pair ratios (B over A).

    python benchmarks/sim_ab.py --a /path/to/base/src --b src --designs 6 --later 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import sim_throughput
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.tasks.loaders import load_tasks
tasks = {t.id: t for t in load_tasks(sys.argv[2])}
evaluator = Evaluator(SimConfig(cache_dir=sys.argv[3]))
for line in sys.stdin:
    task_id, seed = json.loads(line)
    t0 = time.monotonic()
    obs = evaluator.evaluate(tasks[task_id], sim_throughput.new_testbench(tasks[task_id], seed))
    print(json.dumps([time.monotonic() - t0, obs.status.value, obs.cached]), flush=True)
"""


class Worker:
    """One source tree's evaluator in a child process (one call at a time)."""

    def __init__(self, tree: Path, tasks: Path, scratch: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(tree.resolve()),
                   CCACHE_DIR=str(scratch / "ccache"))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(Path(__file__).parent), str(tasks),
             str(scratch / "cache")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, text=True)

    def call(self, task_id: str, seed: int) -> tuple[float, str]:
        self.proc.stdin.write(json.dumps([task_id, seed]) + "\n")
        self.proc.stdin.flush()
        wall, status, cached = json.loads(self.proc.stdout.readline())
        assert not cached, "a later call was served from the result cache"
        return wall, status

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def p90(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(0.9 * len(values)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", type=Path, required=True, help="Source tree A (its src/).")
    ap.add_argument("--b", type=Path, required=True, help="Source tree B (its src/).")
    ap.add_argument("--tasks", type=Path, default=Path("../shared/benchmarks/rtllm.jsonl"))
    ap.add_argument("--designs", type=int, default=6)
    ap.add_argument("--later", type=int, default=4, help="Later calls per design and tree.")
    args = ap.parse_args(argv)
    ids = [json.loads(line)["id"] for line in args.tasks.read_text().splitlines()
           if json.loads(line).get("reference_tb")]
    designs = ids[:: max(1, len(ids) // args.designs)][: args.designs]
    warm = next(i for i in ids if i not in designs)
    scratch = Path(tempfile.mkdtemp(prefix="sim-ab-"))
    workers = {name: Worker(tree, args.tasks, scratch / name)
               for name, tree in (("A", args.a), ("B", args.b))}
    for worker in workers.values():
        worker.call(warm, 0)  # fills the build store
    walls: dict[str, list[float]] = {"A": [], "B": []}
    pairs = 0
    load0 = os.getloadavg()[0]
    for design in designs:
        for k in range(args.later):
            order = ("A", "B") if pairs % 2 == 0 else ("B", "A")
            for name in order:
                seed = 1000 + 2 * k + (name == "B")
                wall, status = workers[name].call(design, seed)
                walls[name].append(wall)
                print(f"{design} seed {seed} {name}: {wall:.3f} s {status}", flush=True)
            pairs += 1
    for worker in workers.values():
        worker.close()
    ratios = [b / a for a, b in zip(walls["A"], walls["B"], strict=True)]
    med = {n: statistics.median(v) for n, v in walls.items()}
    print(f"designs: {', '.join(designs)}; {pairs} pairs; load {load0:.1f} -> "
          f"{os.getloadavg()[0]:.1f}")
    for name in ("A", "B"):
        print(f"{name} ({getattr(args, name.lower())}): median {med[name]:.3f} s, "
              f"p90 {p90(walls[name]):.3f} s")
    print(f"B/A: ratio of medians {med['B'] / med['A']:.3f}, median of pair ratios "
          f"{statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
