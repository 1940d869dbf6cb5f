"""pyslang's elaboration of an untrusted testbench, bounded in CPU and memory.

The evaluator elaborates the testbench with the RTL in its own process (the
stimulus-only check, the pre-check, the per-instance plan), and slang bounds each
constant evaluation, generate loop and instance array but not their sum: 40 lines of
``localparam`` products of 8-Mbit constants took 65 s of CPU, and a testbench whose
modules instantiate the one below twice, 21 deep, 6 GB before ``std::bad_alloc``
(:func:`llm4cov.tasks.hdl.bounded_symbols` stops that one early). So each such call
runs in a forked copy of the process (:func:`bounded_call`: ~5 ms; nothing to import
or parse again) under :class:`ForkLimits`, and only its result comes back, as JSON
(never a pickle: the child ran pyslang on hostile text). Where the platform has no
``fork``, the call runs in the process, unbounded.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from llm4cov.sim.safety import wall_clock

T = TypeVar("T")


@dataclass(frozen=True)
class ForkLimits:
    """CPU seconds, bytes of address space beyond the process's own at the fork, and
    wall seconds of one call (the largest benchmark design's checks take well under a
    second and 100 MiB)."""

    cpu_s: int = 20
    memory_bytes: int = 1 << 30
    wall_s: float = 60.0


class BoundExceeded(RuntimeError):
    """The call passed its :class:`ForkLimits` (or its process died); the message says
    which bound, in words for a rejection."""


def bounded_call(fn: Callable[..., T], *args: Any, limits: ForkLimits = ForkLimits(),
                 raises: tuple[type[Exception], ...] = (), **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a forked child under ``limits``: its return value (a
    JSON value: lists come back as lists, tuples as lists too), or the exception it
    raised, raised again here when its class is one of ``raises`` (with its message),
    else as a RuntimeError.

    Raises:
        BoundExceeded: the child passed a bound or died before it answered.
    """
    if not hasattr(os, "fork"):
        return fn(*args, **kwargs)
    read_end, write_end = os.pipe()
    vm = _address_space()
    pid = os.fork()
    if pid == 0:  # the child: compute, answer, exit without the parent's exit handlers
        os.close(read_end)
        _child(write_end, fn, args, kwargs, limits, vm)
    os.close(write_end)
    data, finished = _read(read_end, pid, limits.wall_s)
    _, status = os.waitpid(pid, 0)
    try:
        answer = json.loads(data) if finished and data else {}
    except ValueError:  # cut off mid-write by a bound
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    if "ok" in answer:
        return answer["ok"]
    if "error" in answer:
        name, message = answer["error"]
        raise next((e(message) for e in raises if e.__name__ == name),
                   RuntimeError(f"{name}: {message}"))
    if not finished:
        wall_clock.stopped()
    raise BoundExceeded(_why(status, finished, limits))


def _child(write_end: int, fn: Callable, args: tuple, kwargs: dict, limits: ForkLimits,
           vm: int | None) -> None:
    code = 0
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        if vm is not None:
            resource.setrlimit(resource.RLIMIT_AS, (vm + limits.memory_bytes,) * 2)
        try:
            payload = json.dumps({"ok": fn(*args, **kwargs)}).encode()
        except MemoryError:
            payload = b""  # the memory bound: the parent names it
        except Exception as exc:
            payload = json.dumps({"error": [type(exc).__name__, str(exc)]}).encode()
        view = memoryview(payload)
        while view:
            view = view[os.write(write_end, view):]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _read(fd: int, pid: int, wall_s: float) -> tuple[bytes, bool]:
    """Everything the child writes until it closes the pipe, and whether it did so
    within ``wall_s`` (else it is killed)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + wall_s
    try:
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)
        os.kill(pid, signal.SIGKILL)
        return b"", False
    finally:
        os.close(fd)


def _address_space() -> int | None:
    """This process's address space in bytes (Linux), or None where it is not known."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _why(status: int, finished: bool, limits: ForkLimits) -> str:
    if not finished:
        return f"took longer than {limits.wall_s:g} s"
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        return f"passed {limits.cpu_s} s of CPU"
    return f"passed {limits.memory_bytes >> 20} MiB of memory (or died)"
