"""Re-run the evaluator's static check and stimulus-only check (the code as it is now) on
the testbenches of kept phase-1 benches that simulated (status success): prints how
many distinct ones were checked and each one the checks now reject.

    python experiments/smollm2_cpu/recheck_containment.py smollm2c4_progressive_s0_direct_n5 ...

Needs the evaluation tasks (preregistration.md's "Once" block: runs/smollm2v2/)."""
import gzip, hashlib, json, sys
from llm4cov.agent.response import extract_testbench
from llm4cov.sim.analysis.structure import plan_testbench, StructureError
from llm4cov.sim.evaluator import Evaluator
from llm4cov.tasks.loaders import load_tasks
from llm4cov.tasks.model import SourceFile
tasks = {t.id: t for t in load_tasks("runs/smollm2v2/eval_tasks.jsonl")}
ev = Evaluator()
seen, flipped, checked = set(), [], 0
for arm in sys.argv[1:]:
    for line in gzip.open(f"docs/results/runs/{arm}/results.jsonl.gz", "rt"):
        r = json.loads(line)
        if r["status"] != "success":
            continue
        task = tasks[r["task_id"]]
        tb = extract_testbench(r["response"], task.dut_module_name)
        if tb is None:
            continue
        key = hashlib.sha256((task.id + tb).encode()).hexdigest()
        if key in seen:
            continue
        seen.add(key)
        src = SourceFile(name="tb.sv", content=tb)
        ins = ev.inspect(task, src)
        checked += 1
        if ins.reasons:
            flipped.append((arm, task.id, "static", ins.reasons[:2])); continue
        try:
            plan = plan_testbench(task.rtl_files, src, task.dut_module_name, task.dut_instance_name, view=ins.view)
        except StructureError:
            continue
        forged = ev._dut_writes(task, src, plan, ins.view)
        if forged:
            flipped.append((arm, task.id, "stimulus", forged[:2]))
print(checked, "distinct success testbenches checked;", len(flipped), "now rejected")
for f in flipped: print(f)
