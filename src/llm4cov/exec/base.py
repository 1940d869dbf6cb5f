"""The executor interface for simulator calls, its errors and the factory."""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol, runtime_checkable

from llm4cov.sim.config import SimConfig
from llm4cov.sim.observation import Observation
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
    times, then :class:`WorkerLost`); the task and testbench travel with each call, so
    workers need no filesystem shared with the driver.
    """

    workers: int
    calls: int

    async def simulate(
        self,
        task: Task,
        testbench: str,
        tb_name: str = "tb.sv",
        aux_files: tuple[SourceFile, ...] = (),
        any_instance: bool = False,
    ) -> Observation:
        """The observation of one simulator call (failures are observations).

        Raises:
            WorkerLost: the call's worker died on every attempt.
            ToolchainError: the simulator toolchain is missing on the worker.
        """
        ...

    def close(self) -> None:
        """Release workers (idempotent)."""
        ...


def get_executor(
    kind: ExecutorKind | str = ExecutorKind.LOCAL,
    workers: int | None = None,
    config: SimConfig | None = None,
    address: str | None = None,
) -> SimExecutor:
    """The executor named ``kind``.

    ``local``: ``workers`` processes (default: usable CPUs). ``ray``: Ray tasks; with
    ``address`` (``auto`` or ``HOST:PORT``) on a running cluster, otherwise on a local
    Ray instance of ``workers`` CPUs (see :class:`~llm4cov.exec.ray_executor.RayExecutor`).

    Raises:
        ExecutorError: unknown ``kind`` (the message lists the valid names),
            ``address`` with ``local``, Ray not installed, or a cluster not reachable.
    """
    try:
        kind = ExecutorKind(kind)
    except ValueError:
        valid = ", ".join(k.value for k in ExecutorKind)
        raise ExecutorError(f"unknown executor {kind!r}; valid: {valid}") from None
    if kind is ExecutorKind.LOCAL:
        if address is not None:
            raise ExecutorError("--address names a Ray cluster: it needs --executor ray")
        from llm4cov.exec.local import LocalExecutor

        return LocalExecutor(workers=workers, config=config)
    try:
        from llm4cov.exec.ray_executor import RayExecutor
    except ImportError as exc:
        raise ExecutorError(f"--executor ray needs the ray extra (pip install "
                            f"'llm4cov[ray]'): {exc}") from exc
    try:
        return RayExecutor(workers=workers, config=config, address=address)
    except ConnectionError as exc:
        raise ExecutorError(f"cannot reach the Ray cluster at {address}: {exc}") from exc
