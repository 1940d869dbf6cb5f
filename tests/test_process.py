"""Subprocess control: a simulation dies with the worker that started it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

CHILD = """
import sys
from llm4cov.sim.process import run_limited
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
