"""The executor interface for simulator calls."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from llm4cov.sim.config import SimConfig
from llm4cov.sim.observation import Observation
from llm4cov.tasks.model import SourceFile, Task


@runtime_checkable
class SimExecutor(Protocol):
    """Runs ``Sim(task, testbench)`` somewhere; ``workers`` simulations at a time.

    ``calls`` counts the simulator calls submitted so far (the cost unit of the field).
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
        """The observation of one simulator call (failures are observations)."""
        ...

    def close(self) -> None:
        """Release workers (idempotent)."""
        ...


EXECUTORS = ("local", "ray")


def get_executor(
    kind: str = "local", workers: int = 1, config: SimConfig | None = None, **options
) -> SimExecutor:
    """The executor named ``kind``: ``local`` (process pool) or ``ray`` (options:
    ``address``, ``runtime_env``, ``max_retries``).

    Raises:
        ValueError: unknown ``kind`` (the message lists the valid names).
        ImportError: ``ray`` without the ``[ray]`` extra installed.
    """
    if kind == "local":
        from llm4cov.exec.local import LocalExecutor

        return LocalExecutor(workers=workers, config=config)
    if kind == "ray":
        from llm4cov.exec.ray_executor import RayExecutor

        return RayExecutor(workers=workers, config=config, **options)
    raise ValueError(f"unknown executor {kind!r}; valid: {', '.join(EXECUTORS)}")
