"""Subprocess control: a simulation dies with the worker that started it, also inside
the OS sandbox; SIGTERM reaches it on timeout; the record pipe carries only its record."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm4cov.sim.safety import isolation
from llm4cov.sim.safety.process import Sandbox, run_limited
from llm4cov.util.procs import child_pids

CHILD = """
import sys
from llm4cov.sim.safety.process import run_limited
run_limited(["sh", "-c", "echo $$ > " + sys.argv[1] + "; exec sleep 60"], cwd="/tmp",
            env={"PATH": "/bin:/usr/bin"}, timeout_s=120)
"""


def _state(pid: int) -> str | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None  # gone (reaped)
    return next(line.split()[1] for line in status.splitlines() if line.startswith("State:"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_child_is_killed_when_its_parent_is_killed(tmp_path):
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen([sys.executable, "-c", CHILD, str(pid_file)])
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert _state(child) in ("S", "R")
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while _state(child) not in (None, "Z"):  # Z: killed, waiting for init to reap it
        assert time.monotonic() < deadline, "the simulation outlived its parent"
        time.sleep(0.05)


# -- the OS sandbox and the record pipe ----------------------------------------------

needs_sandbox = pytest.mark.skipif(not isolation.available(),
                                   reason="bubblewrap cannot run here (no user namespaces)")
TRAP = ("trap 'echo got-term > {out}; exit 7' TERM; echo ready; "
        "while true; do sleep 0.05; done")


@needs_sandbox
def test_a_sandboxed_child_gets_sigterm_before_the_kill_on_timeout(tmp_path):
    """The driver writes its coverage on SIGTERM: the sandbox must not swallow it."""
    result = run_limited(["sh", "-c", TRAP.format(out=tmp_path / "term")], cwd=str(tmp_path),
                         env={}, timeout_s=1.0, grace_s=5.0, sandbox=Sandbox())
    assert result.timed_out
    assert (tmp_path / "term").read_text() == "got-term\n"
    assert result.returncode == 7


@needs_sandbox
def test_a_sandboxed_death_by_signal_reads_as_without_the_sandbox(tmp_path):
    result = run_limited(["sh", "-c", "kill -XCPU $$"], cwd=str(tmp_path), env={},
                         timeout_s=30, sandbox=Sandbox())
    assert (result.returncode, result.signal_name) == (-24, "SIGXCPU")


@pytest.mark.parametrize("sandboxed", [False, True])
def test_the_record_pipe_carries_what_the_child_writes_there_only(tmp_path, sandboxed):
    if sandboxed and not isolation.available():
        pytest.skip("bubblewrap cannot run here")
    script = 'echo to-stdout; printf "rec-%s\\n" x >&"$REC_FD"'
    result = run_limited(["bash", "-c", script], cwd=str(tmp_path), env={}, timeout_s=30,
                         record_env="REC_FD", sandbox=Sandbox() if sandboxed else None)
    assert (result.record, result.record_bytes) == (b"rec-x\n", 6)
    assert result.output == "to-stdout\n"


SANDBOXED_CHILD = """
import sys
from llm4cov.sim.safety.process import Sandbox, run_limited
run_limited(["sh", "-c", "echo started > started; exec sleep 60"], cwd=sys.argv[1],
            env={}, timeout_s=120, sandbox=Sandbox())
"""


@needs_sandbox
def test_a_sandboxed_child_is_killed_when_its_parent_is_killed(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", SANDBOXED_CHILD, str(tmp_path)])
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.05)
    tree, todo = [], child_pids(parent.pid)
    while todo:  # bwrap, the sandbox's init, sleep (host pids)
        tree.append(todo.pop())
        todo += child_pids(tree[-1])
    assert len(tree) >= 3
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while any(_state(pid) not in (None, "Z") for pid in tree):
        assert time.monotonic() < deadline, "the sandboxed simulation outlived its parent"
        time.sleep(0.05)


def test_a_child_filling_its_work_dir_with_many_files_is_killed(tmp_path):
    """RLIMIT_FSIZE bounds one file; the work-dir bound catches many files together."""
    from llm4cov.sim.safety.process import Limits

    writer = ("import itertools, time\n"  # paced, so the test never fills the disk
              "for i in itertools.count():\n"
              "    open(f'fill{i}.bin', 'wb').write(b'x' * (1 << 20)); time.sleep(0.01)\n")
    run = run_limited([sys.executable, "-c", writer], cwd=str(tmp_path), env={},
                      timeout_s=600, limits=Limits(file_bytes=2 << 20, dir_bytes=8 << 20))
    assert run.dir_exceeded and not run.timed_out
    assert run.signal_name == "SIGKILL"  # only the work-dir bound stops this writer


def test_a_timeout_is_counted_as_a_wall_clock_stop(tmp_path):
    """The evaluator caches no verdict reached while this count grew (a twenty-seventh
    red team: a preprocessing run held up past its 30 s gave a cached ``rejected``)."""
    from llm4cov.sim.safety import wall_clock

    before = wall_clock.count()
    assert run_limited(["true"], cwd=str(tmp_path), env={}, timeout_s=30).returncode == 0
    assert wall_clock.count() == before
    assert run_limited(["sleep", "30"], cwd=str(tmp_path), env={}, timeout_s=0.3).timed_out
    assert wall_clock.count() == before + 1
