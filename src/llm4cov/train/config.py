"""One SFT stage's settings: a settings model (:mod:`llm4cov.util.settings`) whose
defaults are the paper's.

Paper, "Setup and numbers": 1 epoch per stage, learning rate 1e-5, cosine schedule,
warmup 3%, effective batch 24, seed 42, context up to 40,960 tokens (trained with
LlamaFactory in bf16). Everything else is ours and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Self, get_args

from pydantic import Field, model_validator

from llm4cov.util.settings import ConfigError, Settings, read_mapping, validate

Precision = Literal["auto", "bf16", "fp32"]
Scheduler = Literal["cosine", "linear", "constant", "constant_with_warmup",
                    "cosine_with_min_lr"]
SCHEDULERS: tuple[str, ...] = get_args(Scheduler)
REQUIRED = ("data", "init", "out")


LATER_FIELDS = {"trainable_layers": None, "keep_checkpoints": 1}
"""Fields newer than the first recorded runs, with their defaults."""
NOT_DECIDING = ("keep_checkpoints", "save_steps")
"""Fields that do not change the trained weights (for ``save_steps``: the resume test in
tests/test_train_sft.py): a finished stage is reused whatever their value."""


def deciding(values: dict[str, Any]) -> dict[str, Any]:
    """Train settings ``values`` (a :meth:`TrainConfig.as_dict` mapping or part of one)
    without the fields that change no weight (:data:`NOT_DECIDING`): what a finished stage
    is compared on."""
    return {k: v for k, v in values.items() if k not in NOT_DECIDING}


class TrainConfig(Settings):
    """Settings of one SFT stage ``theta(k+1) = SFT(theta(k), D(k))``.

    ``data``: chat JSONL (``{"messages": [...], "meta": {...}}`` per line, the format of
    ``llm4cov synth export``). ``init``: a Hugging Face model id or a checkpoint directory
    (the previous stage's ``out``). ``out``: the checkpoint directory this stage writes.
    """

    data: Path
    """Chat JSONL (llm4cov synth export)."""
    init: str
    """Model id or checkpoint to start from."""
    out: Path
    """Checkpoint directory to write."""
    max_length: int = Field(40960, ge=1)
    """Tokens per sample, chat template included (paper: 40,960). Longer samples are
    dropped and listed in the report, never truncated."""
    epochs: float = 1.0
    """Passes over the data (paper: 1 per stage)."""
    max_steps: int = -1
    """Optimizer steps; -1 lets ``epochs`` decide (ours: for smoke runs)."""
    learning_rate: float = Field(1e-5, gt=0)
    """Peak learning rate (paper: 1e-5)."""
    lr_scheduler: Scheduler = "cosine"
    """Schedule after warmup (paper: cosine)."""
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    """Fraction of the steps with linear warmup (paper: 3%)."""
    effective_batch_size: int = Field(24, ge=1)
    """Samples per optimizer step over all devices (paper: 24); gradient accumulation
    steps = effective / (per-device batch x devices), which must divide evenly."""
    per_device_batch_size: int = Field(1, ge=1)
    """Samples per forward pass on one device (ours: 1, for 40k-token samples)."""
    seed: int = 42
    """Seed of initialization, data order and dropout (paper: 42)."""
    precision: Precision = "auto"
    """``auto``: bf16 mixed precision (fp32 master weights) where the GPU supports bf16,
    else fp32 (CPU); ``bf16`` fails where unsupported."""
    gradient_checkpointing: bool = True
    """Recompute activations in the backward pass (TRL's default; needed for 40k tokens)."""
    attn_implementation: str | None = None
    """Attention kernel passed to ``from_pretrained`` (``sdpa``, ``flash_attention_2``);
    None = the transformers default."""
    logging_steps: int = Field(10, ge=1)
    """Optimizer steps between loss records (TRL's default)."""
    save_steps: int = Field(0, ge=0)
    """Optimizer steps between resumable checkpoints in ``out``; 0 = final model only."""
    keep_checkpoints: int | None = Field(1, ge=1)
    """Resumable checkpoints kept in ``out`` (the newest); None = every one (a sweep
    evaluates each epoch's)."""
    trainable_layers: int | None = Field(None, ge=1)
    """Train only the top N decoder layers and the final norm (embeddings, which SmolLM2
    and Qwen3 tie to the LM head, and the lower layers stay frozen: their backward pass is
    skipped); None = every weight (full fine-tune). Ours: a CPU speed lever, measured by
    ``benchmarks/sft_sweep.py --trainable-layers``."""
    lora: bool = False
    """Train a LoRA adapter (PEFT) instead of all weights; ``out`` then holds the merged
    model (usable as the next ``init`` and by ``vllm serve``) plus ``out/adapter``."""
    lora_r: int = Field(16, ge=1)
    """LoRA rank."""
    lora_alpha: int = Field(32, ge=1)
    """LoRA alpha."""
    lora_dropout: float = Field(0.05, ge=0, lt=1)
    """LoRA dropout."""
    lora_target: tuple[str, ...] = ("all-linear",)
    """PEFT ``target_modules``; ``all-linear`` = every linear layer but the LM head."""

    @model_validator(mode="after")
    def _valid(self) -> Self:
        if not self.init:
            raise ValueError("init must name a model or checkpoint")
        if self.epochs <= 0 and self.max_steps < 1:
            raise ValueError("epochs must be > 0 (or max_steps >= 1)")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError("max_steps must be -1 (use epochs) or >= 1")
        if self.lora and self.trainable_layers is not None:
            raise ValueError("trainable_layers and lora exclude each other")
        if self.effective_batch_size % self.per_device_batch_size:
            raise ValueError(
                f"effective_batch_size {self.effective_batch_size} is not a multiple of "
                f"per_device_batch_size {self.per_device_batch_size}"
            )
        return self

    def grad_accumulation(self, devices: int) -> int:
        """Gradient accumulation steps for ``devices`` processes.

        Raises:
            ValueError: the effective batch is not a multiple of per-device batch x devices.
        """
        per_step = self.per_device_batch_size * devices
        if self.effective_batch_size % per_step:
            raise ValueError(
                f"effective_batch_size {self.effective_batch_size} is not a multiple of "
                f"per_device_batch_size x devices = {per_step}"
            )
        return self.effective_batch_size // per_step

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (paths as strings, tuples as lists). Fields added after run
        directories were first recorded (:data:`LATER_FIELDS`) appear only when set off
        their default, so those directories still resume."""
        values = self.model_dump(mode="json")
        for name, default in LATER_FIELDS.items():
            if values.get(name) == default:
                values.pop(name)
        return values

    @classmethod
    def from_mapping(cls, values: dict[str, Any], source: str = "config") -> TrainConfig:
        """A config from a plain mapping.

        Raises:
            ConfigError: unknown keys (with the valid ones), missing required keys,
                wrong types or invalid values, each named.
        """
        missing = [n for n in REQUIRED if values.get(n) in (None, "")]
        if missing:
            raise ConfigError(f"{source}: missing {', '.join(missing)}")
        return validate(cls, values, source)

    @classmethod
    def load(cls, path: Path | str | None = None, **overrides: Any) -> TrainConfig:
        """YAML defaults from ``path`` (optional), then ``overrides`` whose value is not
        None (the CLI flags).

        Raises:
            ConfigError: unreadable YAML, or as :meth:`from_mapping`.
        """
        values = read_mapping(path) if path is not None else {}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_mapping(values, source=str(path) if path else "config")


__all__ = ["NOT_DECIDING", "REQUIRED", "SCHEDULERS", "Precision", "Scheduler",
           "TrainConfig", "deciding"]
