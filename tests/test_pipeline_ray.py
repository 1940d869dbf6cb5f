"""``llm4cov pipeline`` on Ray: the config's ``sim`` section (``--executor ray``) is
honoured by the synth step (the session's executor) and by the bench step (the bench
package's executor), on a local Ray instance."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES
from llm4cov.bench.config import Mode
from llm4cov.pipeline.config import load_config
from llm4cov.pipeline.records import PipelineDir
from llm4cov.pipeline.serving import ModelRef
from llm4cov.pipeline.steps import Session, bench_step, synth_step

TASKS = EXAMPLES / "pipeline_smoke_tasks.jsonl"
RANDOM = ModelRef(0, "random", "random")


@pytest.mark.slow
@pytest.mark.requires_verilator
@pytest.mark.requires_ray
def test_synth_and_bench_steps_run_on_ray(tmp_path):
    pytest.importorskip("ray")
    from llm4cov.exec.ray_executor import RayExecutor

    config = load_config(
        None, ["sim.executor=ray"], out=str(tmp_path / "p"), init="unused", repos=str(TASKS),
        limit=1, bench={"tasks": str(TASKS), "ids": ["examples/alu_comb"], "samples": 1,
                        "baselines": [], "plots": False},
        synth={"selection": {"candidates": 1}, "transitions": 1}, sim={"workers": 2})
    run = PipelineDir(config.out, {"global": config.global_identity()}, {})
    session = Session(config, run)
    try:
        assert isinstance(session.executor(), RayExecutor)
        synth = synth_step(session, config.stage(0), RANDOM, tmp_path / "synth")
        assert synth["repos"] and synth["sim_calls"] >= 1
        bench = bench_step(session, RANDOM, Mode.DIRECT, tmp_path / "bench")
        assert bench["headline"]["samples"] == 1
    finally:
        session.close()
    invocations = json.loads((tmp_path / "bench" / "run.json").read_text())["invocations"]
    assert [i["executor"] for i in invocations] == ["ray"]
    assert session.sim_calls >= synth["sim_calls"] + 1
