"""TrainConfig, the chat JSONL reader and the LlamaFactory settings: no torch needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm4cov.cli.app import main
from llm4cov.policies import get_policy
from llm4cov.train import DatasetError, TrainConfig, configs_dir
from llm4cov.train.data import read_chat_jsonl
from llm4cov.train.llamafactory import DATASET, stage_yaml
from llm4cov.train.schedule import schedule_warning

FIXTURE = Path(__file__).parent / "fixtures" / "train" / "stage.jsonl"
REQUIRED = {"data": "d.jsonl", "init": "m", "out": "ckpt"}


def test_defaults_are_the_papers_sft_settings():
    c = TrainConfig(**REQUIRED)
    assert (c.epochs, c.learning_rate, c.lr_scheduler) == (1.0, 1e-5, "cosine")
    assert c.warmup_ratio == 0.03
    assert (c.effective_batch_size, c.seed, c.max_length) == (24, 42, 40960)
    assert c.grad_accumulation(1) == 24
    assert c.grad_accumulation(8) == 3


def test_shipped_stage_yaml_equals_the_defaults():
    assert TrainConfig.load(configs_dir() / "stage.yaml", **REQUIRED) == TrainConfig(**REQUIRED)


def test_flags_override_yaml_and_none_means_unset(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("learning_rate: 2.0e-5\nseed: 7\n", encoding="utf-8")
    c = TrainConfig.load(path, **REQUIRED, seed=None, learning_rate=3e-5)
    assert (c.learning_rate, c.seed) == (3e-5, 7)


def test_unknown_key_is_an_error_naming_it(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("learning_rat: 2.0e-5\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown key.*learning_rat"):
        TrainConfig.load(path, **REQUIRED)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_length": 0}, "max_length"),
        ({"warmup_ratio": 1.0}, "warmup_ratio"),
        ({"effective_batch_size": 24, "per_device_batch_size": 5}, "multiple"),
        ({"lr_scheduler": "cosin"}, "lr_scheduler"),
        ({"precision": "fp16"}, "precision"),
        ({"max_steps": 0}, "max_steps"),
    ],
)
def test_invalid_values_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**REQUIRED, **change)


def test_batch_that_does_not_split_over_devices_is_rejected():
    with pytest.raises(ValueError, match="devices = 5"):
        TrainConfig(**REQUIRED).grad_accumulation(5)


def test_reader_keeps_line_numbers_and_meta():
    samples = read_chat_jsonl(FIXTURE)
    assert [s.line for s in samples] == [1, 2, 3, 4, 5, 6]
    assert samples[0].meta["id"] == "mux2-direct"
    assert [m["role"] for m in samples[0].messages] == ["system", "user", "assistant"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"messages": []}, "non-empty list"),
        ({"messages": [{"role": "user", "content": "x"}]}, "last message"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "role"),
        ({"messages": [{"role": "assistant", "content": "a"},
                       {"role": "assistant", "content": "b"}]}, "exactly one"),
    ],
)
def test_malformed_rows_are_errors_with_file_and_line(tmp_path, row, message):
    path = tmp_path / "d.jsonl"
    good = FIXTURE.read_text(encoding="utf-8").splitlines()[0]
    path.write_text(good + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"d.jsonl:2: .*{message}"):
        read_chat_jsonl(path)


def test_llamafactory_settings_mirror_the_config(tmp_path):
    c = TrainConfig(**REQUIRED, lora=True, lora_target=("q_proj", "v_proj"))
    s = stage_yaml(c, tmp_path, "qwen3_nothink", devices=8)
    assert s["learning_rate"] == 1e-5 and s["lr_scheduler_type"] == "cosine"
    assert s["warmup_ratio"] == 0.03 and s["num_train_epochs"] == 1.0 and s["seed"] == 42
    assert s["per_device_train_batch_size"] * s["gradient_accumulation_steps"] * 8 == 24
    assert s["cutoff_len"] == 40960 and s["packing"] is False and s["train_on_prompt"] is False
    assert (s["finetuning_type"], s["lora_target"]) == ("lora", "q_proj,v_proj")
    assert s["dataset"] == DATASET and "max_steps" not in s


def test_shipped_launcher_configs_parse():
    zero3 = yaml.safe_load((configs_dir() / "accelerate_zero3.yaml").read_text(encoding="utf-8"))
    assert zero3["distributed_type"] == "DEEPSPEED"
    assert zero3["deepspeed_config"]["zero_stage"] == 3
    ddp = yaml.safe_load((configs_dir() / "accelerate_ddp.yaml").read_text(encoding="utf-8"))
    assert ddp["distributed_type"] == "MULTI_GPU"
    ds = json.loads((configs_dir() / "ds_zero3.json").read_text(encoding="utf-8"))
    assert ds["zero_optimization"]["stage"] == 3


def test_local_policy_needs_a_path():
    with pytest.raises(ValueError, match="local:PATH"):
        get_policy("local:")


def test_cli_train_reports_a_missing_setting(capsys):
    assert main(["train", "--data", str(FIXTURE), "--out", "x"]) == 2
    assert "missing init" in capsys.readouterr().err


def test_cli_train_reports_a_bad_data_line(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text('{"messages": [{"role": "user", "content": "x"}]}\n', encoding="utf-8")
    code = main(["train", "--data", str(data), "--init", "m", "--out", str(tmp_path / "o")])
    assert code == 2
    assert "d.jsonl:1" in capsys.readouterr().err


def test_a_schedule_that_ends_near_its_peak_is_warned_about():
    """v5's stage 1: 2 steps, the first the warm-up at lr 0, the last at the peak 2e-4."""
    warning = schedule_warning([0.0, 2e-4], "cosine", 2e-4)
    assert "2 optimizer step(s), 1 of them warm-up" in warning
    assert "100 % of the peak learning rate 0.0002" in warning
    # cosine, 1 warm-up then 3 decay steps: the last at 0.5 * (1 + cos(2 pi / 3)) = 25 %
    assert "at 25 % of" in schedule_warning([0.0, 1.0, 0.75, 0.25], "cosine", 1.0)


def test_a_schedule_that_is_all_warm_up_is_warned_about():
    """v6 stage 2: 1 step, warm-up ceil(10 % x 1) = 1, so its only step ran at lr 0."""
    for scheduler in ("cosine", "constant_with_warmup"):
        warning = schedule_warning([0.0], scheduler, 5e-5)
        assert "1 optimizer step(s), all of them warm-up at learning rate 0" in warning
    assert "all of them warm-up" in schedule_warning([0.0, 0.0], "linear", 1.0)


def test_an_annealed_or_constant_schedule_is_not_warned_about():
    # 4 decay steps: the last at 0.5 * (1 + cos(3 pi / 4)) = 14.6 % of the peak
    assert schedule_warning([0.0, 1.0, 0.854, 0.5, 0.146], "cosine", 1.0) is None
    assert schedule_warning([1.0, 1.0], "constant", 1.0) is None  # constant by design
    assert schedule_warning([], "cosine", 1.0) is None
