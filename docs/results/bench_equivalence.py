"""Two bench run directories of the same command: identical rows and summary but for timing.

Usage: python docs/results/bench_equivalence.py BEFORE_DIR AFTER_DIR (issue 14 acceptance:
docs/results/refactor_equivalence.md)."""
import json
import sys
from pathlib import Path

TIMING = {"gen_s", "build_s", "run_s", "wall_s"}


def rows(path):
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        for k in TIMING:
            r.pop(k, None)
        for k in ("build_s", "run_s", "cached"):
            r["observation"].pop(k, None)
        out[(r["arm"], r["task_id"], r["sample"], r["round"])] = r
    return out


def summary(path):
    s = json.loads(Path(path).read_text(encoding="utf-8"))
    s.pop("invocations")
    for arm in s["arms"].values():
        for k in ("gen_s", "sim_build_s", "sim_run_s"):
            arm["spent"].pop(k)
    return s


before, after = sys.argv[1], sys.argv[2]
a, b = rows(f"{before}/results.jsonl"), rows(f"{after}/results.jsonl")
print(f"rows: {len(a)} before, {len(b)} after, same keys {a.keys() == b.keys()}, "
      f"differing rows {sum(a[k] != b.get(k) for k in a)}")
print("summary.json identical but for invocations and timing:",
      summary(f"{before}/summary.json") == summary(f"{after}/summary.json"))
