"""Simulator backends by name: the simulator-specific half of the evaluator.

``get_backend(name, config)`` builds one; a new simulator is one module implementing
:class:`~llm4cov.sim.backends.base.SimBackend` plus one :func:`register_backend` line
below (docs/architecture.md, "How to add a simulator backend"). ``SimConfig.backend``
(``--simulator``) names the one the evaluator uses.
"""

from __future__ import annotations

from collections.abc import Callable

from llm4cov.sim.backends.base import (
    Capabilities,
    CoverageFormat,
    PreprocessMessages,
    RunOutcome,
    SimBackend,
    SourcesRefused,
)
from llm4cov.sim.config import DEFAULT_BACKEND, SimConfig
from llm4cov.sim.safety.static_check import Preprocessor
from llm4cov.tasks.model import SourceFile, Task

BackendFactory = Callable[[SimConfig], SimBackend]
"""Builds a backend for a simulator config (may raise ``ToolchainError``)."""

_BACKENDS: dict[str, BackendFactory] = {}
_COVERAGE: dict[str, Callable[[], CoverageFormat]] = {}


class UnknownBackend(ValueError):
    """No backend is registered under the name asked for (bad input: exit 2)."""


class UnsupportedOption(ValueError):
    """The config asks for something the backend cannot do (bad input: exit 2)."""


def register_backend(name: str, factory: BackendFactory,
                     coverage: Callable[[], CoverageFormat] | None = None) -> None:
    """Make ``get_backend(name, ...)`` call ``factory`` (a later call replaces it);
    ``coverage``: returns how the reports read its coverage file (:func:`coverage_format`;
    called on first use, so that the registry imports no backend package eagerly;
    None: the backend's runs have no report of their coverage file)."""
    _BACKENDS[name] = factory
    _COVERAGE.pop(name, None)
    if coverage is not None:
        _COVERAGE[name] = coverage


def coverage_format(name: str) -> CoverageFormat | None:
    """How the reports read the coverage file of backend ``name`` (no toolchain needed);
    None when it registered none.

    Raises:
        UnknownBackend: no such backend (the message lists the valid names).
    """
    loader = _COVERAGE.get(check_name(name))
    return loader() if loader else None


def backend_names() -> list[str]:
    """The registered backend names, sorted."""
    return sorted(_BACKENDS)


def check_name(name: str) -> str:
    """``name`` when a backend is registered under it.

    Raises:
        UnknownBackend: no such backend (the message lists the valid names).
    """
    if name not in _BACKENDS:
        raise UnknownBackend(f"unknown simulator {name!r}; valid: "
                             f"{', '.join(backend_names())}")
    return name


def get_backend(name: str, config: SimConfig) -> SimBackend:
    """The backend registered as ``name``, for ``config``.

    Raises:
        UnknownBackend: no such backend (the message lists the valid names).
        ToolchainError: the simulator is not installed (exit 3; a fetchable one names
            its ``llm4cov toolchain get`` command).
    """
    return _BACKENDS[check_name(name)](config)


def check_supported(config: SimConfig, backend: SimBackend) -> None:
    """Refuse an option of ``config`` that ``backend`` cannot honour (never a silent
    no-op).

    Raises:
        UnsupportedOption: naming the option and the backend.
    """
    caps = backend.capabilities
    wanted = [("FSM coverage (--fsm)", config.fsm_coverage and not caps.fsm_coverage)]
    wanted += [(f"{fmt} waveforms (--trace {fmt})", fmt not in caps.waveforms)
               for fmt in config.waveforms()]
    missing = [what for what, lacking in wanted if lacking]
    if missing:
        raise UnsupportedOption(f"simulator {backend.name!r} has no {', '.join(missing)}")


def open_backend(config: SimConfig) -> SimBackend:
    """The backend ``config.backend`` names, checked against ``config``'s options: what
    the evaluator runs, and the pre-flight check of a command before it starts workers.

    Raises:
        UnknownBackend, UnsupportedOption: bad input (exit 2).
        ToolchainError: the simulator is not installed (exit 3).
    """
    backend = get_backend(config.backend, config)
    check_supported(config, backend)
    return backend


def preprocessor(backend: SimBackend, task: Task | None, tb: SourceFile) -> Preprocessor:
    """The static check's preprocessing run of ``tb`` on ``backend``: its build command
    for ``task``'s sources (None: the testbench alone, no RTL), its environment and
    message rules."""
    alone = Task.model_construct(id="static-check", rtl_files=[], dut_module_name="tb")
    return Preprocessor(tuple(backend.preprocess_command(task or alone, tb)), backend.env(),
                        backend.preprocess_messages)


def _verilator(build: str) -> BackendFactory:
    # The return type is the static check (mypy, CI step 1b) that VerilatorBackend
    # satisfies SimBackend, for every row of the version table.
    def factory(config: SimConfig) -> SimBackend:
        from llm4cov.sim.backends.verilator import VerilatorBackend
        from llm4cov.sim.backends.verilator.versions import BUILDS

        return VerilatorBackend(config, build=BUILDS[build])

    return factory


def _verilator_coverage() -> CoverageFormat:
    from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT

    return COVERAGE_FORMAT


register_backend("verilator", _verilator("verilator"), _verilator_coverage)
register_backend("verilator-5.052", _verilator("verilator-5.052"), _verilator_coverage)

__all__ = [
    "DEFAULT_BACKEND",
    "BackendFactory",
    "Capabilities",
    "CoverageFormat",
    "PreprocessMessages",
    "Preprocessor",
    "RunOutcome",
    "SimBackend",
    "SourcesRefused",
    "UnknownBackend",
    "UnsupportedOption",
    "backend_names",
    "check_name",
    "check_supported",
    "coverage_format",
    "get_backend",
    "open_backend",
    "preprocessor",
    "register_backend",
]
