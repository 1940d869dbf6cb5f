"""Token counts for curation and the dataset card.

The paper measures "short" repos (<= 1k tokens) with the model's tokenizer. With a
local tokenizer (a ``tokenizer.json`` file, or a model directory that ``transformers``
can load offline) we count exactly that. Without one, :class:`ApproxTokenCounter`
counts pieces the way byte-level BPE pre-tokenizers of the Qwen family split text
(runs of letters, single digits, runs of punctuation, newlines); it needs no files and
is not calibrated against any particular vocabulary. The counter's ``name`` is written
into every exported sample and the dataset card.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

_PIECES = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]+|\n+")


class TokenCounter(Protocol):
    """Counts tokens of a text; ``name`` says which tokenizer."""

    name: str

    def count(self, text: str) -> int: ...


class ApproxTokenCounter:
    """Approximate count: letter runs + single digits + punctuation runs + newline runs."""

    name = "approx-regex"

    def count(self, text: str) -> int:
        return len(_PIECES.findall(text))


class TokenizerCounter:
    """Exact count with a local tokenizer (no special tokens added).

    Raises:
        ValueError: ``path`` is neither a tokenizer file nor a loadable model directory.
    """

    def __init__(self, path: Path | str) -> None:
        path = Path(path)
        self.name = f"tokenizer:{path.name}"
        if not path.exists():
            raise ValueError(f"{path}: no such tokenizer file or model directory")
        try:
            if path.is_file():
                from tokenizers import Tokenizer

                fast = Tokenizer.from_file(str(path))
                self._count = lambda text: len(fast.encode(text, add_special_tokens=False).ids)
            else:
                from transformers import AutoTokenizer

                tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                self._count = lambda text: len(tok.encode(text, add_special_tokens=False))
        except Exception as exc:  # tokenizers raises bare Exception for bad files
            raise ValueError(f"{path}: cannot load a tokenizer: {exc}") from exc

    def count(self, text: str) -> int:
        return self._count(text)


def get_token_counter(tokenizer: str | None) -> TokenCounter:
    """A :class:`TokenizerCounter` for a local path, or the approximate counter for None.

    Raises:
        ValueError: the path cannot be loaded as a tokenizer.
    """
    return ApproxTokenCounter() if not tokenizer else TokenizerCounter(tokenizer)
