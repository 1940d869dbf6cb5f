"""One simulator call as a value: what ``Sim(repo, testbench)`` is asked.

A :class:`SimCall` travels unchanged from a caller through an executor
(:mod:`llm4cov.exec`) and its worker to :meth:`Evaluator.evaluate_call
<llm4cov.sim.evaluator.Evaluator.evaluate_call>`, so every path caches and observes
the same call identically.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from llm4cov.sim.model.observation import Observation
from llm4cov.tasks.model import SourceFile, Task

Simulate = Callable[[Task, str], Awaitable[Observation]]
"""An async simulator call ``simulate(task, testbench) -> Observation``, as the agent
loop and synth take it (e.g. :meth:`SimExecutor.simulate <llm4cov.exec.SimExecutor.simulate>`)."""


@dataclass(frozen=True)
class SimCall:
    """Simulate ``testbench`` (compiled as ``tb_name``, with ``aux_files`` beside it)
    against ``task``'s RTL.

    The testbench must instantiate ``task.dut_module_name`` as
    ``task.dut_instance_name``; ``any_instance=True`` accepts any instance name (for
    third-party testbenches such as the LLM corpus). ``keep_coverage=True`` asks for
    the run's raw coverage with the observation (``Observation.coverage_data``, for the
    reports; :meth:`llm4cov.sim.evaluator.Evaluator.evaluate_call`): such a call always
    simulates (no result-cache lookup, nothing stored). Picklable: it is the argument
    of a worker process or a Ray task.
    """

    task: Task
    testbench: str
    tb_name: str = "tb.sv"
    aux_files: tuple[SourceFile, ...] = ()
    any_instance: bool = False
    keep_coverage: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "aux_files", tuple(self.aux_files))

    @property
    def instance(self) -> str | None:
        """The DUT instance name the testbench must use; None when any is accepted."""
        return None if self.any_instance else self.task.dut_instance_name
