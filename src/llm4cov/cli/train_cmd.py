"""``llm4cov train`` (one SFT stage), ``llm4cov train-tiny`` (a toy checkpoint for CPU
smoke runs) and ``llm4cov train-configs`` (where the shipped launcher configs are)."""

from __future__ import annotations

from pathlib import Path

import typer

from llm4cov.cli import common
from llm4cov.train import (
    TrainConfig,
    configs_dir,
    export_llamafactory,
    train_stage,
)
from llm4cov.train.tiny import build_tiny_checkpoint, texts_of


def _config(config_file: Path | None, **flags) -> TrainConfig:
    return TrainConfig.load(config_file, **flags)


def _opt(*flags: str, help: str):
    """An optional flag: None (unset) unless given, so --config and defaults apply."""
    return typer.Option(None, *flags, help=help)


def train(
    data: Path = typer.Option(None, "--data", help="Chat JSONL (llm4cov synth export)."),
    init: str = _opt("--init", help="Model id or checkpoint to start from."),
    out: Path = typer.Option(None, "--out", file_okay=False,
                             help="Checkpoint directory to write."),
    config_file: Path = typer.Option(None, "--config",
                                     help="YAML of TrainConfig settings (see train-configs)."),
    max_length: int = _opt("--max-length", help="Max tokens per sample (default 40960)."),
    epochs: float = _opt("--epochs", help="Epochs (default 1)."),
    max_steps: int = _opt("--max-steps", help="Optimizer steps; -1 = epochs (default -1)."),
    learning_rate: float = _opt("--lr", help="Peak learning rate (default 1e-5)."),
    lr_scheduler: str = _opt("--scheduler", help="LR schedule (default cosine)."),
    warmup_ratio: float = _opt("--warmup-ratio", help="Warmup fraction (default 0.03)."),
    effective_batch_size: int = _opt("--batch-size", help="Effective batch (default 24)."),
    per_device_batch_size: int = _opt("--per-device-batch-size",
                                      help="Batch per forward pass (default 1)."),
    seed: int = _opt("--seed", help="Training seed (default 42)."),
    precision: str = _opt("--precision", help="auto | bf16 | fp32 (default auto)."),
    gradient_checkpointing: bool = _opt("--gradient-checkpointing/--no-gradient-checkpointing",
                                        help="Recompute activations (default on)."),
    attn_implementation: str = _opt("--attn", help="sdpa | flash_attention_2 | ..."),
    logging_steps: int = _opt("--logging-steps", help="Steps per loss record (default 10)."),
    save_steps: int = _opt("--save-steps", help="Steps per resumable checkpoint (default 0)."),
    lora: bool = _opt("--lora/--full", help="LoRA adapter or all weights (default full)."),
    lora_r: int = _opt("--lora-r", help="LoRA rank (default 16)."),
    lora_alpha: int = _opt("--lora-alpha", help="LoRA alpha (default 32)."),
    lora_dropout: float = _opt("--lora-dropout", help="LoRA dropout (default 0.05)."),
    lora_target: list[str] = typer.Option(None, "--lora-target",
                                          help="LoRA modules, repeatable (default all-linear)."),
    export_dir: Path = typer.Option(None, "--export-llamafactory",
                                    help="Do not train: write the stage for LlamaFactory here."),
    llamafactory_template: str = typer.Option("qwen3_nothink", "--llamafactory-template",
                                              help="LlamaFactory chat template name."),
    devices: int = typer.Option(1, "--devices", min=1,
                                help="GPUs the LlamaFactory export plans for."),
) -> None:
    """Train one SFT stage: CKPT_k+1 = SFT(--init CKPT_k, --data D_k) on TRL's SFTTrainer.

    Defaults are the paper's (1 epoch, lr 1e-5, cosine, 3% warmup, effective batch 24,
    seed 42, up to 40,960 tokens; bf16 on GPUs that support it). Loss only on the
    assistant turn (the testbench); samples longer than --max-length are dropped and
    listed in OUT/train_report.json. Several GPUs: accelerate launch --config_file
    CONFIG -m llm4cov.train ... (CONFIG from llm4cov train-configs). Exit code 0 on
    success, 2 for bad input.

    \b
    Example:
      llm4cov train --data D_0.jsonl --init Qwen/Qwen3-4B-Instruct-2507 \\
          --out ckpt/stage1
    """
    config = _config(
        config_file, data=data, init=init, out=out, max_length=max_length, epochs=epochs,
        max_steps=max_steps, learning_rate=learning_rate, lr_scheduler=lr_scheduler,
        warmup_ratio=warmup_ratio, effective_batch_size=effective_batch_size,
        per_device_batch_size=per_device_batch_size, seed=seed, precision=precision,
        gradient_checkpointing=gradient_checkpointing, attn_implementation=attn_implementation,
        logging_steps=logging_steps, save_steps=save_steps, lora=lora, lora_r=lora_r,
        lora_alpha=lora_alpha, lora_dropout=lora_dropout, lora_target=lora_target or None,
    )
    console = common.console
    if export_dir is not None:
        done = export_llamafactory(config, export_dir, llamafactory_template, devices)
        console.print(f"{len(done.split.kept)} of {done.samples_total} samples kept "
                      f"({len(done.split.dropped)} too long) -> llamafactory-cli train "
                      f"{done.yaml_path}")
        return
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
