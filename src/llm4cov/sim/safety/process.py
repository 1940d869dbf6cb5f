"""Running an untrusted subprocess: own process group, rlimits, capped output, timeout.

A timeout is returned as data (``ProcessResult.timed_out``), never raised. On timeout
every process the child started first gets SIGTERM (the simulation driver then writes
its coverage), then the whole process group SIGKILL after ``grace_s``. The child is
also killed when the process that started it dies (``PR_SET_PDEATHSIG`` on Linux).

With a :class:`Sandbox` the command runs under bubblewrap (:mod:`llm4cov.sim.safety.isolation`);
the sandbox's own monitor process is then spared the SIGTERM (it would take the
sandbox down before the simulation could write its coverage). ``record_env`` gives
the child an inherited pipe for a structured record (the simulation's end record): its
file descriptor number is put in that environment variable, and what the child writes
there comes back as ``ProcessResult.record``, apart from its output.

Bounds on the whole process tree (:class:`Limits` ``tree_*``: CPU time, resident
memory and process count of every process the command started, together) are kept by
polling ``/proc`` every :data:`POLL_S` seconds (no cgroup is used: creating one needs
a delegated cgroup v2 subtree, which most hosts do not give an unprivileged user);
the per-process rlimits stay as the hard backstop. A tree that passes a bound is
SIGKILLed and ``ProcessResult.exceeded`` names the bound.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from llm4cov.sim.safety import isolation, wall_clock
from llm4cov.util.procs import child_pids

#: What a ``ProcessResult.exceeded`` bound is, for messages.
BOUND_NAMES = {"cpu": "CPU-time", "memory": "memory", "processes": "process-count",
               "dir": "disk"}

@dataclass(frozen=True)
class Limits:
    """Resource limits for the child (None = unlimited). Units: seconds and bytes."""

    cpu_s: int | None = None
    memory_bytes: int | None = None
    file_bytes: int | None = None
    #: Bound on what the child adds under its ``cwd``, all files together
    #: (``RLIMIT_FSIZE`` bounds one file only): polled every :data:`POLL_S`
    #: seconds; the child is killed when the work dir grows by more
    #: (``ProcessResult.dir_exceeded``).
    dir_bytes: int | None = None
    #: CPU seconds of the whole process tree together (exited descendants included
    #: once their parent reaped them), polled; ``ProcessResult.exceeded == "cpu"``.
    tree_cpu_s: float | None = None
    #: CPU seconds of any one live process of the tree (its own, not its reaped
    #: children's), polled; ``"cpu"``. With ``tree_cpu_s`` at that times the processes
    #: meant to run side by side, a job of parallel solvers ends after about that many
    #: wall seconds on free cores and gets the same CPU on a loaded machine, even when
    #: one solver runs on alone (:mod:`llm4cov.formal.tools`).
    process_cpu_s: float | None = None
    #: Resident memory of the tree's live processes together, polled; ``"memory"``.
    tree_memory_bytes: int | None = None
    #: Live processes in the tree at once (the command itself included), polled;
    #: ``"processes"``.
    tree_processes: int | None = None

    def polled(self) -> bool:
        """Whether a bound needs polling while the child runs."""
        return any(v is not None for v in (self.dir_bytes, self.tree_cpu_s, self.process_cpu_s,
                                           self.tree_memory_bytes, self.tree_processes))


@dataclass(frozen=True)
class Sandbox:
    """Where a sandboxed command may read and write besides its work dir (the
    ``workdir`` of :func:`run_limited`); see :func:`llm4cov.sim.safety.isolation.wrap` for the
    fields. ``env_keys``: the caller's own variables the command gets besides the
    allowlisted ones (:func:`llm4cov.sim.safety.isolation.sandbox_env`); any other variable of
    the ``env`` given is dropped."""

    readonly: Sequence[Path] = ()
    writable: Sequence[Path] = ()
    #: Paths below the work dir the command may only read (bound read-only over it).
    protected: Sequence[Path] = ()
    network: bool = False
    proc: bool = True
    env_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProcessResult:
    """Outcome of :func:`run_limited`. ``output`` is at most ``output_cap`` bytes of
    stdout+stderr (head and tail), decoded with ``errors="replace"``; ``record`` the
    first ``RECORD_CAP`` bytes written to the record pipe, ``record_bytes`` their total;
    ``dir_exceeded`` when the child added more than ``Limits.dir_bytes`` to its work dir
    (killed if it was still running); ``exceeded`` the bound that killed it (``"dir"``,
    ``"cpu"``, ``"memory"``, ``"processes"``; None: none); ``cpu_s`` the tree's CPU
    seconds at the last poll (0 when nothing was polled)."""

    returncode: int
    output: str
    timed_out: bool
    wall_s: float
    output_bytes: int
    record: bytes = field(default=b"", repr=False)
    record_bytes: int = 0
    dir_exceeded: bool = False
    exceeded: str | None = None
    cpu_s: float = 0.0

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
POLL_S = 0.25
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def dir_bytes(root: str) -> int:
    """Bytes allocated on disk under ``root`` (``st_blocks``; links not followed)."""
    total, stack = 0, [root]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
    return total


@dataclass(frozen=True)
class TreeUsage:
    """What a process tree uses at one moment: CPU seconds (its processes' own and
    their reaped children's), resident bytes of its live processes, and their count;
    ``busiest_cpu_s``: the own CPU seconds of its busiest live process."""

    cpu_s: float
    rss_bytes: int
    processes: int
    busiest_cpu_s: float = 0.0


def tree_usage(pid: int) -> TreeUsage:
    """:class:`TreeUsage` of ``pid`` and its descendants (``/proc``; a process that
    vanishes while read is skipped)."""
    cpu = busiest = 0.0
    rss = count = 0
    for p in [pid, *_descendants(pid)]:
        try:
            with open(f"/proc/{p}/stat", "rb") as fh:
                fields = fh.read().rpartition(b")")[2].split()
        except OSError:
            continue
        # fields[0] is stat field 3 (state): utime..cstime are 14-17, rss is 24
        cpu += sum(int(f) for f in fields[11:15]) * _TICK_S
        busiest = max(busiest, (int(fields[11]) + int(fields[12])) * _TICK_S)
        rss += int(fields[21]) * _PAGE
        count += 1
    return TreeUsage(cpu, rss, count, busiest)


class _Watch:
    """The polled bounds of one child: which one it passed, and the CPU it used."""

    def __init__(self, proc: subprocess.Popen, workdir: str, limits: Limits) -> None:
        self.proc, self.workdir, self.limits = proc, workdir, limits
        # what was there before (the build) does not count against the run
        self.dir_base = dir_bytes(workdir) if limits.dir_bytes is not None else 0
        self.cpu_s = 0.0

    def passed(self, final: bool = False) -> str | None:
        """The bound the child has passed, if any; ``final``: after it exited (only
        the work dir can still be measured then)."""
        lim = self.limits
        if lim.dir_bytes is not None and dir_bytes(self.workdir) - self.dir_base > lim.dir_bytes:
            return "dir"
        if final or (lim.tree_cpu_s, lim.process_cpu_s, lim.tree_memory_bytes,
                     lim.tree_processes) == (None,) * 4:
            return None
        use = tree_usage(self.proc.pid)
        self.cpu_s = max(self.cpu_s, use.cpu_s)
        if lim.tree_cpu_s is not None and use.cpu_s > lim.tree_cpu_s:
            return "cpu"
        if lim.process_cpu_s is not None and use.busiest_cpu_s > lim.process_cpu_s:
            return "cpu"
        if lim.tree_memory_bytes is not None and use.rss_bytes > lim.tree_memory_bytes:
            return "memory"
        if lim.tree_processes is not None and use.processes > lim.tree_processes:
            return "processes"
        return None


def _wait(proc: subprocess.Popen, timeout_s: float, watch: _Watch) -> str:
    """Wait for ``proc``: ``"exited"``, ``"timeout"``, or the name of the polled bound
    it passed (:meth:`_Watch.passed`; the process group is already SIGKILLed then)."""
    deadline = time.monotonic() + timeout_s
    polled = watch.limits.polled()
    with _exit_waiter(proc) as exited:
        while True:
            left = deadline - time.monotonic()
            if exited(max(0.0, min(left, POLL_S) if polled else left)):
                # checked once more at the end: the verdict never depends on poll timing
                return watch.passed(final=True) or "exited"
            if polled and (bound := watch.passed()):
                _kill_group(proc, signal.SIGKILL)
                proc.wait()
                return bound
            if time.monotonic() >= deadline:
                return "timeout"


@contextlib.contextmanager
def _exit_waiter(proc: subprocess.Popen) -> Iterator[Callable[[float], bool]]:
    """``exited(timeout_s) -> bool``: waits up to ``timeout_s`` seconds for ``proc`` to
    exit and reaps it, returning as soon as it exits. It waits on a pidfd (Linux >= 5.3)
    where it can: ``Popen.wait(timeout)`` sleeps in steps of up to 50 ms, so it sees an
    exit up to 50 ms late, several times per simulated call
    (``docs/results/sim_throughput.md``, issue 22)."""
    try:
        fd: int | None = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, an old kernel, or reaped already
        fd = None
    poller = select.poll()
    if fd is not None:
        poller.register(fd, select.POLLIN)

    def exited(timeout_s: float) -> bool:
        if fd is not None:
            if not poller.poll(max(0, int(timeout_s * 1000))):
                return False
            proc.wait()
            return True
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False

    try:
        yield exited
    finally:
        if fd is not None:
            os.close(fd)


RECORD_CAP = 4096


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
        with contextlib.suppress(OSError, ValueError):
            self._drain()

    def _drain(self) -> None:
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


def _descendants(pid: int) -> list[int]:
    found, todo = [], child_pids(pid)
    while todo:
        child = todo.pop()
        found.append(child)
        todo += child_pids(child)
    return found


def _terminate(proc: subprocess.Popen, sandboxed: bool) -> None:
    """SIGTERM to the child and everything it started; a sandbox's monitor (the child
    itself) is spared, as its death would SIGKILL the sandbox at once."""
    targets = _descendants(proc.pid)
    if not sandboxed:
        targets.insert(0, proc.pid)
    for pid in targets:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)


def run_limited(
    cmd: list[str],
    cwd: str,
    env: dict[str, str],
    timeout_s: float,
    limits: Limits = Limits(),
    output_cap: int = 256 * 1024,
    grace_s: float = 2.0,
    *,
    sandbox: Sandbox | None = None,
    record_env: str | None = None,
    workdir: str | None = None,
) -> ProcessResult:
    """Run ``cmd`` in ``cwd``, in its own session with ``limits``; never raises on
    timeout.

    ``workdir`` (default ``cwd``, which lies in it): the dir the command works in. With
    ``sandbox``, ``cmd`` runs under bubblewrap with ``workdir`` as its only writable
    dir besides ``sandbox.writable`` and with the allowlisted part of ``env``
    (:func:`llm4cov.sim.safety.isolation.sandbox_env`); a death by signal N is reported as
    ``returncode == -N`` as without it. ``Limits.dir_bytes`` bounds what the command
    adds under ``workdir``.

    Raises:
        OSError: the executable cannot be started.
        SandboxUnavailable: ``sandbox`` is given but bwrap is missing.
    """
    workdir = workdir or cwd
    if sandbox is not None:
        env = isolation.sandbox_env(env, sandbox.env_keys)
        cmd = isolation.wrap(
            cmd, workdir=Path(workdir), readonly=sandbox.readonly, writable=sandbox.writable,
            protected=sandbox.protected, network=sandbox.network, proc=sandbox.proc,
            chdir=Path(cwd),
        )
    record_read, record_write = os.pipe() if record_env else (-1, -1)
    if record_env:
        env = {**env, record_env: str(record_write)}
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(record_write,) if record_env else (),
            preexec_fn=lambda: _apply_limits(limits),
        )
    except BaseException:
        if record_env:
            os.close(record_read)
        raise
    finally:
        if record_env:
            os.close(record_write)
    reader = _CappedReader(proc.stdout, output_cap)
    reader.start()
    record = _CappedReader(os.fdopen(record_read, "rb"), 2 * RECORD_CAP) if record_env else None
    if record:
        record.start()
    timed_out = False
    watch = _Watch(proc, workdir, limits)
    try:
        ended = _wait(proc, timeout_s, watch)
        if ended == "timeout":
            timed_out = True
            wall_clock.stopped()
            _terminate(proc, sandbox is not None)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc, signal.SIGKILL)
                proc.wait()
    finally:
        _kill_group(proc, signal.SIGKILL)  # stray grandchildren (make, g++, z3)
        reader.join(timeout=5)
        if proc.stdout is not None:  # always a pipe here
            proc.stdout.close()
        if record:
            record.join(timeout=5)
            record.stream.close()
    returncode = proc.returncode
    if sandbox is not None:
        returncode = isolation.signal_returncode(returncode)
    return ProcessResult(
        returncode=returncode,
        output=reader.text(),
        timed_out=timed_out,
        wall_s=time.monotonic() - start,
        output_bytes=reader.total,
        record=bytes(record.head) if record else b"",
        record_bytes=record.total if record else 0,
        dir_exceeded=ended == "dir",
        exceeded=ended if ended not in ("exited", "timeout") else None,
        cpu_s=watch.cpu_s,
    )
