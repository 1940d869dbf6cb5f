"""Staged SFT on a tiny random Qwen3 (CPU, no downloads): assistant-only labels, length
drops, stage chaining, loss, LoRA, the LlamaFactory export and the local backend."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl.chat_template_utils import qwen3_instruct_2507_chat_template

from conftest import fixture_task
from llm4cov.agent.loop import AgentConfig, run_agent
from llm4cov.agent.prompt import build_messages
from llm4cov.cli.app import main
from llm4cov.policies import GenerationRequest, SamplingParams, get_policy
from llm4cov.train import (
    TrainConfig,
    TrainResult,
    export_llamafactory,
    prepare_stage,
    train_stage,
)
from llm4cov.train.result import UNCHANGED
from llm4cov.train.schedule import planned_learning_rates
from llm4cov.train.sft import fingerprint
from llm4cov.train.tiny import IM_END, build_tiny_checkpoint, texts_of

pytestmark = pytest.mark.requires_train

FIXTURE = Path(__file__).parent / "fixtures" / "train" / "stage.jsonl"
MAX_LENGTH = 1024
ROWS = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("train")


@pytest.fixture(scope="module")
def data(work) -> Path:
    """The fixture's 6 samples plus a 7th whose prompt is far over MAX_LENGTH tokens."""
    long = json.loads(json.dumps(ROWS[0]))
    long["messages"][1]["content"] *= 12
    long["meta"] = {"id": "long"}
    path = work / "D_0.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*ROWS, long]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def init(work) -> Path:
    return build_tiny_checkpoint(work / "init", texts_of(FIXTURE))


def small(data: Path, init: Path | str, out: Path, **changes) -> TrainConfig:
    """A CPU-sized stage: batch 2 (so the 6 samples are 3 optimizer steps), lr 1e-3."""
    values = dict(data=data, init=str(init), out=out, max_length=MAX_LENGTH,
                  effective_batch_size=2, per_device_batch_size=2, learning_rate=1e-3,
                  logging_steps=1, gradient_checkpointing=False)
    return TrainConfig(**{**values, **changes})


@pytest.fixture(scope="module")
def stages(work, data, init) -> tuple[TrainResult, TrainResult]:
    first = train_stage(small(data, init, work / "ckpt1"))
    second = train_stage(small(data, work / "ckpt1", work / "ckpt2"))
    return first, second


def test_trl_gets_the_papers_settings(work, data, init):
    args = prepare_stage(TrainConfig(data=data, init=str(init), out=work / "p",
                                     max_length=MAX_LENGTH)).trainer.args
    assert (args.learning_rate, args.lr_scheduler_type.value, args.warmup_steps) == (
        1e-5, "cosine", 0.03)
    assert (args.num_train_epochs, args.seed, args.gradient_accumulation_steps) == (1.0, 42, 24)
    assert args.per_device_train_batch_size == 1 and args.bf16 is False  # CPU: fp32
    assert args.packing is False and args.assistant_only_loss is True


def test_only_the_assistant_turn_carries_loss(work, data, init):
    stage = prepare_stage(small(data, init, work / "labels", effective_batch_size=4))
    tokenizer = stage.trainer.processing_class
    prepared = stage.trainer.train_dataset
    assert len(prepared) == len(ROWS)
    for row, sample in zip(ROWS, prepared, strict=True):
        labels, ids = sample["labels"], sample["input_ids"]
        trained = [i for i, label in enumerate(labels) if label != -100]
        assert trained == list(range(trained[0], len(ids)))  # one span, to the end
        assert [labels[i] for i in trained] == [ids[i] for i in trained]
        expected = row["messages"][-1]["content"] + IM_END + "\n"
        assert tokenizer.decode([ids[i] for i in trained]) == expected
        assert tokenizer.decode(ids[: trained[0]]).endswith("<|im_start|>assistant\n")
    batch = next(iter(stage.trainer.get_train_dataloader()))
    assert stage.trainer.args.gradient_accumulation_steps == 2
    padded = batch["attention_mask"] == 0
    assert bool((batch["labels"][padded] == -100).all())
    assert int((batch["labels"] != -100).sum()) < int(batch["attention_mask"].sum())


