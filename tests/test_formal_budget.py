"""Formal budgets count job seconds (``formal/tools.py``): the fewer of a job's wall seconds
and the CPU seconds of its whole process tree (counted by the kernel, inside the sandbox
too); the wall clock is only a backstop. The jobs here are Python one-liners that spend
a known amount of process time (``time.process_time``), so the expected counts hold on a
slow or loaded machine.
"""

from __future__ import annotations

import sys

import pytest

from llm4cov.formal.tools import (
    WALL_FACTOR,
    Budget,
    FormalToolError,
    JobMeter,
    find_tools,
    run_tool,
)
from llm4cov.sim.safety import isolation
from llm4cov.sim.safety.process import ProcessResult

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
"""A process that uses ``s`` CPU seconds (its own process time) and exits."""
TREE = ("import subprocess, sys\n"
        "for _ in range(2):\n"
        "    subprocess.run([sys.executable, '-c', {burn!r}])\n")
"""A job whose two grandchildren use ``s`` CPU seconds each, one after the other."""


@pytest.fixture(scope="module")
def tools():
    try:
        return find_tools()
    except FormalToolError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_job_s_cpu_is_its_whole_tree_s(tools, tmp_path, sandbox):
    """Two grandchildren of 0.6 CPU s each: 1.2 s and at most the interpreters' start-ups
    more. Inside the sandbox's PID namespace nothing of a finished job is left to count
    from outside (``wait4`` on bubblewrap says ~0), hence the shim's report."""
    if sandbox and not isolation.available():
        pytest.skip("bubblewrap cannot run here")
    job = TREE.format(burn=BURN.format(s=0.6))
    run = run_tool(tools, [sys.executable, "-c", job], tmp_path, 30, sandbox=sandbox)
    assert run.returncode == 0, run.output
    assert 1.2 <= run.cpu_s < 2.2, run.cpu_s
    assert run.record == b""  # the shim's report is not passed on


def test_a_sleeping_job_uses_no_budget_and_ends_at_the_wall_backstop(tools, tmp_path):
    run = run_tool(tools, ["sleep", "30"], tmp_path, 0.5)
    assert run.timed_out and run.exceeded is None
    assert WALL_FACTOR * 0.5 <= run.wall_s < 30
    assert run.cpu_s < 0.5


def test_a_job_past_its_cpu_seconds_is_killed_as_over_cpu(tools, tmp_path):
    """The CPU limit decides (the wall limit is far): killed at about 1 CPU second."""
    run = run_tool(tools, [sys.executable, "-c", "while True: pass"], tmp_path, 1.0,
                   wall_s=120)
    assert run.exceeded == "cpu" and not run.timed_out
    assert 1.0 <= run.cpu_s < 3.0


def test_each_solver_process_gets_its_cpu_seconds_and_no_more(tools, tmp_path):
    """A job of two solvers side by side (a prove job, ``engines=2``) ends when one of
    them has used its 1.5 CPU seconds: at about 1.5 wall seconds on two free cores
    (a tree limit of 3 s alone let one that runs on by itself take 3), and with the same
    CPU per solver on a loaded machine. Here the parent runs alone for its 1.5 s after
    its child exits at 0.5 s: the tree's 2 s stay under the tree limit of 3."""
    job = ("import os, time\n"
           "pid = os.fork()\n"
           "limit = 0.5 if pid == 0 else 60\n"
           "t = time.process_time()\n"
           "while time.process_time() - t < limit: pass\n"
           "os._exit(0)\n")
    run = run_tool(tools, [sys.executable, "-c", job], tmp_path, 1.5, wall_s=120, engines=2)
    assert run.exceeded == "cpu" and not run.timed_out
    assert 1.5 <= run.cpu_s < 3.0  # the parent's 1.5 s and more, the child's 0.5 s


def test_the_job_s_exit_status_and_signal_pass_through_the_shim(tools, tmp_path):
    three = run_tool(tools, [sys.executable, "-c", "print('out'); raise SystemExit(3)"],
                     tmp_path, 10)
    assert (three.returncode, three.output) == (3, "out\n")
    segv = run_tool(tools, [sys.executable, "-c",
                            "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                    tmp_path, 10)
    assert segv.signal_name == "SIGSEGV"


def test_a_run_needs_some_limit(tools, tmp_path):
    with pytest.raises(ValueError, match="CPU or a wall limit"):
        run_tool(tools, ["true"], tmp_path, None)


def _ran(cpu_s: float, wall_s: float) -> ProcessResult:
    return ProcessResult(returncode=0, output="", timed_out=False, wall_s=wall_s,
                         output_bytes=0, cpu_s=cpu_s)


def test_a_budget_spends_the_job_seconds_of_the_jobs_after_it_began():
    """A job counts the fewer of its CPU and wall seconds."""
    meter = JobMeter()
    meter.add(_ran(50.0, 60.0))  # before the budget: not counted
    budget = Budget(meter, 10.0)
    assert budget.left() == 10.0
    meter.add(_ran(4.0, 9.0))  # loaded: 4 s of CPU in 9 s
    meter.add(_ran(5.0, 2.5))  # a prove job's two processes on a quiet machine: 2.5 s
    assert budget.left() == pytest.approx(3.5)
    meter.add(_ran(4.0, 4.0))
    assert budget.left() == pytest.approx(-0.5)  # used up: no new round


def test_a_budget_on_a_loaded_machine_ends_at_three_wall_seconds_per_second():
    """1 CPU second in 28 wall seconds (a job that mostly waited): of the 30 wall seconds
    a 10-second budget allows, 2 are left, which count as 2/3 of a second."""
    meter = JobMeter()
    budget = Budget(meter, 10.0)
    meter.add(_ran(1.0, 28.0))
    assert budget.left() == pytest.approx(2 / 3)
