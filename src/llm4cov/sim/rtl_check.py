"""Is a compile error the testbench's or the repository's?

A testbench that fails to compile with every error located in the RTL files may still be
at fault (a wrong parameter override makes the RTL's widths fail), so the RTL is tried
on its own once: a testbench that only instantiates the DUT (ports unconnected,
``-Wno-fatal`` keeps that a warning). When that fails too, the RTL does not compile
with the simulator, and asking a model for more testbenches would waste every round:
:func:`guard` raises :class:`RtlCompileError` (bad input, exit code 2) instead.
"""

from __future__ import annotations

import re

from llm4cov.sim.call import Simulate
from llm4cov.sim.observation import Observation, Status
from llm4cov.tasks.model import Task, TaskError

_ERROR = re.compile(r"%Error(?:-[A-Z0-9_]+)?: (?P<file>[^:\s][^:]*):(?P<line>\d+):")
CHECK_TOP = "llm4cov_rtl_check"


class RtlCompileError(TaskError):
    """The repository's RTL does not compile with the simulator on its own (the message
    quotes the simulator's first error)."""


def rtl_error_lines(obs: Observation, task: Task) -> list[str]:
    """The located ``%Error`` lines of a ``compile_error`` observation when every one of
    them points into the task's RTL files; empty otherwise (a testbench error, an
    unlocated error, another status)."""
    if obs.status is not Status.COMPILE_ERROR:
        return []
    rtl = {f.name for f in task.rtl_files}
    located = [(m["file"], line) for line in obs.log.splitlines()
               if (m := _ERROR.match(line))]
    if not located or any(name not in rtl for name, _ in located):
        return []
    return [line for _, line in located]


def instantiation_testbench(task: Task) -> str:
    """A testbench that only instantiates the DUT (with the task's parameter
    overrides) and finishes."""
    params = ", ".join(f".{k}({v})" for k, v in task.parameters.items())
    return (f"module {CHECK_TOP};\n"
            f"  {task.dut_module_name} {'#(' + params + ') ' if params else ''}"
            f"{task.dut_instance_name} ();\n"
            "  initial $finish;\nendmodule\n")


def guard(simulate: Simulate) -> Simulate:
    """``simulate`` that checks the RTL alone the first time a testbench fails to compile
    with errors only in RTL files (one extra simulator call, cached like any other).

    Raises (from the returned function):
        RtlCompileError: the RTL fails on its own; the message quotes its first error.
    """
    checked: set[str] = set()

    async def guarded(task: Task, testbench: str) -> Observation:
        obs = await simulate(task, testbench)
        if task.id in checked or not rtl_error_lines(obs, task):
            return obs
        checked.add(task.id)
        alone = await simulate(task, instantiation_testbench(task))
        errors = rtl_error_lines(alone, task)
        if errors:
            raise RtlCompileError(
                f"{task.id}: the RTL does not compile with the simulator on its own "
                f"(fix it first; no testbench can pass): {errors[0]}")
        return obs

    return guarded