def test_too_long_sample_is_dropped_and_listed(stages, work):
    first, _ = stages
    assert (first.samples_total, first.samples_kept) == (7, 6)
    [dropped] = first.dropped
    assert (dropped.line, dropped.reason, dropped.meta) == (7, "too_long", {"id": "long"})
    assert dropped.tokens > MAX_LENGTH
    saved = json.loads((work / "ckpt1" / "train_report.json").read_text(encoding="utf-8"))
    assert saved["dropped"][0]["line"] == 7 and saved["samples_kept"] == 6


def test_stage_two_starts_from_stage_one(stages, work, init):
    first, second = stages
    assert first.steps == 3 and second.steps == 3  # 6 samples / batch 2, one epoch
    from_disk = fingerprint(AutoModelForCausalLM.from_pretrained(work / "ckpt1"))
    assert second.init_fingerprint == first.final_fingerprint == from_disk
    assert first.init_fingerprint == fingerprint(AutoModelForCausalLM.from_pretrained(init))
    assert first.final_fingerprint != first.init_fingerprint
    assert second.final_fingerprint != second.init_fingerprint
    saved = AutoTokenizer.from_pretrained(work / "ckpt2").chat_template
    assert saved == qwen3_instruct_2507_chat_template  # not TRL's training variant


def test_each_step_records_its_learning_rate_and_a_short_schedule_warns(stages, work, data,
                                                                         init):
    """3 steps, cosine, warm-up ceil(3% x 3) = 1: lr 0, the peak 1e-3, then half of it; the
    last step at 50 % of the peak does not anneal, so the stage warns before training."""
    first, _ = stages
    assert [r.learning_rate for r in first.losses] == pytest.approx([0.0, 1e-3, 5e-4])
    assert all(r.grad_norm > 0 for r in first.losses)
    [warning] = first.warnings
    assert "3 optimizer step(s), 1 of them warm-up" in warning and "at 50 % of" in warning
    args = prepare_stage(small(data, init, work / "plan")).trainer.args
    assert planned_learning_rates(args, 3) == [r.learning_rate for r in first.losses]


def test_a_stage_whose_only_step_is_warm_up_warns_that_it_changed_nothing(work, data, init):
    """6 samples in one batch of 8: one optimizer step, and warm-up ceil(3 % x 1) = 1
    makes it run at lr 0 (v6 stage 2's case), so the weights stay as they were."""
    idle = train_stage(small(data, init, work / "idle", effective_batch_size=8))
    assert idle.steps == 1 and [r.learning_rate for r in idle.losses] == [0.0]
    assert idle.final_fingerprint == idle.init_fingerprint
    assert len(idle.warnings) == 2
    assert "all of them warm-up at learning rate 0" in idle.warnings[0]
    assert idle.warnings[1] == UNCHANGED


def test_finished_stage_is_reused_and_a_changed_one_refused(stages, work, data):
    first, _ = stages
    config = small(data, first.config["init"], work / "ckpt1")
    assert train_stage(config) == first
    assert train_stage(config.model_copy(update={"save_steps": 2})) == first  # no weight
    with pytest.raises(FileExistsError, match="another config"):
        train_stage(config.model_copy(update={"seed": 1}))


def test_interrupted_stage_resumes_from_its_last_save(stages, work, data, init):
    """A stage killed after step 1 of 3 (only ``checkpoint-1`` on disk) trains steps 2-3
    and ends with the uninterrupted run's weights and step-1 loss; saving itself changes
    no weight (the same stage without saves, ``ckpt1``)."""
    whole = train_stage(small(data, init, work / "whole", save_steps=1, keep_checkpoints=3))
    assert whole.resumed_from_step is None and whole.steps == 3
    assert whole.final_fingerprint == stages[0].final_fingerprint
    killed = work / "killed"
    shutil.copytree(work / "whole" / "checkpoint-1", killed / "checkpoint-1")
    resumed = train_stage(small(data, init, killed, save_steps=1))
    assert (resumed.resumed_from_step, resumed.steps) == (1, 3)
    assert resumed.final_fingerprint == whole.final_fingerprint
    assert [r.step for r in resumed.losses] == [1, 2, 3]
    assert resumed.losses[0].loss == whole.losses[0].loss


