"""Held-out SFT loss: how well a checkpoint predicts testbenches it was not trained on.

The loss is the one SFT minimises (cross-entropy on the assistant turn only, the
tokens the training chat template marks, :func:`llm4cov.train.data.tokenize_sample`),
averaged over every loss token of the held-out samples (nats per token). Samples longer
than ``max_length`` are left out, as training leaves them out. Used to pick epochs,
learning rate and batch size on a held-out slice of the training repos
(``benchmarks/sft_sweep.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from llm4cov.train.data import (
    DatasetError,
    read_chat_jsonl,
    tokenize_sample,
    training_chat_template,
)


@dataclass(frozen=True)
class HeldoutLoss:
    """Mean loss per assistant token (nats), the loss tokens and samples it covers, and
    the samples left out as longer than ``max_length``."""

    loss: float
    tokens: int
    samples: int
    too_long: int


def heldout_loss(checkpoint: Path | str, data: Path | str, max_length: int) -> HeldoutLoss:
    """The held-out loss of ``checkpoint`` (a transformers causal LM directory) on the
    chat JSONL ``data`` (the format ``llm4cov train`` reads), on the CPU or the first GPU.

    Raises:
        DatasetError: unreadable data, or no sample fits ``max_length``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    samples = read_chat_jsonl(data)
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    template = training_chat_template(tokenizer)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(str(checkpoint), dtype=torch.float32)
    model.to(device).eval()
    total, tokens, used, too_long = 0.0, 0, 0, 0
    with torch.inference_mode():
        for sample in samples:
            enc = tokenize_sample(tokenizer, sample.messages, template)
            ids, mask = enc["input_ids"], enc["assistant_masks"]
            if len(ids) > max_length:
                too_long += 1
                continue
            x = torch.tensor([ids], device=device)
            logits = model(x).logits[0, :-1].float()
            target = x[0, 1:]
            keep = torch.tensor(mask[1:], device=device, dtype=torch.bool)
            losses = torch.nn.functional.cross_entropy(logits[keep], target[keep],
                                                       reduction="sum")
            total += float(losses)
            tokens += int(keep.sum())
            used += 1
    if not used:
        raise DatasetError(f"{data}: no held-out sample fits max_length {max_length}")
    return HeldoutLoss(total / tokens, tokens, used, too_long)
