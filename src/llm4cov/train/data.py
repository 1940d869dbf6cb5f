"""Training data: the chat JSONL of ``llm4cov synth export`` and the length filter.

One line per sample: ``{"messages": [system?, user, assistant], "meta": {...}}``; the
assistant message is the testbench (one fenced ``systemverilog`` block). A sample is
measured with the chat template the trainer uses (the model's own, or TRL's training
variant with ``{% generation %}`` markers) and dropped when longer than the limit, so
no testbench is ever truncated.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from llm4cov.util.escape import no_special_tokens
from llm4cov.util.jsonl import iter_json_objects

log = logging.getLogger(__name__)

ROLES = ("system", "user", "assistant")


class DatasetError(ValueError):
    """A training file or sample that cannot be used (with file and line)."""


@dataclass(frozen=True)
class ChatSample:
    """One training sample: ``line`` is its 1-based line number in the file."""

    line: int
    messages: list[dict[str, str]]
    meta: dict[str, Any]


class DroppedSample(BaseModel):
    """A sample left out of training: its line, metadata, length (tokens) and why."""

    line: int
    tokens: int
    reason: str
    meta: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class LengthSplit:
    """Samples that fit ``max_length`` and the ones dropped; token counts of the kept
    samples (``loss_tokens``: tokens inside the assistant turn, which carry the loss)."""

    kept: list[ChatSample]
    dropped: list[DroppedSample]
    tokens: int
    loss_tokens: int


def _check_messages(messages: Any, where: str) -> list[dict[str, str]]:
    if not isinstance(messages, list) or not messages:
        raise DatasetError(f"{where}: 'messages' must be a non-empty list")
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise DatasetError(f"{where}: every message needs a role in {ROLES}")
        if not isinstance(m.get("content"), str):
            raise DatasetError(f"{where}: every message needs a string 'content'")
    last = messages[-1]
    if last["role"] != "assistant" or not last["content"].strip():
        raise DatasetError(f"{where}: the last message must be a non-empty assistant turn")
    if sum(m["role"] == "assistant" for m in messages) != 1:
        raise DatasetError(f"{where}: exactly one assistant turn (the testbench) per sample")
    # a testbench (the assistant turn) or a log in a prompt may hold a chat template's
    # control strings: as text, not as the tokens that end or start a turn
    return [{"role": m["role"], "content": no_special_tokens(m["content"])} for m in messages]


def read_chat_jsonl(path: Path | str) -> list[ChatSample]:
    """All samples of a chat JSONL file, validated.

    Raises:
        DatasetError: missing file, invalid JSON or a malformed sample (file:line).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such training file")
    samples = []
    for n, row, why in iter_json_objects(path):
        where = f"{path}:{n}"
        if row is None:
            raise DatasetError(f"{where}: {why}")
        meta = row.get("meta") or {}
        samples.append(ChatSample(n, _check_messages(row.get("messages"), where), meta))
    if not samples:
        raise DatasetError(f"{path}: no samples")
    return samples


def training_chat_template(tokenizer) -> str | None:
    """The chat template SFT uses for assistant-only loss: None when the tokenizer's own
    template has ``{% generation %}`` markers, else TRL's training variant of it (the
    same choice ``SFTTrainer`` makes).

    Raises:
        DatasetError: no chat template, or one TRL has no training variant for.
    """
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if not tokenizer.chat_template:
        raise DatasetError("the tokenizer has no chat template (an instruct model is needed)")
    if has_generation_markers(tokenizer.chat_template):
        return None
    try:
        return get_training_chat_template(tokenizer)
    except ValueError as exc:
        raise DatasetError(
            "the model's chat template has no {% generation %} markers and TRL has no "
            "training variant of it; add the markers around the assistant turn "
            "(docs/training.md, 'Chat template')"
        ) from exc


def tokenize_sample(tokenizer, messages: list[dict[str, str]], template: str | None) -> dict:
    """``input_ids`` and ``assistant_masks`` (1 = the token carries loss) of a sample,
    exactly as ``SFTTrainer`` tokenizes it."""
    return tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True,
        chat_template=template,
    )


def split_by_length(
    samples: list[ChatSample], tokenizer, template: str | None, max_length: int
) -> LengthSplit:
    """Keep the samples of at most ``max_length`` tokens; drop (and log) the others.

    Raises:
        DatasetError: a sample whose assistant turn gets no loss tokens (a template
            without working ``{% generation %}`` markers).
    """
    kept, dropped, tokens, loss_tokens = [], [], 0, 0
    for s in samples:
        enc = tokenize_sample(tokenizer, s.messages, template)
        n, n_loss = len(enc["input_ids"]), sum(enc["assistant_masks"])
        if n_loss == 0:
            raise DatasetError(f"line {s.line}: the chat template marks no assistant tokens")
        if n > max_length:
            dropped.append(DroppedSample(line=s.line, tokens=n, reason="too_long", meta=s.meta))
            continue
        kept.append(s)
        tokens += n
        loss_tokens += n_loss
    if dropped:
        log.warning("dropped %d of %d samples longer than %d tokens (lines %s)", len(dropped),
                    len(samples), max_length, ", ".join(str(d.line) for d in dropped[:20]))
    return LengthSplit(kept, dropped, tokens, loss_tokens)


def load_split(data: Path | str, init: str, max_length: int) -> tuple[Any, int, LengthSplit]:
    """The tokenizer of ``init``, the number of samples in ``data`` and their length split
    (measured with the template training will use). The data is checked before the
    training extra is imported, so a bad line is bad input (exit 2) even without torch."""
    samples = read_chat_jsonl(data)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(init)
    split = split_by_length(samples, tokenizer, training_chat_template(tokenizer), max_length)
    return tokenizer, len(samples), split
