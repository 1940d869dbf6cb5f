"""What one SFT stage produced: ``CKPT/train_report.json`` and its in-memory form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from llm4cov.train.data import DroppedSample

REPORT_NAME = "train_report.json"
SCHEMA_VERSION = 1
UNCHANGED = ("its final weights equal its initial ones (same fingerprint): the stage "
             "trained nothing; see its learning rates")
"""The warning of a stage whose optimizer steps changed no weight (e.g. every step at
learning rate 0)."""


class LossRecord(BaseModel):
    """Mean training loss (nats per loss token) over the logging window ending at ``step``,
    with the learning rate of that step (the one its optimizer update used, as
    transformers logs it; 0 on a first warm-up step) and the gradient norm before
    clipping. Both are None in reports written before they were recorded."""

    step: int
    loss: float
    learning_rate: float | None = None
    grad_norm: float | None = None


class TrainResult(BaseModel):
    """The outcome of :func:`llm4cov.train.train_stage` (``<checkpoint>/train_report.json``).

    ``tokens``/``loss_tokens``: tokens of the kept samples per epoch, all and inside the
    assistant turn (the loss). ``init_fingerprint``/``final_fingerprint``: SHA-256 of the
    weights before and after training (None in multi-process runs), so a stage chain can
    prove that stage k+1 started from stage k's weights. ``resumed_from_step``: the
    optimizer step of the in-stage checkpoint (``save_steps``) an interrupted stage
    resumed from, None when it trained from its start; ``losses`` then still holds every
    step (restored from that checkpoint), while ``wall_s`` and ``train_loss`` (mean loss
    per step, transformers' ``training_loss``) cover only the steps run after it.
    ``warnings``: what the stage warned about when it began (:mod:`llm4cov.train.schedule`:
    a decaying schedule too short to anneal, or one that is all warm-up at lr 0), and
    after it ended: :data:`UNCHANGED` when its final weights equal its initial ones.
    """

    schema_version: int = SCHEMA_VERSION
    checkpoint: str
    config: dict[str, Any]
    samples_total: int
    samples_kept: int
    dropped: list[DroppedSample] = Field(default_factory=list)
    tokens: int
    loss_tokens: int
    devices: int
    grad_accumulation: int
    precision: str
    steps: int
    losses: list[LossRecord] = Field(default_factory=list)
    train_loss: float
    init_fingerprint: str | None = None
    final_fingerprint: str | None = None
    resumed_from_step: int | None = None
    warnings: list[str] = Field(default_factory=list)
    wall_s: float
    versions: dict[str, str] = Field(default_factory=dict)

    def save(self) -> Path:
        """Write the report into the checkpoint directory; returns its path."""
        path = Path(self.checkpoint) / REPORT_NAME
        path.write_text(self.model_dump_json(indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, checkpoint: Path | str) -> TrainResult:
        """The report of a finished stage in ``checkpoint``."""
        return cls.model_validate_json((Path(checkpoint) / REPORT_NAME).read_text(encoding="utf-8"))
