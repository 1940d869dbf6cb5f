"""Synthesize and export stage 1 of examples/pipeline_smollm2_cpu.yaml ahead of the
progressive run, so that its naive arm can train while the progressive run still
benches checkpoint 1 (run from the repository root once stage 0 has started; it waits
for checkpoint 1). It calls the pipeline's own synth_step and export_step with the same
plan and run directory, hence the same synth identity: the progressive run later
resumes this synth run (every repo done) and exports it again, byte for byte. The
naive arm then starts from this export (runs/smollm2/presynth/stage1_data):

    OMP_NUM_THREADS=1 llm4cov pipeline --config examples/pipeline_smollm2_cpu.yaml \
      --mode naive --set 'naive.datasets=[runs/smollm2/loop/stage0/data,
      runs/smollm2/presynth/stage1_data]'
"""
import json
import time
from pathlib import Path

from llm4cov.pipeline.config import load_config
from llm4cov.pipeline.runner import checkpoint
from llm4cov.pipeline.serving import student_ref
from llm4cov.pipeline.steps import Session, export_step, synth_step

config = load_config("examples/pipeline_smollm2_cpu.yaml")
out = Path(config.out)
steps = out / "steps.jsonl"
while not steps.is_file() or not any((r["name"], r["step"]) == ("stage0", "train")
                                     for r in map(json.loads, steps.read_text().splitlines())):
    time.sleep(10)
session = Session(config, run=None, on_event=lambda e: print(e, flush=True),
                  command="llm4cov pipeline --config examples/pipeline_smollm2_cpu.yaml")
plan = config.stage(1)
student = student_ref(config.student, 1, checkpoint(config, 1))
started = time.monotonic()
synth = synth_step(session, plan, student, out / "stage1" / "synth")
print("synth", json.dumps(synth), time.monotonic() - started, flush=True)
exported = export_step(session, plan, out / "stage1" / "synth",
                       Path("runs/smollm2/presynth/stage1_data"))
print("export", json.dumps(exported), time.monotonic() - started, flush=True)
session.close()
