"""Contamination filter: drop a training repo with a file whose ROUGE-L F-measure against
any benchmark file is >= a threshold (paper, "Contamination control": 50%).

ROUGE-L here is exactly rouge-score's ``rougeL`` F-measure: its default tokenizer
(lowercase, every non-alphanumeric character a separator, no stemming) and
``F = 2PR / (P + R)`` with ``P = LCS / len(a)``, ``R = LCS / len(b)``, i.e.
``F = 2 LCS / (len(a) + len(b))``. The LCS is computed with rapidfuzz's bit-parallel
``LCSseq`` (the same number as rouge-score's pure-Python table, much faster).

Speed: ``LCS <= |a ∩ b|`` (multiset intersection of the tokens), so
``F <= 2 |a ∩ b| / (len(a) + len(b))``. That bound is computed for one training file
against every benchmark file at once with a boolean occurrence matrix (token ``t``'s
k-th occurrence is one column), and the exact LCS runs only where the bound reaches the
threshold. The prefilter is lossless: it never drops a pair that could match.
"""

from __future__ import annotations

import functools
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rapidfuzz.distance import LCSseq

from llm4cov.tasks.model import Task
from llm4cov.tasks.sources import load_any_tasks


@functools.cache
def _tokenizer():
    # rouge-score pulls in nltk (about a second); load it only when a filter runs
    from rouge_score.tokenizers import DefaultTokenizer

    return DefaultTokenizer(use_stemmer=False)


def rouge_tokens(text: str) -> list[str]:
    """rouge-score's default tokens of ``text`` (lowercase alphanumeric runs)."""
    return _tokenizer().tokenize(text)


def rouge_l(a: list[str], b: list[str]) -> float:
    """ROUGE-L F-measure (0-1) of two token lists; 0 when either is empty."""
    if not a or not b:
        return 0.0
    from rouge_score import scoring

    lcs = LCSseq.similarity(a, b)
    return scoring.fmeasure(lcs / len(a), lcs / len(b))


def _occurrences(tokens: list[str]) -> list[str]:
    """Each token tagged with its occurrence number: ``a b a`` -> ``a#1 b#1 a#2``."""
    seen: Counter[str] = Counter()
    out = []
    for tok in tokens:
        seen[tok] += 1
        out.append(f"{tok}#{seen[tok]}")
    return out


def task_files(task: Task, include_reference: bool = False) -> list[tuple[str, str]]:
    """``(label, text)`` of a task's spec and RTL files (and its hidden reference
    testbench with ``include_reference``); labels are ``<task id>/<file name>``."""
    files = [*task.spec_files, *task.rtl_files]
    out = [(f"{task.id}/{f.name}", f.content) for f in files]
    if include_reference and task.reference_tb is not None:
        out.append((f"{task.id}/{task.reference_tb.name}", task.reference_tb.content))
    return out


@dataclass(frozen=True)
class Match:
    """The first file pair at or above the threshold: training file, benchmark file,
    ROUGE-L F-measure (0-1)."""

    file: str
    benchmark: str
    score: float


#: The phases of :meth:`ContaminationIndex.check` that :attr:`FilterStats.seconds` times.
PHASES = ("tokenize", "prefilter", "exact")


@dataclass
class FilterStats:
    """Work done so far: training files checked, file pairs covered by the prefilter,
    pairs that reached the exact LCS, and the wall seconds of each phase of
    :data:`PHASES` (``seconds["exact"]``: in exact LCS)."""

    files: int = 0
    pairs: int = 0
    exact: int = 0
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the wall seconds of the ``with`` body to ``seconds[phase]``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - t0


class ContaminationIndex:
    """Benchmark files indexed for :meth:`check`.

    ``threshold`` is the ROUGE-L F-measure (0-1) at or above which a file is a match.
    """

    def __init__(self, files: Iterable[tuple[str, str]], threshold: float = 0.5) -> None:
        self.threshold = threshold
        self.labels: list[str] = []
        self.tokens: list[list[str]] = []
        for label, text in files:
            toks = rouge_tokens(text)
            if toks:
                self.labels.append(label)
                self.tokens.append(toks)
        self.lengths = np.array([len(t) for t in self.tokens], dtype=np.float64)
        self._columns: dict[str, int] = {}
        cells: list[tuple[int, int]] = []
        for j, toks in enumerate(self.tokens):
            for key in _occurrences(toks):
                cells.append((self._columns.setdefault(key, len(self._columns)), j))
        self._matrix = np.zeros((len(self._columns), len(self.labels)), dtype=np.bool_)
        if cells:
            rows, cols = zip(*cells, strict=True)
            self._matrix[list(rows), list(cols)] = True
        self.stats = FilterStats()

    @classmethod
    def from_task_files(
        cls, paths: Iterable[Path | str], threshold: float = 0.5
    ) -> ContaminationIndex:
        """An index of every file (spec, RTL, reference testbench) of the benchmark task
        files at ``paths`` (any format :func:`llm4cov.tasks.sources.load_any_tasks` reads).

        Raises:
            TaskError: a file cannot be read as tasks.
        """
        files = [f for p in paths for t in load_any_tasks(p) for f in task_files(t, True)]
        return cls(files, threshold)

    def bounds(self, tokens: list[str]) -> np.ndarray:
        """Upper bounds of ROUGE-L F of ``tokens`` against every benchmark file."""
        cols = [c for key in _occurrences(tokens) if (c := self._columns.get(key)) is not None]
        inter = self._matrix[cols].sum(axis=0, dtype=np.int64) if cols else 0
        return 2.0 * inter / (len(tokens) + self.lengths)

    def check(self, files: Iterable[tuple[str, str]]) -> Match | None:
        """The first ``(label, text)`` file that matches a benchmark file, or None."""
        for label, text in files:
            with self.stats.timed("tokenize"):
                toks = rouge_tokens(text)
            self.stats.files += 1
            if not toks or not self.labels:
                continue
            with self.stats.timed("prefilter"):
                bounds = self.bounds(toks)
                candidates = np.flatnonzero(bounds >= self.threshold - 1e-12)
            self.stats.pairs += len(self.labels)
            with self.stats.timed("exact"):
                match = self._exact(label, toks, candidates[np.argsort(-bounds[candidates],
                                                                       kind="stable")])
            if match is not None:
                return match
        return None

    def _exact(self, label: str, toks: list[str], order: np.ndarray) -> Match | None:
        """The first benchmark file in ``order`` (indices, best bound first) whose exact
        ROUGE-L F with ``toks`` reaches the threshold, or None."""
        for j in order:
            self.stats.exact += 1
            score = rouge_l(toks, self.tokens[j])
            if score >= self.threshold:
                return Match(label, self.labels[j], score)
        return None

    def check_task(self, task: Task) -> Match | None:
        """The first spec or RTL file of ``task`` that matches a benchmark file, or None."""
        return self.check(task_files(task))
