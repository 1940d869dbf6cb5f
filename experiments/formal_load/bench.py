"""Formal verdicts under machine load: the same ``llm4cov formal`` analysis with the
machine as it is and with ``--hogs`` extra busy processes, for two code trees (a
baseline's ``src`` and this one's). A budget in CPU seconds gives the same verdicts
under both loads; the wall-clock budget it replaced proved fewer goals when loaded.

    python experiments/formal_load/bench.py --baseline /tmp/before/src \
        --out experiments/formal_load/results.json
    python experiments/formal_load/bench.py --show experiments/formal_load/results.json

Each run uses the formal cache of a fresh folder (the analysis runs every time) and
the shared simulation cache (the random testbench whose holes are analyzed is the
same). Prints one row per (code, load): verdict counts, goals left open by the prove
budget, SBY jobs, a digest of every goal's verdict (equal digests: the same verdicts)
and wall seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO.parent / "shared" / "benchmarks" / "realip_dev.jsonl"


def analyze(src: Path, task_id: str, cache: Path) -> dict:
    """One ``llm4cov formal --json`` run with ``src`` first on the path."""
    shutil.rmtree(cache / "formal", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(src), "LLM4COV_CACHE_DIR": str(cache)}
    with tempfile.TemporaryDirectory() as out:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", "from llm4cov.cli.app import main; main()", "formal",
             "--tasks", str(TASKS), "--id", task_id, "--json",
             "--out", str(Path(out) / "closing_tb.sv")],
            env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - start
    data = json.loads(done.stdout)
    counts = Counter(g["status"] for g in data["goals"])
    verdicts = sorted(f"{g['file']}:{g['line']} {g['goal']} {g['status']}" for g in data["goals"])
    return {"unreachable": counts["unreachable"], "reached": counts["reached"],
            "unknown": counts["unknown"], "error": counts["error"], "jobs": data["jobs"],
            "budget_used_up": sum("budget used up" in g["reason"] for g in data["goals"]),
            "verdicts": hashlib.sha256("\n".join(verdicts).encode()).hexdigest()[:12],
            "wall_s": round(wall, 1), "rc": done.returncode}


def table(rows: list[dict]) -> str:
    """The Markdown table of ``rows`` (one per code and load)."""
    lines = ["| code | load | load avg | proven unreachable | reached | unknown | prove budget "
             "used up | SBY jobs | verdicts | wall s |", "|---" * 10 + "|"]
    lines += [f"| {r['code']} | {r['load']} | {r['loadavg']:.1f} | {r['unreachable']} | "
              f"{r['reached']} | {r['unknown']} | {r['budget_used_up']} | {r['jobs']} | "
              f"`{r['verdicts']}` | {r['wall_s']} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="the baseline's src folder")
    ap.add_argument("--id", default="realip/blockcopy_apb")
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--show", type=Path, help="print the table of a saved run and exit")
    args = ap.parse_args()
    if args.show:
        print(table(json.loads(args.show.read_text())["rows"]))
        return
    if args.baseline is None:
        ap.error("--baseline is required to run")
    cache = Path(tempfile.mkdtemp(prefix="formal-load-"))
    rows = []
    for load in ("as is", f"+{args.hogs} busy"):
        hogs = [] if load == "as is" else [
            subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.hogs)]
        try:
            for code, src in (("baseline", args.baseline), ("this", REPO / "src")):
                row = {"code": code, "load": load, "loadavg": os.getloadavg()[0],
                       **analyze(src, args.id, cache)}
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            for h in hogs:
                h.kill()
    shutil.rmtree(cache, ignore_errors=True)
    print(table(rows))
    if args.out:
        args.out.write_text(json.dumps({"task": args.id, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
