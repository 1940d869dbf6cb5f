"""Running an untrusted subprocess: own process group, rlimits, capped output, timeout.

A timeout is returned as data (``ProcessResult.timed_out``), never raised. On timeout
the whole process group first gets SIGTERM (the simulation driver then writes its
coverage), then SIGKILL after ``grace_s``. The child is also killed when the process
that started it dies (``PR_SET_PDEATHSIG`` on Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Resource limits for the child (None = unlimited). Units: seconds and bytes."""

    cpu_s: int | None = None
    memory_bytes: int | None = None
    file_bytes: int | None = None


@dataclass(frozen=True)
class ProcessResult:
    """Outcome of :func:`run_limited`. ``output`` is at most ``output_cap`` bytes of
    stdout+stderr (head and tail), decoded with ``errors="replace"``."""

    returncode: int
    output: str
    timed_out: bool
    wall_s: float
    output_bytes: int

    @property
    def signal_name(self) -> str | None:
        """Name of the signal that killed the process, if any (e.g. ``SIGXCPU``)."""
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL the child when the process that started it dies (a killed
    pool or Ray worker must not leave its simulation running). No-op elsewhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _apply_limits(limits: Limits) -> None:
    _die_with_parent()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.cpu_s is not None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
    if limits.memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    if limits.file_bytes is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))


class _CappedReader(threading.Thread):
    """Drains a pipe, keeping the first and last ``cap/2`` bytes."""

    def __init__(self, stream, cap: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.half = stream, max(1, cap // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def run(self) -> None:
        while chunk := self.stream.read(65536):
            self.total += len(chunk)
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                del self.tail[: max(0, len(self.tail) - self.half)]

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.tail:
            return head
        cut = self.total - len(self.head) - len(self.tail)
        marker = f"\n[... {cut} bytes of output cut ...]\n" if cut > 0 else ""
        return head + marker + self.tail.decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def run_limited(
    cmd: list[str],
    cwd: str,
    env: dict[str, str],
    timeout_s: float,
    limits: Limits = Limits(),
    output_cap: int = 256 * 1024,
    grace_s: float = 2.0,
) -> ProcessResult:
    """Run ``cmd`` in its own session with ``limits``; never raises on timeout.

    Raises:
        OSError: the executable cannot be started.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=lambda: _apply_limits(limits),
    )
    reader = _CappedReader(proc.stdout, output_cap)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc, signal.SIGKILL)
            proc.wait()
    finally:
        _kill_group(proc, signal.SIGKILL)  # stray grandchildren (make, g++, z3)
        reader.join(timeout=5)
        proc.stdout.close()
    return ProcessResult(
        returncode=proc.returncode,
        output=reader.text(),
        timed_out=timed_out,
        wall_s=time.monotonic() - start,
        output_bytes=reader.total,
    )
