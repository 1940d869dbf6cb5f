"""Executors: where simulator calls run (a local process pool by default, or Ray).

Every long command (gen, bench, synth) submits simulations through a
:class:`SimExecutor`, so the same code runs on one machine or on a cluster
(docs/scale.md).
"""

from typing import TYPE_CHECKING

from llm4cov.exec.base import (
    ExecutorError,
    ExecutorKind,
    SimExecutor,
    WorkerLost,
)
from llm4cov.exec.factory import get_executor

if TYPE_CHECKING:
    from llm4cov.exec.local import LocalExecutor


def __getattr__(name: str) -> "type[LocalExecutor]":
    """``LocalExecutor`` is imported when first used (process pools and asyncio are
    not needed to start a command)."""
    if name == "LocalExecutor":
        from llm4cov.exec.local import LocalExecutor

        return LocalExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ExecutorError", "ExecutorKind", "LocalExecutor", "SimExecutor", "WorkerLost",
           "get_executor"]