def test_loss_goes_down_on_a_repeated_batch(work, init):
    two = work / "two.jsonl"
    two.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]), encoding="utf-8")
    result = train_stage(small(two, init, work / "repeat", max_steps=8, learning_rate=5e-3,
                               warmup_ratio=0.0, lr_scheduler="constant"))
    losses = [r.loss for r in result.losses]
    vocab = len(AutoTokenizer.from_pretrained(init))
    assert len(losses) == 8
    assert result.warnings == []  # a constant schedule: never warned about
    assert abs(losses[0] - math.log(vocab)) < 0.1  # a random init predicts ~uniformly
    assert losses[-1] < losses[0] - 1.0


def test_lora_merges_into_a_full_checkpoint(work, data, init):
    result = train_stage(small(data, init, work / "lora", lora=True, learning_rate=1e-2,
                               max_steps=2, warmup_ratio=0.0))
    assert (work / "lora" / "adapter" / "adapter_config.json").is_file()
    before = AutoModelForCausalLM.from_pretrained(init).state_dict()
    after = AutoModelForCausalLM.from_pretrained(work / "lora").state_dict()
    assert before.keys() == after.keys()  # merged: no lora_A/lora_B left
    assert (after["model.embed_tokens.weight"] == before["model.embed_tokens.weight"]).all()
    assert (after["model.norm.weight"] == before["model.norm.weight"]).all()
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not (after[q] == before[q]).all()
    assert result.final_fingerprint == fingerprint(AutoModelForCausalLM.from_pretrained(
        work / "lora"))


def test_trainable_layers_freeze_everything_below_the_top_layers(work, data, init):
    """The tiny model has 2 decoder layers: with trainable_layers 1 only layer 1 and the
    final norm change; layer 0 and the (tied) embeddings keep their initial values."""
    train_stage(small(data, init, work / "top1", trainable_layers=1, max_steps=2,
                      warmup_ratio=0.0, learning_rate=1e-2))
    before = AutoModelForCausalLM.from_pretrained(init).state_dict()
    after = AutoModelForCausalLM.from_pretrained(work / "top1").state_dict()
    changed = {k for k in before if not (after[k] == before[k]).all()}
    assert changed and all(k.startswith(("model.layers.1.", "model.norm.")) for k in changed)
    assert "model.layers.1.self_attn.q_proj.weight" in changed
    with pytest.raises(ValueError, match="2 decoder layers"):
        prepare_stage(small(data, init, work / "top3", trainable_layers=3))


def test_llamafactory_export_holds_the_kept_samples(work, data, init):
    done = export_llamafactory(small(data, init, work / "lf_ckpt"), work / "lf", devices=1)
    kept = [json.loads(x) for x in (work / "lf" / "train.jsonl").read_text().splitlines()]
    assert kept == [{"messages": r["messages"]} for r in ROWS]
    assert json.loads((work / "lf" / "dropped.json").read_text())[0]["line"] == 7
    settings = yaml.safe_load(done.yaml_path.read_text(encoding="utf-8"))
    info = json.loads((work / "lf" / "dataset_info.json").read_text(encoding="utf-8"))
    assert info[settings["dataset"]]["file_name"] == "train.jsonl"
    assert info[settings["dataset"]]["tags"]["assistant_tag"] == "assistant"
    assert settings["cutoff_len"] == MAX_LENGTH and settings["template"] == "qwen3_nothink"


