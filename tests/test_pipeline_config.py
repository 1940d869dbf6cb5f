"""The pipeline config (paper presets as defaults, strict keys, precedence, identity) and
the vLLM serving checks, against a real local HTTP server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm4cov.cli.app import main
from llm4cov.pipeline import ServerNotReady, load_config, wait_until_served
from llm4cov.pipeline.config import PipelineConfigError, Student
from llm4cov.pipeline.serving import ModelRef, serve_command, student_ref
from support.replay_server import ReplayServer

REPO = Path(__file__).resolve().parents[1]
MINIMAL = {"out": "runs/p", "init": "Qwen/Qwen3-4B-Instruct-2507", "repos": "repos.jsonl",
           "bench": {"tasks": "cvdp_ecov.jsonl"}}

#: The configs of the recorded SmolLM2 CPU runs (issue 44: run records, not examples).
RECORDS = REPO / "experiments" / "smollm2_cpu" / "configs"


def load(tmp_path: Path, **changes) -> object:
    path = tmp_path / "stages.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL, **changes}), encoding="utf-8")
    return load_config(path)


def test_defaults_are_the_papers_three_stages(tmp_path):
    config = load(tmp_path)
    plans = [config.stage(k) for k in range(3)]
    assert [p.synth.trace_type.value for p in plans] == ["full_teacher", "imitation",
                                                          "self_sampling"]
    assert [p.synth.direct_points for p in plans] == [True, True, False]
    assert [p.synth.rejection.min_overall_percent for p in plans] == [50.0, 0.0, 0.0]
    assert plans[0].export.rebalance.short_direct_keep == pytest.approx(1 / 3)
    assert plans[0].export.rebalance.short_agentic_keep == 0.5
    assert {p.synth.selection.strategy for p in plans} == {"worst"}
    train = config.train_settings(0)
    assert (train["learning_rate"], train["lr_scheduler"], train["warmup_ratio"]) == (
        1e-5, "cosine", 0.03)
    assert (train["epochs"], train["effective_batch_size"], train["seed"],
            train["max_length"]) == (1.0, 24, 42, 40960)
    assert config.student.serve == "local" and config.teacher.model == "random"


def test_stage_overrides_win_over_top_level_ones(tmp_path):
    config = load(tmp_path, synth={"transitions": 2, "selection": {"candidates": 4}},
                  train={"learning_rate": 2.0e-5},
                  stages=[{"synth": {"transitions": 5}, "train": {"seed": 7}},
                          {"preset": 2}])
    first, second = config.stage(0), config.stage(1)
    assert (first.synth.transitions, first.synth.selection.candidates) == (5, 4)
    assert (second.preset, second.synth.trace_type.value, second.synth.transitions) == (
        2, "self_sampling", 2)
    assert config.train_settings(0)["seed"] == 7 and config.train_settings(1)["seed"] == 42
    assert config.train_settings(1)["learning_rate"] == 2e-5


@pytest.mark.parametrize(("changes", "message"), [
    ({"teacher": {"modl": "x"}}, "teacher.modl: unknown key; valid: base_url, model"),
    ({"stages": [{"synth": {"selection": {"cands": 1}}}]},
     "stages[0].synth: selection.cands: unknown key; valid: candidates, failure_priority"),
    ({"stages": [{}, {}, {}, {}]}, "stages[3]: preset 3 is not a paper stage; valid: 0, 1, 2"),
    ({"train": {"out": "x"}}, "train: remove out (the pipeline sets data, init, out)"),
    ({"train": {"learning_rate": "fast"}}, "train: learning_rate: 'fast': Input should be"),
    ({"stages": [{"train": {"lora": "maybe"}}]}, "stages[0].train: lora: 'maybe'"),
    ({"bench": {"tasks": "t.jsonl", "sample": 5}}, "bench.sample: unknown key; valid: "),
    ({"bench": {"tasks": "t.jsonl", "model": "m"}}, "bench.model: unknown key"),
    ({"bench": {"tasks": "t.jsonl", "samples": "five"}}, "bench.samples: 'five'"),
    ({"sim": {"workers": 0}}, "sim.workers: 0: Input should be greater than or equal to 1"),
    ({"sim": {"address": "auto"}}, "sim: address names a Ray cluster: it needs executor ray"),
    ({"init": "tiny"}, "init: tiny goes with a tiny: section"),
    ({"student": {"serve": "vllm"}}, "student.serve vllm needs student.base_url"),
    ({"student": {"served_name": "ckpt"}}, "must contain {k}"),
    ({"stages": []}, "stages: give at least one stage"),
    ({"bench": {"tasks": "t.jsonl", "checkpoints": [0, 4]}},
     "bench.checkpoints: 0, 4 not trained here; valid: 1 .. 3"),
])
def test_bad_settings_are_refused_with_the_key(tmp_path, changes, message):
    with pytest.raises(PipelineConfigError, match=r"stages\.yaml") as info:
        load(tmp_path, **changes)
    assert message in str(info.value)


def test_bench_is_required_but_may_be_null(tmp_path):
    with pytest.raises(PipelineConfigError, match="bench: Field required"):
        load_config(None, **{k: v for k, v in MINIMAL.items() if k != "bench"})
    assert load(tmp_path, bench=None).bench is None


def test_identity_ignores_budgets_urls_and_workers(tmp_path):
    base = load(tmp_path)
    other = load(tmp_path, synth={"budget": {"max_sim_calls": 10}, "concurrency": 9},
                 sim={"workers": 3}, teacher={"model": "random", "base_url": "http://x/v1"},
                 bench={"tasks": "cvdp_ecov.jsonl", "max_samples": 3, "max_concurrency": 2})
    assert other.global_identity() == base.global_identity()
    some = load(tmp_path, bench={"tasks": "cvdp_ecov.jsonl", "checkpoints": [3]})
    assert some.global_identity() == base.global_identity()  # evaluate the rest later
    assert [other.stage_identity(k) for k in range(3)] == [
        base.stage_identity(k) for k in range(3)]
    changed = load(tmp_path, stages=[{"train": {"seed": 1}}, {}, {}])
    assert changed.stage_identity(0) != base.stage_identity(0)
    assert changed.stage_identity(1) == base.stage_identity(1)


def test_stages_can_read_disjoint_repos_of_one_file(tmp_path):
    base = load(tmp_path)
    split = load(tmp_path, stages=[{"limit": 80}, {"skip": 80}, {}])
    assert [(split.stage(k).skip, split.stage(k).limit) for k in range(3)] == [
        (0, 80), (80, None), (0, None)]
    assert split.stage_identity(1) == {**base.stage_identity(1), "skip": 80}
    assert split.stage_identity(2) == base.stage_identity(2)  # skip 0: the old identity


def test_shipped_configs_load():
    smoke = load_config(REPO / "examples" / "pipeline_smoke.yaml")
    assert (smoke.init, len(smoke.stages), smoke.teacher.model) == ("tiny", 2, "random")
    gpu = load_config(REPO / "examples" / "pipeline_qwen3_4b.yaml")
    assert gpu.init == "Qwen/Qwen3-4B-Instruct-2507" and len(gpu.stages) == 3
    assert gpu.teacher.model == "Qwen/Qwen3-Coder-30B-A3B-Instruct"
    assert gpu.student.serve == "vllm" and gpu.train_settings(0)["learning_rate"] == 1e-5
    runs = {p.stem: load_config(p) for p in [
        *(REPO / "examples").glob("pipeline_smollm2_cpu*"),  # the CPU starting point
        *RECORDS.glob("pipeline_smollm2_cpu*")]}  # the run records
    assert sorted(runs) == [  # every recorded run's config
        "pipeline_smollm2_cpu", "pipeline_smollm2_cpu_v2",
        "pipeline_smollm2_cpu_v3", "pipeline_smollm2_cpu_v4_naive",
        "pipeline_smollm2_cpu_v4_stage0", "pipeline_smollm2_cpu_v4_stage1",
        "pipeline_smollm2_cpu_v5", "pipeline_smollm2_cpu_v5_naive",
        "pipeline_smollm2_cpu_v5_stage1", "pipeline_smollm2_cpu_v6",
        "pipeline_smollm2_cpu_v6_naive", "pipeline_smollm2_cpu_v6_stage1",
        "pipeline_smollm2_cpu_v6r_naive", "pipeline_smollm2_cpu_v6r_stage0",
        "pipeline_smollm2_cpu_v6r_stage1", "pipeline_smollm2_cpu_v6r_stage2",
        "pipeline_smollm2_cpu_v6r_stage2_all", "pipeline_smollm2_cpu_v7_stage0"]
    second = load_config(RECORDS / "pipeline_smollm2_cpu_v4_stage1.yaml")
    assert (second.stage(0).preset, second.stage(0).limit) == (1, 48)
    assert second.init == "runs/smollm2v4/stage0/stage0/checkpoint"
    split = runs["pipeline_smollm2_cpu_v5"]
    assert [(split.stage(k).preset, split.stage(k).skip, split.stage(k).limit)
            for k in range(2)] == [(0, 0, 80), (1, 80, None)]
    assert split.stage(1).synth == second.stage(0).synth  # v4's stage-1 settings
    assert split.stage(0).synth == runs["pipeline_smollm2_cpu_v4_stage0"].stage(0).synth
    naive = runs["pipeline_smollm2_cpu_v4_naive"]
    resumable = {**second.train_settings(0), "save_steps": 11}  # saves change no weight
    assert naive.mode == "naive" and naive.train_settings(None) == resumable
    assert split.train_settings(1) == resumable
    cut = runs["pipeline_smollm2_cpu_v5_stage1"]  # v5's stage 1 on repos 81-95, alone
    assert (cut.stage(0).preset, cut.stage(0).skip, cut.stage(0).limit) == (1, 80, 15)
    assert cut.stage(0).synth == split.stage(1).synth
    assert cut.init == "runs/smollm2v5/stage0/checkpoint"
    assert cut.train_settings(0) == resumable
    assert split.stage_identity(1)["train"] == second.stage_identity(0)["train"]  # saves
    naive5 = runs["pipeline_smollm2_cpu_v5_naive"]  # v4 naive's settings on v5's data
    assert naive5.mode == "naive" and naive5.train_settings(None) == resumable
    assert naive5.naive.datasets == tuple(f"runs/smollm2v5_data/d{k}/sft.jsonl"
                                          for k in range(2))
    assert naive5.bench == naive.bench
    v6 = runs["pipeline_smollm2_cpu_v6"]  # v5 with a stage 1 that can anneal
    assert v6.stage_identity(0) == split.stage_identity(0)  # stage 0 is v5's exactly
    assert (v6.stage(1).skip, v6.stage(1).limit) == (80, 30)
    assert v6.stage(1).synth == split.stage(1).synth
    assert v6.train_settings(1) == {**resumable, "learning_rate": 5e-5, "warmup_ratio": 0.1,
                                    "max_length": 2048}
    assert v6.bench.checkpoints == (2,) and v6.bench.identity() == split.bench.identity()
    full = runs["pipeline_smollm2_cpu_v6_stage1"]  # v6's stage 1 on all 70 new repos
    assert (full.stage(0).preset, full.stage(0).skip, full.stage(0).limit) == (1, 80, None)
    assert full.stage(0).synth == v6.stage(1).synth
    assert full.train_settings(0) == v6.train_settings(1)
    assert full.init == "runs/smollm2v6/stage0/checkpoint" and full.bench == split.bench
    naive6 = runs["pipeline_smollm2_cpu_v6_naive"]  # v6's D(0) and D(1), one SFT
    assert naive6.mode == "naive" and naive6.init == "smollm2-135m"
    assert naive6.train_settings(None) == {**resumable, "max_length": 2048}  # stage 1's
    assert naive6.naive.datasets == tuple(f"runs/smollm2v6_data/d{k}/sft.jsonl"
                                          for k in range(2))
    assert naive6.bench == full.bench
    v7 = runs["pipeline_smollm2_cpu_v7_stage0"]  # v3/v4's D(0), its direct points twice
    assert v7.mode == "naive" and v7.init == "smollm2-135m"
    assert v7.train_settings(None) == {
        **runs["pipeline_smollm2_cpu_v4_stage0"].train_settings(0), "save_steps": 11}
    assert v7.naive.datasets == ("runs/smollm2v7_data/d0/sft.jsonl",
                                 "runs/smollm2v7_data/d0/direct.jsonl")
    assert v7.bench == naive6.bench
    rebuilt0 = runs["pipeline_smollm2_cpu_v6r_stage0"]  # v6's stage 0 again, from D(0)
    assert rebuilt0.mode == "naive" and rebuilt0.init == "smollm2-135m"
    assert rebuilt0.train_settings(None) == split.train_settings(0)
    assert rebuilt0.naive.datasets == ("runs/smollm2v6_data/d0/sft.jsonl",)
    rebuilt1 = runs["pipeline_smollm2_cpu_v6r_stage1"]  # v6's stage 1 again, from D(1)
    assert rebuilt1.init == "runs/smollm2v6r_stage0/naive/checkpoint"
    assert rebuilt1.train_settings(None) == v6.train_settings(1)
    assert rebuilt1.naive.datasets == ("runs/smollm2v6_data/d1/sft.jsonl",)
    agentic = rebuilt0.bench.model_dump()
    assert (agentic.pop("modes"), agentic.pop("rounds")) == (("agentic",), 3)
    direct = naive6.bench.model_dump()
    assert direct.pop("modes") == ("direct",)
    direct.pop("rounds")
    assert agentic == direct and rebuilt1.bench == rebuilt0.bench
    naive6r = runs["pipeline_smollm2_cpu_v6r_naive"]  # v6 naive again, benched agentic
    assert naive6r.model_dump(exclude={"out", "bench"}) == naive6.model_dump(
        exclude={"out", "bench"}) and naive6r.bench == rebuilt0.bench
    third = runs["pipeline_smollm2_cpu_v6r_stage2"]  # self-sampling after v6's stage 1
    assert third.init == "runs/smollm2v6r_stage1/naive/checkpoint"
    assert (third.stage(0).preset, third.stage(0).skip, third.stage(0).limit) == (2, 80, 20)
    assert third.stage(0).synth.trace_type == "self_sampling"
    assert not third.stage(0).synth.direct_points  # agentic data only
    assert third.stage(0).synth.selection == full.stage(0).synth.selection  # stage 1's
    assert third.train_settings(0) == {**v6.train_settings(1), "warmup_ratio": 0.0}
    assert third.bench.modes == ("direct", "agentic")
    wide = runs["pipeline_smollm2_cpu_v6r_stage2_all"]  # stage 2 on all of stage 1's repos
    assert (wide.stage(0).skip, wide.stage(0).limit) == (80, 60)
    assert wide.stage(0).synth == third.stage(0).synth  # repos 81-100 reuse third's rows
    assert wide.init == third.init and wide.bench == third.bench
    assert wide.train_settings(0) == {**v6.train_settings(1), "effective_batch_size": 2,
                                      "save_steps": 4}


def test_cli_prints_the_plan_and_refuses_a_bad_file(tmp_path, capsys):
    assert main(["pipeline", "--config", str(REPO / "examples/pipeline_smoke.yaml"),
                 "--out", "runs/x", "--plan"]) == 0
    plan = yaml.safe_load(capsys.readouterr().out)
    assert [s["student"] for s in plan["stages"]] == ["local:runs/x/init",
                                                       "local:runs/x/stage0/checkpoint"]
    assert plan["stages"][1]["checkpoint_out"] == "runs/x/stage1/checkpoint"
    assert plan["stages"][1]["synth"]["trace_type"] == "imitation"
    bad = tmp_path / "bad.yaml"
    bad.write_text("out: x\ninit: y\nrepos: z\nbench: null\nstagez: []\n", encoding="utf-8")
    assert main(["pipeline", "--config", str(bad)]) == 2
    assert "stagez: unknown key; valid: bench, benchmarks" in capsys.readouterr().err


VLLM = Student(serve="vllm", base_url="http://127.0.0.1:8000/v1")


def test_student_refs_and_the_serve_command():
    local = student_ref(Student(), 1, "runs/p/stage0/checkpoint")
    assert (local.name, local.base_url) == ("local:runs/p/stage0/checkpoint", None)
    served = student_ref(VLLM, 2, "runs/p/stage1/checkpoint")
    assert (served.name, served.base_url) == ("llm4cov-ckpt2", "http://127.0.0.1:8000/v1")
    assert serve_command(served) == (
        "vllm serve runs/p/stage1/checkpoint --served-model-name llm4cov-ckpt2 --dtype "
        "bfloat16 --max-model-len 40960 --generation-config auto --port 8000")


def test_waits_for_the_served_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt1"
    ckpt.mkdir()
    with ReplayServer([], model="llm4cov-ckpt1", root=str(ckpt)) as server:
        ref = student_ref(VLLM.model_copy(update={"base_url": server.base_url}), 1, str(ckpt))
        assert wait_until_served(ref, 0, 1)["root"] == str(ckpt)
        later = student_ref(VLLM.model_copy(update={"base_url": server.base_url}), 2,
                            str(tmp_path / "ckpt2"))
        events = []
        with pytest.raises(ServerNotReady, match="serves llm4cov-ckpt1") as info:
            wait_until_served(later, 0.3, 0.1, events.append)
        assert "--served-model-name llm4cov-ckpt2" in str(info.value)
        assert len(events) == 1 and "waiting up to 0 s" in events[0]
        (tmp_path / "other").mkdir()
        stale = ModelRef(1, str(tmp_path / "other"), "llm4cov-ckpt1", server.base_url)
        with pytest.raises(ServerNotReady, match=r"not .*other; restart it"):
            wait_until_served(stale, 5, 1)


def test_unreachable_server_times_out():
    ref = student_ref(Student(serve="vllm", base_url="http://127.0.0.1:9/v1"), 0, "x")
    with pytest.raises(ServerNotReady, match="not reachable"):
        wait_until_served(ref, 0, 1)


def test_a_student_dtype_enters_the_identity_only_when_set(tmp_path):
    base = load(tmp_path)
    assert base.global_identity()["student"] == {"serve": "local",
                                                 "served_name": "llm4cov-ckpt{k}"}
    int8 = load(tmp_path, student={"dtype": "int8"})
    assert int8.global_identity()["student"]["dtype"] == "int8"
    with pytest.raises(PipelineConfigError, match=r"student\.dtype"):
        load(tmp_path, student={"dtype": "fp8"})


def test_what_a_pipeline_file_makes_the_run_do_is_said(tmp_path):
    """A pipeline file is code (a non-sim red team): its training command, a sandbox
    turned off and the API key sent to a server it names are said before the run; a
    file with none of them says nothing."""
    plain = load(tmp_path)
    assert plain.trust_notes({"OPENAI_API_KEY": "k"}) == []
    risky = load(tmp_path, train_launcher=["accelerate", "launch"], sim={"sandbox": False},
                 teacher={"model": "m", "base_url": "http://x:1/v1"})
    assert risky.trust_notes({"OPENAI_API_KEY": "k"}) == [
        "every SFT stage runs the command `accelerate launch` (train_launcher)",
        "testbenches are simulated without the OS sandbox (sim.sandbox: false): for "
        "trusted testbenches only",
        "$OPENAI_API_KEY is sent to http://x:1/v1 (teacher.base_url)"]
    assert len(risky.trust_notes({})) == 2
