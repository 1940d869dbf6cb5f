"""Simulator backends by name: the simulator-specific half of the evaluator.

``get_backend(name, config)`` builds one; a new simulator is one module implementing
:class:`~llm4cov.sim.backends.base.SimBackend` plus one :func:`register_backend` line
below (docs/architecture.md, "How to add a simulator backend").
"""

from __future__ import annotations

from collections.abc import Callable

from llm4cov.sim.backends.base import RunOutcome, SimBackend
from llm4cov.sim.config import SimConfig

BackendFactory = Callable[[SimConfig], SimBackend]
"""Builds a backend for a simulator config (may raise ``ToolchainError``)."""

DEFAULT_BACKEND = "verilator"

_BACKENDS: dict[str, BackendFactory] = {}


class UnknownBackend(ValueError):
    """No backend is registered under the name asked for."""


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``get_backend(name, ...)`` call ``factory`` (a later call replaces it)."""
    _BACKENDS[name] = factory


def backend_names() -> list[str]:
    """The registered backend names, sorted."""
    return sorted(_BACKENDS)


def get_backend(name: str, config: SimConfig) -> SimBackend:
    """The backend registered as ``name``, for ``config``.

    Raises:
        UnknownBackend: no such backend (the message lists the valid names).
        ToolchainError: the simulator is not installed.
    """
    try:
        factory = _BACKENDS[name]
    except KeyError:
        raise UnknownBackend(f"unknown simulator backend {name!r}; valid: "
                             f"{', '.join(backend_names())}") from None
    return factory(config)


def _verilator(config: SimConfig) -> SimBackend:
    from llm4cov.sim.backends.verilator import VerilatorBackend

    return VerilatorBackend(config)


register_backend("verilator", _verilator)

__all__ = ["DEFAULT_BACKEND", "BackendFactory", "RunOutcome", "SimBackend", "UnknownBackend",
           "backend_names", "get_backend", "register_backend"]
