"""The build store's entry locks (``artifacts._try_lock``): a build that finds an entry
another process is building waits for it (no CPU spent) instead of compiling the runtime
a second time beside it; the wait is bounded, and a lock dies with its holder."""

from __future__ import annotations

import select
import subprocess
import sys

from llm4cov.sim.backends.verilator.artifacts import _try_lock

HOLD = ("import fcntl, sys, time\n"
        "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX)\n"
        "print('held', flush=True); time.sleep(float(sys.argv[2]))\n"
        "print('letting go', flush=True)\n")


def _holder(path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_held_lock_is_refused_at_once_and_acquired_once_its_holder_lets_go(tmp_path):
    lock = tmp_path / "entry.lock"
    holder = _holder(lock, 1.0)
    with _try_lock(lock) as got:
        assert got is False  # no wait asked: refused while the other process holds it
    with _try_lock(lock, wait_s=120) as got:
        assert got is True
        # acquired only after the holder let go: what it said first is there to read
        assert select.select([holder.stdout], [], [], 0)[0] == [holder.stdout]
    holder.wait()


def test_the_wait_is_bounded(tmp_path):
    lock = tmp_path / "entry.lock"
    holder = _holder(lock, 120)
    try:
        with _try_lock(lock, wait_s=0.5) as got:
            assert got is False
    finally:
        holder.kill()
        holder.wait()
    with _try_lock(lock) as got:  # a killed holder's lock is gone with it
        assert got is True
