"""Executors: where simulator calls run (a local process pool by default, or Ray).

Every long command (gen, bench, synth) submits simulations through a
:class:`SimExecutor`, so the same code runs on one machine or on a cluster
(docs/scale.md).
"""

from llm4cov.exec.base import (
    ExecutorError,
    ExecutorKind,
    SimExecutor,
    WorkerLost,
)
from llm4cov.exec.factory import get_executor
from llm4cov.exec.local import LocalExecutor

__all__ = ["ExecutorError", "ExecutorKind", "LocalExecutor", "SimExecutor", "WorkerLost",
           "get_executor"]
