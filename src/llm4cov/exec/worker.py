"""The worker side of every executor: one :class:`SimCall` through a per-process
:class:`~llm4cov.sim.evaluator.Evaluator`.

The local process pool and Ray both run :func:`evaluate`, so a call is cached and
observed the same way wherever it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm4cov.sim.config import SimConfig
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.observation import Observation

if TYPE_CHECKING:
    from llm4cov.sim.evaluator import Evaluator

_EVALUATORS: dict[SimConfig, Evaluator] = {}


def evaluate(config: SimConfig, call: SimCall) -> Observation:
    """The observation of ``call`` on this process's evaluator for ``config``, on the
    simulator backend ``config.backend`` names (built on first use, here and not in a
    worker initializer, so that a missing toolchain is the call's error rather than a
    broken worker). A call with ``keep_coverage`` comes back with the run's coverage
    data (:meth:`~llm4cov.sim.evaluator.Evaluator.evaluate_call`).

    Raises:
        UnknownBackend, UnsupportedOption: ``config`` names no backend, or asks for
            something it cannot do.
        ToolchainError: the simulator toolchain is missing on this worker.
        SandboxUnavailable: ``config.sandbox`` is on and the OS sandbox cannot run here.
    """
    if config not in _EVALUATORS:
        from llm4cov.sim.evaluator import Evaluator

        _EVALUATORS[config] = Evaluator(config)  # its backend: open_backend(config)
    return _EVALUATORS[config].evaluate_call(call)
