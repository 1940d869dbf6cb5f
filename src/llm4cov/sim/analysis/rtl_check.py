"""Is a compile error the testbench's or the repository's?

A testbench that fails to compile with every error located in the RTL files may still be
at fault (a wrong parameter override makes the RTL's widths fail), so the RTL is tried
on its own once: a testbench that only instantiates the DUT (ports unconnected,
``-Wno-fatal`` keeps that a warning). When that fails too, the RTL does not compile
with the simulator: :func:`blame` marks the observation ``rtl_error`` with a note that
says so (the evaluator does it for every call, so ``sim``, ``gen``, ``bench`` and
``synth`` see the same), and :func:`guard` turns it into :class:`RtlCompileError`
(bad input, exit code 2): asking a model for more testbenches would waste every round.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from llm4cov.sim.analysis import hints
from llm4cov.sim.model.call import Simulate
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.tasks.hdl import parse_design
from llm4cov.tasks.interface_ports import InterfacePort
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
    overrides) and finishes; an interface port gets an instance of its interface (left
    unconnected, the pinned Verilator fails internally), the signals that instance
    takes declared as plain variables."""
    params = ", ".join(f".{k}({v})" for k, v in task.parameters.items())
    body, conns = "", ""
    interfaces = interface_ports(task)
    if interfaces:
        signals = dict.fromkeys(v for i in interfaces for _, v in i.connections)
        body = "".join(f"  logic {s};\n" for s in signals) + \
            "".join(f"  {i.instantiation()}\n" for i in interfaces)
        conns = ", ".join(f".{i.name}({i.instance})" for i in interfaces)
    return (f"module {CHECK_TOP};\n{body}"
            f"  {task.dut_module_name} {'#(' + params + ') ' if params else ''}"
            f"{task.dut_instance_name} ({conns});\n"
            "  initial $finish;\nendmodule\n")


def interface_ports(task: Task) -> list[InterfacePort]:
    """The DUT's interface ports (none when pyslang cannot read the design)."""
    try:
        return parse_design(task.rtl_files, task.include_dirs, task.defines
                            ).flat_ports(task.dut_module_name, task.parameters)[1]
    except Exception:  # (a design pyslang cannot read: ports left unconnected)
        return []


def blame(obs: Observation, task: Task, rtl_alone: Callable[[Task], list[str]]) -> Observation:
    """``obs``, marked ``rtl_error`` with :func:`~llm4cov.sim.analysis.hints.rtl_error_note` first
    among its notes when every located error lies in the RTL files and the RTL fails on
    its own too (``rtl_alone(task)``: :func:`rtl_error_lines` of the
    :func:`instantiation_testbench`, asked only then)."""
    if not rtl_error_lines(obs, task):
        return obs
    errors = rtl_alone(task)
    if not errors:
        return obs
    where = _ERROR.match(errors[0])
    assert where is not None  # rtl_error_lines keeps matching lines only
    note = hints.rtl_error_note(f"{where['file']}:{where['line']}", errors[0], len(errors))
    return obs.model_copy(update={"rtl_error": True, "notes": [note, *obs.notes]})


def stop_on_rtl_error(obs: Observation, task: Task) -> Observation:
    """``obs``, unless it is marked ``rtl_error`` (the evaluator's :func:`blame`).

    Raises:
        RtlCompileError: the RTL fails on its own; the message quotes its first error.
    """
    if obs.rtl_error:
        raise RtlCompileError(
            f"{task.id}: the RTL does not compile with the simulator on its own "
            f"(fix it first; no testbench can pass): {rtl_error_lines(obs, task)[0]}")
    return obs


def guard(simulate: Simulate) -> Simulate:
    """``simulate`` that stops at the first observation marked ``rtl_error``
    (:func:`stop_on_rtl_error`).

    Raises (from the returned function):
        RtlCompileError: the RTL fails on its own; the message quotes its first error.
    """

    async def guarded(task: Task, testbench: str) -> Observation:
        return stop_on_rtl_error(await simulate(task, testbench), task)

    return guarded
