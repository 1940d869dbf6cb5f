"""The executor interface for simulator calls and its errors (the factory is
:mod:`llm4cov.exec.factory`)."""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol, runtime_checkable

from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.observation import Observation
from llm4cov.tasks.model import SourceFile, Task

DEFAULT_RETRIES = 3
"""Retries of a simulator call whose worker died (Ray's ``max_retries`` default)."""


class ExecutorKind(StrEnum):
    """Where simulator calls run: a local process pool, or Ray tasks."""

    LOCAL = "local"
    RAY = "ray"


class ExecutorError(ValueError):
    """An executor that cannot be set up as asked: unknown kind, ``address`` without
    Ray, Ray not installed, or a cluster that cannot be reached."""


class WorkerLost(RuntimeError):
    """A simulator call whose worker died (killed process, lost node) on every one of
    its ``attempts``: an infrastructure failure, never an observation."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message, attempts)
        self.message = message
        self.attempts = attempts

    def __str__(self) -> str:
        return f"{self.message} (worker lost on all {self.attempts} attempts)"


@runtime_checkable
class SimExecutor(Protocol):
    """Runs ``Sim(task, testbench)`` somewhere; ``workers`` simulations at a time.

    ``calls`` counts the simulator calls submitted so far (the cost unit of the field).
    A worker that dies makes its in-flight calls retry (at most ``DEFAULT_RETRIES``
    times, then :class:`WorkerLost`); the :class:`~llm4cov.sim.model.call.SimCall` travels
    with each call, so workers need no filesystem shared with the driver. An executor
    implements :meth:`simulate_call`; subclassing this protocol gives it
    :meth:`simulate`.
    """

    workers: int
    calls: int

    async def simulate_call(self, call: SimCall) -> Observation:
        """The observation of one simulator call (failures are observations).

        Raises:
            WorkerLost: the call's worker died on every attempt.
            ToolchainError: the simulator toolchain is missing on the worker.
        """
        ...

    async def simulate(
        self,
        task: Task,
        testbench: str,
        tb_name: str = "tb.sv",
        aux_files: tuple[SourceFile, ...] = (),
        any_instance: bool = False,
    ) -> Observation:
        """``simulate_call(SimCall(task, testbench, tb_name, aux_files, any_instance))``
        (same errors)."""
        return await self.simulate_call(SimCall(task, testbench, tb_name, tuple(aux_files),
                                                any_instance))

    def close(self) -> None:
        """Release workers (idempotent)."""
        ...
