"""The stage loop end to end on CPU: the shipped smoke config (tiny random Qwen3 as
checkpoint 0, the `random` teacher, the real simulator, TRL training, bench), its
resume, the naive baseline, a vLLM-served student (a real local HTTP server) and a
pipeline killed mid-stage."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("trl")

from transformers import AutoModelForCausalLM, AutoTokenizer

from llm4cov.pipeline import (
    PipelineConfig,
    PipelineDirError,
    PipelineError,
    load_config,
    run_pipeline,
)
from llm4cov.train.sft import fingerprint
from llm4cov.util.jsonl import iter_jsonl
from support.replay_server import ReplayServer

pytestmark = [pytest.mark.requires_train, pytest.mark.requires_verilator, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "examples" / "pipeline_smoke.yaml"
TASKS = 3  # examples/pipeline_smoke_tasks.jsonl: alu_comb, traffic_fsm, hier_acc


def smoke_values(out: Path) -> dict:
    """The shipped smoke config with ``out`` and absolute input paths."""
    values = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    values["out"] = str(out)
    values["tiny"]["corpus"] = str(REPO / values["tiny"]["corpus"])
    values["repos"] = str(REPO / values["repos"])
    values["bench"]["tasks"] = str(REPO / values["bench"]["tasks"])
    return values


def smoke_config(out: Path, **changes) -> PipelineConfig:
    return PipelineConfig.model_validate({**smoke_values(out), **changes})


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("pipeline") / "smoke"
    return run_pipeline(smoke_config(out))


def test_smoke_pipeline_runs_two_stages(smoke):
    first, second = smoke.stages
    assert smoke.status == "finished"
    assert [s["name"] for s in smoke.stages] == ["stage0", "stage1"]
    assert [s["trace_type"] for s in smoke.stages] == ["full_teacher", "imitation"]
    # Stage 0 (K = M = 1): the random teacher's direct sample passes on every design
    # (>= 50%); its transition from that state is the same stimulus, so no gain.
    assert first["synth"]["points"] == {"agentic:below_tau": TASKS, "direct:kept": TASKS}
    assert first["synth"]["sim_calls"] == 3 * TASKS  # probe + 1 state + 1 transition
    # Stage 1: the tiny student writes no testbench (nothing to simulate); the teacher
    # repairs that failed state, a gain from Cov 0.
    assert second["synth"]["points"] == {"agentic:kept": TASKS, "direct:sim_failed": TASKS}
    assert second["synth"]["sim_calls"] == 2 * TASKS  # probe + 1 transition
    assert [s["export"]["samples"] for s in smoke.stages] == [TASKS, TASKS]
    for stage in smoke.stages:
        train = stage["train"]
        assert (train["samples_total"], train["samples_kept"], train["steps"]) == (
            TASKS, TASKS, TASKS)  # effective batch 1, one epoch
        bench = stage["bench"]["agentic"]
        assert bench["headline"]["samples"] == TASKS and bench["headline"]["sim_pass"] == 0.0
        results = list(iter_jsonl(Path(bench["run_dir"]) / "results.jsonl"))
        assert len(results) == TASKS * 2  # 1 sample x 2 rounds per task
        assert {r["status"] for r in results} == {"rejected"}
    vocab = len(AutoTokenizer.from_pretrained(smoke.out / "init"))
    assert abs(first["train"]["first_loss"] - math.log(vocab)) < 0.1  # random init
    assert smoke.invocation["trained"] == [first["checkpoint_out"], second["checkpoint_out"]]
    assert smoke.invocation["sim_calls"] == 5 * TASKS
    assert lines(smoke.out / "steps.jsonl") == 1 + 2 * 4  # base bench, then 4 steps a stage
    # Checkpoint 0 (the base row) is evaluated first, like every trained checkpoint.
    base = list(iter_jsonl(smoke.out / "base/bench/agentic/results.jsonl"))
    assert len(base) == TASKS * 2 and {r["status"] for r in base} == {"rejected"}
    assert {r["model"] for r in base} == {f"local:{smoke.out / 'init'}"}


def test_stage_two_starts_from_stage_one(smoke):
    first, second = smoke.stages
    assert second["student"] == f"local:{first['checkpoint_out']}"
    assert second["train"]["init"] == first["checkpoint_out"]
    saved = fingerprint(AutoModelForCausalLM.from_pretrained(first["checkpoint_out"]))
    assert second["train"]["init_fingerprint"] == first["train"]["final_fingerprint"] == saved
    initial = fingerprint(AutoModelForCausalLM.from_pretrained(smoke.out / "init"))
    assert first["train"]["init_fingerprint"] == initial != saved


def test_rerun_skips_finished_stages(smoke, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("a finished stage must not simulate or train")

    for target in ("llm4cov.exec.get_executor", "llm4cov.train.train_stage",
                   "llm4cov.synth.SynthRun"):
        monkeypatch.setattr(target, forbidden)
    files = [smoke.out / f"stage{k}" / name for k in (0, 1) for name in
             ("synth/samples.jsonl", "bench/agentic/results.jsonl")]
    files.append(smoke.out / "base/bench/agentic/results.jsonl")
    before = {p: lines(p) for p in files}
    weights = {k: (smoke.out / f"stage{k}/checkpoint/model.safetensors").stat().st_mtime_ns
               for k in (0, 1)}
    again = run_pipeline(smoke_config(smoke.out))
    assert again.status == "finished" and again.stages == smoke.stages
    assert again.invocation["steps_run"] == [] and again.invocation["trained"] == []
    assert again.invocation["sim_calls"] == 0
    assert {p: lines(p) for p in files} == before
    assert weights == {k: (smoke.out / f"stage{k}/checkpoint/model.safetensors").stat()
                       .st_mtime_ns for k in (0, 1)}
    runs = json.loads((smoke.out / "run.json").read_text(encoding="utf-8"))["invocations"]
    assert [r["status"] for r in runs] == ["finished", "finished"]


def test_only_the_checkpoints_asked_for_are_benched_and_the_rest_later(tmp_path):
    """``bench.checkpoints: [2]`` skips checkpoint 1's bench; a rerun without the
    setting benches checkpoint 1 of the finished stage 0 and nothing else."""
    out = tmp_path / "last_only"
    values = smoke_values(out)
    values["bench"].update(checkpoints=[2], checkpoint0=False)
    first = run_pipeline(PipelineConfig.model_validate(values))
    assert first.status == "finished"
    assert [bool(s["bench"]) for s in first.stages] == [False, True]
    assert not (out / "stage0/bench").exists()
    values["bench"].pop("checkpoints")
    again = run_pipeline(PipelineConfig.model_validate(values))
    assert again.invocation["steps_run"] == ["stage0/bench:agentic"]
    assert again.invocation["trained"] == []
    assert again.stages[0]["bench"]["agentic"]["headline"]["samples"] == TASKS
    assert again.stages[1]["bench"] == first.stages[1]["bench"]
    recorded = [(r["name"], r["revision"], sorted(r["bench"])) for r in
                iter_jsonl(out / "stages.jsonl")]
    assert recorded == [("stage0", 0, []), ("stage1", 0, ["agentic"]),
                        ("stage0", 1, ["agentic"])]


def test_changed_settings_are_refused(smoke):
    values = smoke_values(smoke.out)
    values["stages"][0] = {"train": {"seed": 1}}
    with pytest.raises(PipelineDirError, match="stage0 started with other settings"):
        run_pipeline(PipelineConfig.model_validate(values))
    with pytest.raises(PipelineDirError, match="changed: bench"):
        run_pipeline(smoke_config(smoke.out, bench={**smoke_values(smoke.out)["bench"],
                                                    "samples": 2}))


def test_an_added_stage_runs_and_stops_on_empty_data(smoke):
    # Stage 2 (self-sampling) needs a student that writes testbenches: the tiny one
    # does not, so D(2) is empty and the pipeline stops before training on nothing.
    values = smoke_values(smoke.out)
    values["stages"] = [{}, {}, {}]
    with pytest.raises(PipelineError, match=r"stage 2: D\(2\) is empty"):
        run_pipeline(PipelineConfig.model_validate(values))
    rows = {(r["name"], r["step"]): r for r in iter_jsonl(smoke.out / "steps.jsonl")}
    assert rows[("stage2", "synth")]["points"] == {"agentic:sim_failed": TASKS}
    assert ("stage2", "export") not in rows and lines(smoke.out / "stages.jsonl") == 2


def test_naive_trains_once_on_the_union(smoke):
    result = run_pipeline(smoke_config(smoke.out, mode="naive"))
    [naive] = result.stages
    sizes = [s["export"]["samples"] for s in smoke.stages]
    assert [d["samples"] for d in naive["union"]["datasets"]] == sizes
    assert naive["train"]["samples_total"] == sum(sizes) == lines(smoke.out / "naive/union.jsonl")
    assert naive["train"]["steps"] == sum(sizes)
    assert result.invocation["trained"] == [str(smoke.out / "naive" / "checkpoint")]
    # one initialization: the progressive run's checkpoint 0
    assert naive["train"]["init_fingerprint"] == smoke.stages[0]["train"]["init_fingerprint"]
    assert naive["bench"]["agentic"]["headline"]["samples"] == TASKS
    assert result.out == smoke.out / "naive"


ALU_TB = """```systemverilog
module tb;
  logic [3:0] a = 0, b = 0; logic [1:0] op = 0; wire [3:0] y; wire carry, zero;
  alu4 dut (.a(a), .b(b), .op(op), .y(y), .carry(carry), .zero(zero));
  initial begin
    for (int i = 0; i < 1024; i++) begin {op, a, b} = 10'(i); #1; end
    {op, a, b} = 10'h3ff; #1; {op, a, b} = 10'h000; #1;
    $finish;
  end
endmodule
```"""


def test_a_served_student_and_a_launched_training(smoke, tmp_path):
    """Checkpoint 1 is evaluated through a vLLM-style endpoint (waited for by name) and
    trained in a subprocess through ``train_launcher`` (here plain Python)."""
    out = tmp_path / "served"
    with ReplayServer([ALU_TB], model="llm4cov-ckpt1", cycle=True) as server:
        values = smoke_values(out)
        values.update(stages=[{}], limit=1, train_launcher=[sys.executable],
                      student={"serve": "vllm", "base_url": server.base_url, "wait_s": 0})
        values["bench"].update(ids=["examples/alu_comb"], rounds=1, checkpoint0=False)
        result = run_pipeline(PipelineConfig.model_validate(values))
    [stage] = result.stages
    assert stage["student"] == "llm4cov-ckpt0" and stage["export"]["samples"] == 1
    launched = yaml.safe_load((out / "stage0/checkpoint.train.yaml").read_text())
    assert launched["init"] == str(out / "init") and launched["effective_batch_size"] == 1
    assert stage["train"]["steps"] == 1 and stage["train"]["devices"] == 1
    assert result.invocation["trained"] == [str(out / "stage0" / "checkpoint")]
    bench = stage["bench"]["agentic"]
    assert bench["model"] == "llm4cov-ckpt1"
    assert bench["headline"]["sim_pass"] == 100.0 and bench["headline"]["avg_cov"] > 0
    assert [r["model"] for r in server.requests] == ["llm4cov-ckpt1"]


@pytest.mark.slow
def test_a_killed_pipeline_resumes_inside_the_stage(tmp_path):
    out = tmp_path / "killed"
    config = tmp_path / "stages.yaml"
    config.write_text(yaml.safe_dump(smoke_values(out)), encoding="utf-8")
    cli = Path(sys.executable).parent / "llm4cov"
    proc = subprocess.Popen([str(cli), "pipeline", "--config", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    try:
        while not any(r["name"] == "stage1" and r["step"] == "export"
                      for r in iter_jsonl(out / "steps.jsonl")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole pipeline: simulators, training
        proc.wait()
    assert not (out / "stage1/checkpoint/train_report.json").exists()  # killed in training
    samples = lines(out / "stage1/synth/samples.jsonl")
    result = run_pipeline(load_config(config))
    assert result.status == "finished" and len(result.stages) == 2
    assert result.invocation["steps_run"] == ["stage1/train", "stage1/bench:agentic"]
    assert result.invocation["trained"] == [str(out / "stage1" / "checkpoint")]
    assert result.invocation["sim_calls"] == 0
    assert lines(out / "stage1/synth/samples.jsonl") == samples
    first, second = result.stages
    assert second["train"]["init_fingerprint"] == first["train"]["final_fingerprint"]
    runs = json.loads((out / "run.json").read_text(encoding="utf-8"))["invocations"]
    assert len(runs) == 1  # the killed invocation never got to write its record
