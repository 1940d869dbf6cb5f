"""The same SFT stage for LlamaFactory (the paper's trainer): a ready ``stage.yaml``, a
``dataset_info.json`` and the samples that fit, for ``llamafactory-cli train stage.yaml``.

Samples longer than ``max_length`` are dropped here (listed in ``dropped.json``), because
LlamaFactory would silently truncate them at ``cutoff_len``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from llm4cov.train.config import TrainConfig
from llm4cov.train.data import LengthSplit, load_split
from llm4cov.util.jsonl import json_line

DATASET = "llm4cov_stage"
DATA_FILE = "train.jsonl"


@dataclass(frozen=True)
class LlamaFactoryExport:
    """Where the export went (``stage.yaml`` and the data beside it) and what it kept."""

    yaml_path: Path
    split: LengthSplit
    samples_total: int


def stage_yaml(config: TrainConfig, dataset_dir: Path, template: str, devices: int) -> dict:
    """LlamaFactory settings equal to ``config`` (bf16, assistant-only loss, no packing);
    gradient accumulation is computed for ``devices`` GPUs."""
    settings: dict = {
        "model_name_or_path": config.init,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": "lora" if config.lora else "full",
        "dataset": DATASET,
        "dataset_dir": str(dataset_dir.resolve()),
        "template": template,
        "cutoff_len": config.max_length,
        "packing": False,
        "train_on_prompt": False,
        "output_dir": str(config.out),
        "logging_steps": config.logging_steps,
        "save_strategy": "steps" if config.save_steps else "no",
        "per_device_train_batch_size": config.per_device_batch_size,
        "gradient_accumulation_steps": config.grad_accumulation(devices),
        "learning_rate": config.learning_rate,
        "num_train_epochs": config.epochs,
        "lr_scheduler_type": config.lr_scheduler,
        "warmup_ratio": config.warmup_ratio,
        "bf16": True,
        "seed": config.seed,
        "report_to": "none",
    }
    if config.save_steps:
        settings["save_steps"] = config.save_steps
    if config.max_steps > 0:
        settings["max_steps"] = config.max_steps
    if not config.gradient_checkpointing:
        settings["disable_gradient_checkpointing"] = True
    if config.lora:
        target = "all" if config.lora_target == ("all-linear",) else ",".join(config.lora_target)
        settings.update(lora_rank=config.lora_r, lora_alpha=config.lora_alpha,
                        lora_dropout=config.lora_dropout, lora_target=target)
    return settings


def export_llamafactory(
    config: TrainConfig, to: Path | str, template: str = "qwen3_nothink", devices: int = 1
) -> LlamaFactoryExport:
    """Write ``to/stage.yaml``, ``to/dataset_info.json``, ``to/train.jsonl`` (the samples
    that fit) and ``to/dropped.json``. ``template``: LlamaFactory's chat template name
    (``qwen3_nothink`` renders like Qwen3-4B-Instruct-2507's own template).

    Raises:
        DatasetError: unusable data (see :mod:`llm4cov.train.data`).
    """
    from llm4cov.synth.export import llamafactory_entry  # the entry synth export writes

    to = Path(to)
    _, total, split = load_split(config.data, config.init, config.max_length)
    settings = stage_yaml(config, to, template, devices)  # validates the batch arithmetic
    to.mkdir(parents=True, exist_ok=True)
    with (to / DATA_FILE).open("w", encoding="utf-8") as fh:
        for s in split.kept:
            fh.write(json_line({"messages": s.messages}))
    info = llamafactory_entry(DATASET, DATA_FILE)
    (to / "dataset_info.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    (to / "dropped.json").write_text(
        json.dumps([d.model_dump() for d in split.dropped], indent=2), encoding="utf-8")
    header = (f"# llm4cov SFT stage for LlamaFactory: llamafactory-cli train {to / 'stage.yaml'}\n"
              f"# {len(split.kept)} of {total} samples fit cutoff_len (dropped.json).\n"
              "# Several GPUs: add `deepspeed: <llm4cov/train/configs/ds_zero3.json>` and run\n"
              "# with FORCE_TORCHRUN=1; gradient_accumulation_steps assumes "
              f"{devices} GPU(s).\n")
    yaml_path = to / "stage.yaml"
    yaml_path.write_text(header + yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    return LlamaFactoryExport(yaml_path, split, total)
