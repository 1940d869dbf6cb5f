"""Simulations on a local process pool (the default executor)."""

from __future__ import annotations

import asyncio
import dataclasses
from concurrent.futures import ProcessPoolExecutor

from llm4cov.sim.config import SimConfig, usable_cpus
from llm4cov.sim.observation import Observation
from llm4cov.tasks.model import SourceFile, Task

_EVALUATOR = None


def _init_worker(config: SimConfig | None) -> None:
    global _EVALUATOR
    from llm4cov.sim.evaluator import Evaluator

    _EVALUATOR = Evaluator(config)


def _evaluate(task: Task, testbench: str, tb_name: str, aux_files, any_instance: bool):
    return _EVALUATOR.evaluate(
        task, testbench, tb_name=tb_name, aux_files=aux_files, any_instance=any_instance
    )


class LocalExecutor:
    """``workers`` worker processes, each with its own :class:`Evaluator`.

    ``workers`` defaults to the number of usable CPUs. An automatic
    ``SimConfig.build_jobs`` (0) becomes CPUs / workers make jobs per build (at least
    one), so simulations running at once do not oversubscribe the machine.
    """

    def __init__(self, workers: int | None = None, config: SimConfig | None = None) -> None:
        cpus = usable_cpus()
        self.workers = max(1, workers or cpus)
        config = config or SimConfig()
        if config.build_jobs == 0:
            config = dataclasses.replace(config, build_jobs=max(1, cpus // self.workers))
        self.config = config
        self.calls = 0
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, initializer=_init_worker, initargs=(self.config,)
            )
        return self._pool

    async def simulate(
        self,
        task: Task,
        testbench: str,
        tb_name: str = "tb.sv",
        aux_files: tuple[SourceFile, ...] = (),
        any_instance: bool = False,
    ) -> Observation:
        self.calls += 1
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._get_pool(), _evaluate, task, testbench, tb_name, tuple(aux_files), any_instance
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
