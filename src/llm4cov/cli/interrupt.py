"""Ctrl-C ends the ``llm4cov`` process within :data:`GRACE_S` seconds, exit code 130.

The first SIGINT raises :class:`KeyboardInterrupt` in the main thread as usual, so the
command stops the way it is written to (a run keeps what it finished: ``gen`` has
written every finished round, ``bench``/``synth`` every finished row, durably, as it
went). What can still hold the process up afterwards is what Python waits for on its
way out: a worker thread still inside a blocking call (``asyncio``'s default executor,
``concurrent.futures``), a process pool's shutdown waiting on a running simulation.
So the first SIGINT also starts a timer: when the process is still there
:data:`GRACE_S` seconds later, it flushes stdout/stderr and exits at once with 130
(``os._exit``: no more cleanup; the work dirs left are removed by the next run, and the
sandboxed steps and pool workers die with their parent). A second SIGINT exits at once.
Either way stderr ends with ``error: interrupted``, after the command's own line about
what it kept (:func:`explained`, :func:`say_why`), which the forced exit prints too when
the command did not get to it. A command that ends normally after the SIGINT ends the
process at once with its own code (``model serve``: 0).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

from llm4cov.cli.errors import INTERRUPTED as EXIT_CODE
from llm4cov.util.escape import terminal

GRACE_S = 1.0
"""Seconds between the first SIGINT and the forced exit."""


_why: Callable[[], str] | None = None
_said = threading.Event()


@contextlib.contextmanager
def explained(why: Callable[[], str]) -> Iterator[None]:
    """While the body runs, an interrupt is explained by the line ``why()`` (what was
    kept, how to go on), printed once: by :func:`say_why` on the command's own way out,
    or by the forced exit."""
    global _why
    previous, _why = _why, why
    try:
        yield
    finally:
        _why = previous


def say_why() -> None:
    """Print the current :func:`explained` line on stderr, once per process (written
    directly: another thread may hold the stream's lock)."""
    why = _why
    if why is None or _said.is_set():
        return
    _said.set()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
        os.write(2, (terminal(why()) + "\n").encode("utf-8", "replace"))


def exit_now(code: int = EXIT_CODE) -> None:
    """Flush stdout and stderr, then end the process with ``code`` at once."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _say_interrupted() -> None:
    """``error: interrupted`` on stderr (and a terminal's cursor back, which a live
    status display hides), written directly: no lock another thread may hold."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        os.write(2, (b"\x1b[?25h" if os.isatty(2) else b"") + b"error: interrupted\n")


def _forced_exit() -> None:
    """The end of the grace period: :func:`say_why`, :func:`_say_interrupted`, then
    :func:`exit_now`."""
    say_why()
    _say_interrupted()
    exit_now()


def run_as_main(command: Callable[[], int], grace_s: float = GRACE_S) -> int:
    """``command()`` (the CLI, run as the process's main program) with the SIGINT rule
    of the module docstring; returns its exit code when no SIGINT came. Outside the
    main thread it only runs ``command``. After a SIGINT the process ends with the
    command's own code (130 unless it chose another, e.g. ``model serve`` stops with 0)
    as soon as it returns, or with 130 after ``grace_s`` seconds."""
    if threading.current_thread() is not threading.main_thread():
        return command()
    interrupted = threading.Event()

    def on_sigint(signum, frame) -> None:
        if interrupted.is_set():
            _forced_exit()
        interrupted.set()
        timer = threading.Timer(grace_s, _forced_exit)
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        code = command()
    except KeyboardInterrupt:
        code = EXIT_CODE
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted.is_set():
        if code == EXIT_CODE:
            _say_interrupted()
        exit_now(code)
    return code
