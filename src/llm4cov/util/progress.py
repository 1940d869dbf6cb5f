"""Progress of long phases and long runs, shown on the driver only.

A run (bench, synth) reports events to a :class:`ProgressSink`: ``plan`` (how many
items a group has: a bench arm's samples, synth's repos; and how many earlier
invocations finished), ``item_done``, ``recorded`` (one new result row: its simulator
call's status, or None when it did not simulate, and its tokens) and ``note``.
:class:`RunProgress` shows them as a Rich live display on a terminal, or as a status
line every ``interval_s`` seconds in logs; :class:`NullProgress` (``--quiet``) shows
nothing.

One long phase (a model fetch, the formal tools' warm-up, a simulation) is a
:class:`Phase`: a status with the seconds it has taken, one line at its start and end
in logs. A model's token generation reports to a :class:`TokenMeter`, which a status
line reads (tokens, tokens/s, the most time left).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.status import Status
from rich.text import Text

from llm4cov.util.escape import terminal

SPEED_WINDOW_S = 600.0
"""Seconds of finished items the ETA is estimated from."""


class TerminalConsole(Console):
    """A Rich console for text that others (testbenches, models, task files) wrote: no
    markup (``[link=...]`` would become a terminal hyperlink), no highlighting, and
    every string printed or shown as a status goes through :func:`terminal`. Lines are
    not broken (soft wrap): paths and messages stay whole for copying."""

    def __init__(self, **options) -> None:
        super().__init__(markup=False, highlight=False, soft_wrap=True, **options)

    def print(self, *objects, **options) -> None:
        super().print(*(terminal(o) if isinstance(o, str) else o for o in objects), **options)

    def status(self, status, **options):
        return super().status(terminal(status) if isinstance(status, str) else status,
                              **options)


class Phase:
    """One long phase on ``console``: on a terminal a Rich status ``TEXT · 12 s``
    refreshed every second; otherwise one line ``TEXT ...`` at the start and one
    ``TEXT: done in 12 s`` (or ``stopped after``) at the end. :meth:`update` changes
    the text (the next step); ``detail`` (a callable, e.g. :meth:`TokenMeter.describe`)
    adds live text after it. Use as a context manager."""

    def __init__(self, console: Console, text: str, detail: Callable[[], str] | None = None,
                 live: bool | None = None) -> None:
        self.console = console
        self.text = text
        self.detail = detail
        self.live = console.is_terminal if live is None else live
        self._started = self._step_started = time.monotonic()
        self._status: Status | None = None
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick_every_second, daemon=True)

    def line(self) -> str:
        """The status text: the step, its live detail and the seconds it has taken."""
        extra = self.detail() if self.detail else ""
        elapsed = time.monotonic() - self._step_started
        return f"{self.text}{': ' + extra if extra else ''} · {elapsed:.0f} s"

    def update(self, text: str) -> None:
        """The next step: ``text`` (printed as a line of its own in logs)."""
        if not self.live:
            self.console.print(f"{text} ...")
        self.text, self._step_started = text, time.monotonic()
        self._refresh()

    def _refresh(self) -> None:
        if self._status is not None:
            self._status.update(terminal(self.line()))

    def _tick_every_second(self) -> None:
        while not self._stop.wait(1.0):
            self._refresh()

    def __enter__(self) -> Phase:
        if self.live:
            self._status = self.console.status(terminal(self.line()))
            self._status.start()
            self._ticker.start()
        else:
            self.console.print(f"{self.text} ...")
        return self

    def __exit__(self, kind, *exc) -> None:
        self._stop.set()
        if self._status is not None:
            self._status.stop()
        if not self.live:
            how = "done in" if kind is None else "stopped after"
            self.console.print(f"{self.text}: {how} {time.monotonic() - self._started:.0f} s")


class TokenMeter:
    """The answer a model is generating now, for a status line: written by the
    generating thread (:meth:`start`, :meth:`advance`, :meth:`stop`), read by the
    display (:meth:`describe`). Counts are tokens per answer (a batch's rows advance
    together); rates are tokens per second of ``clock`` (wall time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.tokens = 0
        self.budget = 0
        self.rows = 0
        self.active = False
        self._first: float | None = None

    def start(self, budget: int, rows: int = 1) -> None:
        """A ``generate`` call of ``rows`` answers, each at most ``budget`` tokens."""
        self.tokens, self.budget, self.rows, self.active = 0, budget, rows, True
        self._first = None

    def advance(self, tokens: int) -> None:
        """Each answer holds ``tokens`` tokens now."""
        if self._first is None and tokens:
            self._first = self.clock()  # the prompt is read: decoding starts
        self.tokens = tokens

    def stop(self) -> None:
        """The ``generate`` call ended."""
        self.active = False

    def rate(self) -> float | None:
        """Decoded tokens per second per answer since the first token (None before)."""
        if self._first is None or self.tokens < 2:
            return None
        return (self.tokens - 1) / max(self.clock() - self._first, 1e-6)

    def describe(self) -> str:
        """``312/2,048 tokens, 11.2 tokens/s, at most 2 min 40 s left`` (a batch: ``...
        tokens in each of 3 answers, ...``; empty when no answer is being generated;
        ``reading the prompt`` before the first token)."""
        if not self.active:
            return ""
        if not self.tokens:
            return "reading the prompt"
        text = f"{self.tokens:,}/{self.budget:,} tokens"
        if self.rows > 1:
            text += f" in each of {self.rows} answers"
        rate = self.rate()
        if rate:
            left = timedelta(seconds=round((self.budget - self.tokens) / rate))
            text += f", {rate:.1f} tokens/s, at most {_duration(left)} left"
        return text


def _duration(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


class ProgressSink(Protocol):
    def plan(self, group: str, total: int | None, done: int = 0) -> None:
        """``group`` has ``total`` items (None: unknown), ``done`` of them finished before."""

    def item_done(self, group: str) -> None:
        """One more item of ``group`` finished in this invocation."""

    def recorded(self, status: str | None, tokens: int = 0) -> None:
        """A new result row: its simulator call's status (None: no simulator call)
        and the model tokens (prompt + completion) it spent."""

    def note(self, text: str) -> None:
        """A remark shown until the end (e.g. a budget was reached)."""


class NullProgress:
    """Shows nothing (``--quiet``, library use)."""

    def __enter__(self) -> NullProgress:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def plan(self, group: str, total: int | None, done: int = 0) -> None:
        pass

    def item_done(self, group: str) -> None:
        pass

    def recorded(self, status: str | None, tokens: int = 0) -> None:
        pass

    def note(self, text: str) -> None:
        pass


class RunProgress:
    """Items done/total with ETA per group, simulator calls by status, tokens.

    ``live``: a Rich live display (default: when ``console`` is a terminal); otherwise
    one status line every ``interval_s`` seconds and one at the end. Counts are of this
    invocation, except the bars, which start at the items finished before. Use as a
    context manager.
    """

    def __init__(self, console: Console, live: bool | None = None,
                 interval_s: float = 30.0) -> None:
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.interval_s = interval_s
        self.sim_calls = 0
        self.tokens = 0
        self.statuses: Counter[str] = Counter()
        self.notes: list[str] = []
        self._bars = Progress(TextColumn("{task.description}"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                              TimeRemainingColumn(), speed_estimate_period=SPEED_WINDOW_S)
        self._groups: dict[str, TaskID] = {}
        self._display = Live(self, console=console, refresh_per_second=4) if self.live else None
        self._last_line = time.monotonic()

    def __rich__(self) -> Group:
        return Group(self._bars, Text(self.counts_line()))

    def __enter__(self) -> RunProgress:
        if self._display is not None:
            self._display.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._display is not None:
            self._display.stop()
        else:
            self.console.print(self.status_line())

    def plan(self, group: str, total: int | None, done: int = 0) -> None:
        if group in self._groups:
            self._bars.update(self._groups[group], total=total, completed=done)
        else:
            self._groups[group] = self._bars.add_task(group, total=total, completed=done)

    def item_done(self, group: str) -> None:
        if group not in self._groups:
            self.plan(group, None)
        self._bars.advance(self._groups[group])
        self._tick()

    def recorded(self, status: str | None, tokens: int = 0) -> None:
        if status is not None:
            self.sim_calls += 1
            self.statuses[status] += 1
        self.tokens += tokens
        self._tick()

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def counts_line(self) -> str:
        """Simulator calls with their statuses, tokens and notes of this invocation."""
        statuses = ", ".join(f"{n} {s}" for s, n in self.statuses.most_common())
        line = f"sim calls {self.sim_calls}" + (f" ({statuses})" if statuses else "")
        line += f" · tokens {self.tokens:,}"
        return " · ".join([line, *self.notes])

    def status_line(self) -> str:
        """Every group's done/total and ETA, then :meth:`counts_line`."""
        parts = []
        for task in self._bars.tasks:
            total = "?" if task.total is None else f"{task.total:g}"
            eta = task.time_remaining
            when = f", ETA {timedelta(seconds=round(eta))}" if eta is not None else ""
            parts.append(f"{task.description} {task.completed:g}/{total}{when}")
        return " · ".join([*parts, self.counts_line()])

    def _tick(self) -> None:
        if self.live or time.monotonic() - self._last_line < self.interval_s:
            return
        self._last_line = time.monotonic()
        self.console.print(self.status_line())
