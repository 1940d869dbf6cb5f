"""Progress of a long run (bench, synth), shown on the driver only.

The run reports events to a :class:`ProgressSink`: ``plan`` (how many items a group
has: a bench arm's samples, synth's repos; and how many earlier invocations finished),
``item_done``, ``recorded`` (one new result row: its simulator call's status, or None
when it did not simulate, and its tokens) and ``note``. :class:`RunProgress` shows them
as a Rich live display on a terminal, or as a status line every ``interval_s`` seconds
in logs; :class:`NullProgress` (``--quiet``) shows nothing.
"""

from __future__ import annotations

import time
from collections import Counter
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
from rich.text import Text

from llm4cov.util.escape import terminal

SPEED_WINDOW_S = 600.0
"""Seconds of finished items the ETA is estimated from."""


class TerminalConsole(Console):
    """A Rich console for text that others (testbenches, models, task files) wrote: no
    markup (``[link=...]`` would become a terminal hyperlink), no highlighting, and
    every string printed or shown as a status goes through :func:`terminal`."""

    def __init__(self, **options) -> None:
        super().__init__(markup=False, highlight=False, **options)

    def print(self, *objects, **options) -> None:
        super().print(*(terminal(o) if isinstance(o, str) else o for o in objects), **options)

    def status(self, status, **options):
        return super().status(terminal(status) if isinstance(status, str) else status,
                              **options)


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
