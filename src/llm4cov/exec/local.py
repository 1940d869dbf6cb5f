"""Simulations on a local process pool (the default executor).

A worker process that dies (killed, out of memory) breaks a ``ProcessPoolExecutor``:
every call in flight on it fails with ``BrokenProcessPool``. The executor then replaces
the pool and retries those calls, each at most ``max_retries`` times; only a call that
keeps losing its worker raises :class:`~llm4cov.exec.base.WorkerLost`. The pool stops
its surviving workers with SIGTERM; they take their running simulations (their own
process groups) down with them before exiting.

Workers never outlive the process that owns the pool, even when it is SIGKILLed: each
worker watches its parent (a thread polling ``getppid`` every
:data:`PARENT_POLL_S`) and, once re-parented, kills its simulations' process groups and
exits. (``PR_SET_PDEATHSIG`` is not used for this: it fires when the *thread* that
forked the worker ends, and the pool may fork from any thread.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from llm4cov.exec.base import DEFAULT_RETRIES, SimExecutor, WorkerLost
from llm4cov.exec.worker import evaluate
from llm4cov.sim.config import SimConfig, usable_cpus
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.observation import Observation
from llm4cov.util.procs import child_pids

log = logging.getLogger(__name__)
T = TypeVar("T")

PARENT_POLL_S = 0.2
"""How often a worker checks that the pool's owner is alive (seconds)."""
_KILL_PASSES = 3  # a simulation may start while the first pass runs


def _kill_children_and_exit(code: int) -> None:
    """SIGKILL the process group of every child (each simulation leads its own group,
    ``sim/safety/process.py``), then end this worker at once."""
    for _ in range(_KILL_PASSES):
        for pid in child_pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    os._exit(code)


def _on_sigterm(signum: int, frame: Any) -> None:
    _kill_children_and_exit(128 + signum)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    _kill_children_and_exit(128 + signal.SIGKILL)


def _init_worker(parent: int) -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    threading.Thread(target=_watch_parent, args=(parent,), name="llm4cov-parent-watch",
                     daemon=True).start()


class LocalExecutor(SimExecutor):
    """``workers`` worker processes, each with its own :class:`Evaluator`
    (:func:`llm4cov.exec.worker.evaluate`).

    ``workers`` defaults to the number of usable CPUs. An automatic
    ``SimConfig.build_jobs`` (0) becomes CPUs / workers make jobs per build (at least
    one), so simulations running at once do not oversubscribe the machine.
    ``restarts`` counts pool replacements after a worker died.
    """

    def __init__(self, workers: int | None = None, config: SimConfig | None = None,
                 max_retries: int = DEFAULT_RETRIES) -> None:
        cpus = usable_cpus()
        self.workers = max(1, workers or cpus)
        config = config or SimConfig()
        if config.build_jobs == 0:
            config = dataclasses.replace(config, build_jobs=max(1, cpus // self.workers))
        self.config = config
        self.max_retries = max_retries
        self.calls = 0
        self.restarts = 0
        self._pool: ProcessPoolExecutor | None = None
        self._generation = 0

    def _current(self) -> tuple[ProcessPoolExecutor, int]:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("fork"),
                initializer=_init_worker, initargs=(os.getpid(),),
            )
        return self._pool, self._generation

    def _replace(self, generation: int) -> None:
        """Drop the broken pool of ``generation`` (once, whichever call sees it first)."""
        if generation != self._generation or self._pool is None:
            return
        broken, self._pool = self._pool, None
        self._generation += 1
        self.restarts += 1
        broken.shutdown(wait=False, cancel_futures=True)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker process (``fn`` and ``args`` must pickle).

        Raises:
            WorkerLost: the worker running it died on ``max_retries + 1`` attempts.
            Exception: whatever ``fn`` raised.
        """
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            attempt += 1
            pool, generation = self._current()
            try:
                return await loop.run_in_executor(pool, fn, *args)
            except BrokenProcessPool as exc:
                self._replace(generation)
                if attempt > self.max_retries:
                    raise WorkerLost(f"{getattr(fn, '__name__', fn)}: a worker process "
                                     "died", attempt) from exc
                log.warning("a worker process died; retrying its call (attempt %d of %d)",
                            attempt + 1, self.max_retries + 1)

    async def simulate_call(self, call: SimCall) -> Observation:
        self.calls += 1
        return await self.run(evaluate, self.config, call)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