def test_cli_trains_a_stage(work, data, init, capsys):
    out = work / "cli_ckpt"
    args = ["train", "--data", str(data), "--init", str(init), "--out", str(out),
            "--max-length", str(MAX_LENGTH), "--batch-size", "2", "--per-device-batch-size",
            "2", "--max-steps", "1", "--no-gradient-checkpointing"]
    assert main(args) == 0
    assert "6 of 7 samples, 1 steps" in capsys.readouterr().err
    assert TrainResult.load(out).config["max_steps"] == 1


@pytest.fixture(scope="module")
def policy(stages, work):
    return get_policy(f"local:{work / 'ckpt2'}")


def request(task, seed: int | None, temperature: float = 0.7) -> GenerationRequest:
    params = SamplingParams(temperature=temperature, max_tokens=12)
    return GenerationRequest(task, build_messages(task), params, seed)


def test_local_backend_generates_from_the_trained_checkpoint(policy, work):
    task = fixture_task("mux2")
    req = request(task, seed=5)
    gen = policy.generate(req)
    tokenizer = AutoTokenizer.from_pretrained(work / "ckpt2")
    prompt = tokenizer.apply_chat_template(req.messages, add_generation_prompt=True,
                                           tokenize=False) + "```systemverilog\n"
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert gen.model == f"local:{work / 'ckpt2'}" and gen.prompt_tokens == len(prompt_ids)
    assert gen.text.startswith("```systemverilog\n")  # the answer prefix
    assert 1 <= gen.completion_tokens <= 12
    assert gen.finish_reason == ("length" if gen.completion_tokens == 12 else "stop")
    assert policy.generate(req).text == gen.text  # same seed, same sample
    assert policy.describe()["backend"] == "transformers"


def test_batched_greedy_equals_one_by_one(policy):
    short, long = fixture_task("mux2"), fixture_task("mux2")
    reqs = [request(short, None, 0.0),
            GenerationRequest(long, [*build_messages(long)[:1],
                                     {"role": "user", "content": "x " * 50}],
                              SamplingParams(temperature=0.0, max_tokens=12))]
    batched = policy.generate_batch(reqs)  # left padding: prompts of different lengths
    assert [g.text for g in batched] == [policy.generate(r).text for r in reqs]
    assert batched[0].prompt_tokens != batched[1].prompt_tokens


@pytest.mark.requires_verilator
def test_agent_loop_runs_on_the_local_backend(policy, evaluator):
    task = fixture_task("mux2")
    config = AgentConfig(rounds=2, params=SamplingParams(max_tokens=12), seed=9,
                         stop_at_full_coverage=False)
    run = run_agent(task, policy, evaluator, config)
    assert [r.model for r in run.rounds] == [policy.name] * 2
    assert run.policy["model"] == policy.name
    alone = policy.generate(GenerationRequest(task, run.rounds[0].messages, config.params, 9))
    assert run.rounds[0].response == alone.text


def test_heldout_loss_is_the_sft_loss_on_testbench_tokens(init, data):
    """The held-out loss equals transformers' own loss with every non-assistant label
    masked (-100), weighted by loss tokens; the over-long 7th sample is left out."""
    import torch

    from llm4cov.train.data import tokenize_sample, training_chat_template
    from llm4cov.train.heldout import heldout_loss

    result = heldout_loss(init, data, MAX_LENGTH)
    assert (result.samples, result.too_long) == (6, 1)
    tok = AutoTokenizer.from_pretrained(init)
    model = AutoModelForCausalLM.from_pretrained(init).eval()
    template = training_chat_template(tok)
    total = count = 0
    for row in ROWS:
        enc = tokenize_sample(tok, row["messages"], template)
        ids = torch.tensor([enc["input_ids"]])
        labels = torch.tensor([[t if m else -100 for t, m in
                                zip(enc["input_ids"], enc["assistant_masks"], strict=True)]])
        n = int((labels[0, 1:] != -100).sum())
        with torch.no_grad():
            total += float(model(ids, labels=labels).loss) * n
        count += n
    assert result.tokens == count
    assert result.loss == pytest.approx(total / count, rel=1e-5)
