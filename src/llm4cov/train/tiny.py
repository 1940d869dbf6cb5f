"""A tiny randomly initialized Qwen3 checkpoint, built offline: the CPU smoke path.

The tokenizer is a byte-level BPE trained here on the given texts, with Qwen's special
tokens (``<|endoftext|>`` pad, ``<|im_start|>``, ``<|im_end|>`` end of turn) and the
chat template of ``Qwen/Qwen3-4B-Instruct-2507`` (the copy TRL keeps to recognize it),
so training takes the same path as the real student: TRL swaps in its training variant
with ``{% generation %}`` markers for assistant-only loss. The model is the Qwen3
architecture (``Qwen3Config``) at toy size. Nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from llm4cov.train.data import read_chat_jsonl

PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"


def train_tokenizer(texts: Iterable[str], vocab_size: int = 512):
    """A byte-level BPE tokenizer (``transformers`` fast tokenizer) trained on ``texts``,
    with Qwen's special tokens and the Qwen3-Instruct-2507 chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_instruct_2507_chat_template

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=IM_END, pad_token=PAD)
    fast.chat_template = qwen3_instruct_2507_chat_template
    return fast


def build_tiny_checkpoint(
    out: Path | str,
    texts: Iterable[str],
    vocab_size: int = 512,
    hidden_size: int = 64,
    layers: int = 2,
    seed: int = 0,
) -> Path:
    """Write a random Qwen3 model (``layers`` x ``hidden_size``, 4 query / 2 key-value
    heads) and its tokenizer to ``out``; returns ``out``. Same ``seed`` and texts, same
    weights."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    out = Path(out)
    tokenizer = train_tokenizer(texts, vocab_size)
    pad, eos = tokenizer.convert_tokens_to_ids([PAD, IM_END])
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=hidden_size // 4,
        max_position_embeddings=40960,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos,
        pad_token_id=pad,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=[eos, pad], pad_token_id=pad)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def texts_of(data: Path | str) -> list[str]:
    """Every message text of a chat JSONL file (the tokenizer's training corpus)."""
    return [m["content"] for s in read_chat_jsonl(data) for m in s.messages]
