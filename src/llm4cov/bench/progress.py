"""The live progress display of a bench run (Rich, on the driver only)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from llm4cov.bench.budget import Budget


class LiveProgress:
    """One bar per arm (finished samples of planned ones) and a line of spending.

    Use as a context manager; pass it to :func:`llm4cov.bench.runner.run_bench`.
    """

    def __init__(self, totals: dict[str, int], console: Console) -> None:
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn())
        self._bars = {arm: self._progress.add_task(arm, total=n) for arm, n in totals.items()}
        self._spent = Text("")
        self._live = Live(self, console=console, refresh_per_second=4)

    def __rich__(self) -> Group:
        return Group(self._progress, self._spent)

    def __enter__(self) -> LiveProgress:
        self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        self._live.stop()

    def sample_done(self, arm: str) -> None:
        self._progress.advance(self._bars[arm])

    def update(self, budget: Budget) -> None:
        text = f"spent: {budget.sim_calls} sim calls, {budget.tokens} tokens, " \
               f"{budget.samples} samples"
        if budget.exhausted:
            text += f" - {budget.exhausted} budget reached"
        self._spent = Text(text)
