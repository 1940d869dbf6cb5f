"""One SFT stage's settings: a dataclass whose defaults are the paper's.

Paper, "Setup and numbers": 1 epoch per stage, learning rate 1e-5, cosine schedule,
warmup 3%, effective batch 24, seed 42, context up to 40,960 tokens (trained with
LlamaFactory in bf16). Everything else is ours and says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

import yaml

Precision = Literal["auto", "bf16", "fp32"]
SCHEDULERS = ("cosine", "linear", "constant", "constant_with_warmup", "cosine_with_min_lr")


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one SFT stage ``theta(k+1) = SFT(theta(k), D(k))``.

    ``data``: chat JSONL (``{"messages": [...], "meta": {...}}`` per line, the format of
    ``llm4cov synth export``). ``init``: a Hugging Face model id or a checkpoint directory
    (the previous stage's ``out``). ``out``: the checkpoint directory this stage writes.
    """

    data: Path
    init: str
    out: Path
    max_length: int = 40960
    """Tokens per sample, chat template included (paper: 40,960). Longer samples are
    dropped and listed in the report, never truncated."""
    epochs: float = 1.0
    """Passes over the data (paper: 1 per stage)."""
    max_steps: int = -1
    """Optimizer steps; -1 lets ``epochs`` decide (ours: for smoke runs)."""
    learning_rate: float = 1e-5
    """Peak learning rate (paper: 1e-5)."""
    lr_scheduler: str = "cosine"
    """Schedule after warmup (paper: cosine)."""
    warmup_ratio: float = 0.03
    """Fraction of the steps with linear warmup (paper: 3%)."""
    effective_batch_size: int = 24
    """Samples per optimizer step over all devices (paper: 24); gradient accumulation
    steps = effective / (per-device batch x devices), which must divide evenly."""
    per_device_batch_size: int = 1
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
    logging_steps: int = 10
    """Optimizer steps between loss records (TRL's default)."""
    save_steps: int = 0
    """Optimizer steps between resumable checkpoints in ``out``; 0 = final model only."""
    lora: bool = False
    """Train a LoRA adapter (PEFT) instead of all weights; ``out`` then holds the merged
    model (usable as the next ``init`` and by ``vllm serve``) plus ``out/adapter``."""
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target: tuple[str, ...] = ("all-linear",)
    """PEFT ``target_modules``; ``all-linear`` = every linear layer but the LM head."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", Path(self.data))
        object.__setattr__(self, "out", Path(self.out))
        object.__setattr__(self, "lora_target", tuple(self.lora_target))
        positive = ("max_length", "effective_batch_size", "per_device_batch_size",
                    "logging_steps", "lora_r", "lora_alpha")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.init:
            raise ValueError("init must name a model or checkpoint")
        if self.epochs <= 0 and self.max_steps < 1:
            raise ValueError("epochs must be > 0 (or max_steps >= 1)")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError("max_steps must be -1 (use epochs) or >= 1")
        if not self.learning_rate > 0:
            raise ValueError("learning_rate must be > 0")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError("warmup_ratio must be in [0, 1)")
        if self.lr_scheduler not in SCHEDULERS:
            raise ValueError(f"lr_scheduler must be one of {', '.join(SCHEDULERS)}")
        if self.precision not in ("auto", "bf16", "fp32"):
            raise ValueError("precision must be 'auto', 'bf16' or 'fp32'")
        if self.effective_batch_size % self.per_device_batch_size:
            raise ValueError(
                f"effective_batch_size {self.effective_batch_size} is not a multiple of "
                f"per_device_batch_size {self.per_device_batch_size}"
            )
        if self.save_steps < 0:
            raise ValueError("save_steps must be >= 0")
        if not 0 <= self.lora_dropout < 1:
            raise ValueError("lora_dropout must be in [0, 1)")

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
        """JSON-friendly form (paths as strings, tuples as lists)."""
        out = asdict(self)
        out.update(data=str(self.data), out=str(self.out), lora_target=list(self.lora_target))
        return out

    @classmethod
    def from_mapping(cls, values: dict[str, Any], source: str = "config") -> TrainConfig:
        """A config from a plain mapping.

        Raises:
            ValueError: unknown keys (with the valid ones), missing required keys or
                invalid values.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{source}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}"
            )
        missing = [n for n in ("data", "init", "out") if values.get(n) in (None, "")]
        if missing:
            raise ValueError(f"{source}: missing {', '.join(missing)}")
        return cls(**values)

    @classmethod
    def load(cls, path: Path | str | None = None, **overrides: Any) -> TrainConfig:
        """YAML defaults from ``path`` (optional), then ``overrides`` whose value is not
        None (the CLI flags)."""
        values: dict[str, Any] = {}
        if path is not None:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
            if not isinstance(loaded, dict):
                raise ValueError(f"{path}: expected a mapping of settings")
            values.update(loaded)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_mapping(values, source=str(path) if path else "config")


__all__ = ["SCHEDULERS", "Precision", "TrainConfig"]
