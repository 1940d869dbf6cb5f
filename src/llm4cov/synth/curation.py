"""Stage-0 rebalancing of short-context points (paper, "Stages").

Among the kept points, those whose repo context has at most ``short_tokens`` tokens are
subsampled: ``short_direct_keep`` of the direct-inference points and
``short_agentic_keep`` of the agentic ones (paper: 1/3 and 1/2). Long-context points are
all kept. Of ``n`` short points of a kind, exactly ``floor(n * keep + 0.5)`` stay,
drawn with ``random.Random(f"{seed}/{kind}")`` from the points sorted by key, so the
result is the same on every machine and in every run.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from llm4cov.synth.config import RebalanceConfig
from llm4cov.synth.records import PointKind


@dataclass(frozen=True)
class CurationItem:
    """A kept point to rebalance: its unique key, kind and repo context length (tokens)."""

    key: str
    kind: PointKind
    context_tokens: int


def keep_count(n: int, fraction: float) -> int:
    """How many of ``n`` points a keep fraction leaves: ``floor(n * fraction + 0.5)``."""
    return math.floor(n * fraction + 0.5)


def rebalance(items: list[CurationItem], config: RebalanceConfig) -> set[str]:
    """The keys that survive rebalancing (see the module docstring)."""
    kept = {i.key for i in items if i.context_tokens > config.short_tokens}
    fractions = {PointKind.DIRECT: config.short_direct_keep,
                 PointKind.AGENTIC: config.short_agentic_keep}
    for kind, fraction in fractions.items():
        short = sorted(i.key for i in items
                       if i.kind is kind and i.context_tokens <= config.short_tokens)
        rng = random.Random(f"{config.seed}/{kind.value}")
        kept.update(rng.sample(short, keep_count(len(short), fraction)))
    return kept
