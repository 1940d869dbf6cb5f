"""``llm4cov train`` (one SFT stage), ``llm4cov train-tiny`` (a toy checkpoint for CPU
smoke runs) and ``llm4cov train-configs`` (where the shipped launcher configs are)."""

from __future__ import annotations

from pathlib import Path

import typer

from llm4cov.cli import common
from llm4cov.cli.options import PRINT_CONFIG, flag, print_config, switch, with_flags
from llm4cov.train import (
    TrainConfig,
    configs_dir,
    export_llamafactory,
    train_stage,
)
from llm4cov.train.tiny import build_tiny_checkpoint, texts_of

TRAIN_FLAGS = (
    flag("data"), flag("init"), flag("out", file_okay=False), flag("max_length", min=1),
    flag("epochs"), flag("max_steps"), flag("learning_rate", "--lr"),
    flag("lr_scheduler", "--scheduler"), flag("warmup_ratio"),
    flag("effective_batch_size", "--batch-size", min=1),
    flag("per_device_batch_size", min=1), flag("seed"), flag("precision"),
    switch("gradient_checkpointing"), flag("attn_implementation", "--attn"),
    flag("logging_steps", min=1), flag("save_steps", min=0), flag("keep_checkpoints", min=1),
    flag("trainable_layers", min=1), flag("lora", "--lora/--full"), flag("lora_r", min=1),
    flag("lora_alpha", min=1), flag("lora_dropout"), flag("lora_target"),
)
"""The flags of ``llm4cov train``: fields of :class:`TrainConfig`."""


@with_flags(TrainConfig, *TRAIN_FLAGS)
def train(
    ctx: typer.Context,
    config_file: Path = typer.Option(None, "--config",
                                     help="YAML of TrainConfig settings (see train-configs)."),
    export_dir: Path = typer.Option(None, "--export-llamafactory",
                                    help="Do not train: write the stage for LlamaFactory here."),
    llamafactory_template: str = typer.Option("qwen3_nothink", "--llamafactory-template",
                                              help="LlamaFactory chat template name."),
    devices: int = typer.Option(1, "--devices", min=1,
                                help="GPUs the LlamaFactory export plans for."),
    show: bool = PRINT_CONFIG,
    flags: dict | None = None,
) -> None:
    """Train one SFT stage: CKPT_k+1 = SFT(--init CKPT_k, --data D_k) on TRL's SFTTrainer.

    Defaults are the paper's (1 epoch, lr 1e-5, cosine, 3% warmup, effective batch 24,
    seed 42, up to 40,960 tokens; bf16 on GPUs that support it); flags override
    --config. Loss only on the assistant turn (the testbench); samples longer than
    --max-length are dropped and listed in OUT/train_report.json. Several GPUs:
    accelerate launch --config_file CONFIG -m llm4cov.train ... (CONFIG from llm4cov
    train-configs). Exit code 0 on success, 2 for bad input.

    \b
    Example:
      llm4cov train --data D_0.jsonl --init Qwen/Qwen3-4B-Instruct-2507 \\
          --out ckpt/stage1
    """
    config = TrainConfig.load(config_file, **(flags or {}))
    if show:
        print_config(config)
    elif export_dir is not None:
        done = export_llamafactory(config, export_dir, llamafactory_template, devices)
        common.console.print(f"{len(done.split.kept)} of {done.samples_total} samples kept "
                             f"({len(done.split.dropped)} too long) -> llamafactory-cli "
                             f"train {done.yaml_path}")
    else:
        _train(config)


def _train(config: TrainConfig) -> None:
    """Train ``config``'s stage and print what it did."""
    console = common.console
    result = train_stage(config)
    for d in result.dropped:
        console.print(f"dropped line {d.line} ({d.tokens} tokens > {config.max_length})")
    last = f", last loss {result.losses[-1].loss:.4f}" if result.losses else ""
    console.print(
        f"{result.samples_kept} of {result.samples_total} samples, {result.steps} steps, "
        f"train loss {result.train_loss:.4f}{last}, {result.wall_s:.0f} s -> {result.checkpoint}"
    )


def train_tiny(
    data: Path = typer.Option(..., "--data", help="Chat JSONL whose texts train the tokenizer."),
    out: Path = typer.Option(..., "--out", file_okay=False,
                             help="Checkpoint directory to write."),
    vocab_size: int = typer.Option(512, "--vocab-size", min=300, help="BPE vocabulary size."),
    hidden_size: int = typer.Option(64, "--hidden-size", min=16, help="Model width."),
    layers: int = typer.Option(2, "--layers", min=1, help="Transformer layers."),
    seed: int = typer.Option(0, "--seed", help="Initialization seed."),
) -> None:
    """Write a tiny random Qwen3 checkpoint for CPU smoke runs (no download).

    The tokenizer is trained on the texts of --data; the model writes nonsense until
    trained.

    Example: llm4cov train-tiny --data D_0.jsonl --out ckpt/tiny0
    """
    texts = texts_of(data)
    path = build_tiny_checkpoint(out, texts, vocab_size, hidden_size, layers, seed)
    common.console.print(f"tiny Qwen3 checkpoint -> {path}")


def train_configs() -> None:
    """Print the paths of the shipped configs (accelerate, DeepSpeed, stage defaults).

    accelerate_ddp.yaml / accelerate_zero3.yaml for accelerate launch, ds_zero3.json for
    LlamaFactory's deepspeed key, stage.yaml (the paper's defaults) for --config."""
    for path in sorted(configs_dir().iterdir()):
        if path.suffix in (".yaml", ".json"):
            typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command("train", short_help="Train one SFT stage.")(train)
    app.command("train-tiny", short_help="Write a tiny checkpoint for CPU smoke runs.")(train_tiny)
    app.command("train-configs", short_help="Print the shipped launcher configs.")(train_configs)
