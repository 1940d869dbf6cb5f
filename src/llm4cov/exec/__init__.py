"""Executors: where simulator calls run (a local process pool by default).

Every long command (gen, bench, synth) submits simulations through a
:class:`SimExecutor`, so the same code runs on one machine or on a cluster.
"""

from llm4cov.exec.base import SimExecutor, get_executor
from llm4cov.exec.local import LocalExecutor

__all__ = ["LocalExecutor", "SimExecutor", "get_executor"]
