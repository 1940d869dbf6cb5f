"""Re-run the evaluator's static check and stimulus-only check (the code as it is now) on
the testbenches of kept phase-1 benches that simulated (status success): prints how
many distinct ones were checked and each one the checks now reject.

    python experiments/smollm2_cpu/recheck_containment.py smollm2c4_progressive_s0_direct_n5 ...

Needs the evaluation tasks (preregistration.md's "Once" block: runs/smollm2v2/).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys

from llm4cov.agent.response import extract_testbench
from llm4cov.sim.analysis.structure import StructureError, plan_testbench
from llm4cov.sim.evaluator import Evaluator
from llm4cov.tasks.loaders import load_tasks
from llm4cov.tasks.model import SourceFile


def rejections(ev: Evaluator, task, tb: str) -> list[str]:
    """Why the checks now reject the testbench ``tb`` of ``task`` (empty: they pass)."""
    src = SourceFile(name="tb.sv", content=tb)
    inspection = ev.inspect(task, src)
    if inspection.reasons:
        return inspection.reasons
    try:
        plan = plan_testbench(task.rtl_files, src, task.dut_module_name,
                              task.dut_instance_name, view=inspection.view)
    except StructureError:
        return []
    return ev._dut_writes(task, src, plan, inspection.view)


def main(arms: list[str]) -> None:
    tasks = {t.id: t for t in load_tasks("runs/smollm2v2/eval_tasks.jsonl")}
    ev = Evaluator()
    seen: set[str] = set()
    flipped = []
    for arm in arms:
        with gzip.open(f"docs/results/runs/{arm}/results.jsonl.gz", "rt") as fh:
            rows = [json.loads(line) for line in fh]
        for r in rows:
            task = tasks[r["task_id"]]
            tb = extract_testbench(r["response"], task.dut_module_name) \
                if r["status"] == "success" else None
            key = hashlib.sha256(f"{task.id}\n{tb}".encode()).hexdigest()
            if tb is None or key in seen:
                continue
            seen.add(key)
            if why := rejections(ev, task, tb):
                flipped.append((arm, task.id, why[:2]))
    print(len(seen), "distinct success testbenches checked;", len(flipped), "now rejected")
    for f in flipped:
        print(f)


if __name__ == "__main__":
    main(sys.argv[1:])
