"""Formal-guided coverage closure: reach holes from solver witnesses, prove the rest
unreachable (``llm4cov formal``, the ``formal`` policy; see ``docs/formal.md``)."""

from llm4cov.formal.closure import (
    Closure,
    FormalConfig,
    FormalResult,
    GoalResult,
    analyze,
    close,
    excluded_overall,
)
from llm4cov.formal.tools import FormalToolError, find_tools, warmup

__all__ = [
    "Closure",
    "FormalConfig",
    "FormalResult",
    "FormalToolError",
    "GoalResult",
    "analyze",
    "close",
    "excluded_overall",
    "find_tools",
    "warmup",
]
