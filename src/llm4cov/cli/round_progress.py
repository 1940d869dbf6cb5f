"""Live console progress of ``llm4cov gen`` within and between agent rounds.

Within a round the status line says what is running and for how long (``round 2/3:
simulating: build 41 s``), updated every second; long Verilator builds are no longer
silent. The simulation runs in an executor worker, which writes its step (static check,
build, run, coverage) to ``SimConfig.progress_file``; on a Ray cluster without a shared
file system the steps show as one phase; the first simulation on a machine says that
it also builds the Verilator runtime once. While a local model writes, the line shows
its tokens, tokens/s and the most time left (the policy's ``meter``). After each round
one line is printed, numbered from 1 like every file ``gen`` writes; a round that did
not compile prints the first error line and the path of its full log
(``OUT/rounds/round_<k>.log``).

:class:`RoundFiles` writes each round as it finishes (``OUT/rounds/round_<k>.json``,
``OUT/tb.sv`` while it is the best so far), so an interrupted run keeps every finished
round.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.status import Status as RichStatus

from llm4cov.agent.loop import RoundRecord, state_key
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.tasks.model import Task
from llm4cov.util.escape import one_line, terminal
from llm4cov.util.progress import TokenMeter

SIMULATING = "simulating"
_ERROR_MARKERS = ("%Error", "error:", "Error:", "Rejected", "syntax error")


def first_error_line(log: str) -> str:
    """The first line of ``log`` that reports an error (else its first non-empty line),
    at most 200 characters, safe for a terminal (the log quotes the testbench)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    hit = next((line for line in lines if any(m in line for m in _ERROR_MARKERS)), None)
    return one_line((hit or (lines[0] if lines else ""))[:200])


def write_round(out: Path, record: RoundRecord) -> Path:
    """``out/rounds/round_<k>.json``: the round's prompt, response, testbench and
    observation, numbered from 1 (``from_round`` 0 is the initial state, before any
    testbench; the agent's records count from 0). Returns the path."""
    shown = record.model_copy(update={"round": record.round + 1,
                                      "from_round": record.from_round + 1})
    path = out / "rounds" / f"round_{shown.round}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(shown.model_dump_json(indent=2), encoding="utf-8")
    return path


class RoundFiles:
    """Writes each finished round of ``task``'s run into ``out`` (:func:`write_round`)
    and ``out/tb.sv`` while that round is the best so far (the agent's order of states,
    :func:`llm4cov.agent.loop.state_key`; the first round on ties)."""

    def __init__(self, out: Path, task: Task) -> None:
        self.out = out
        self.task = task
        self.best: RoundRecord | None = None
        self.written = 0

    def kept(self) -> str:
        """What an interrupted run keeps, as one line."""
        best = (f", the best so far in {self.out / 'tb.sv'}"
                if self.best and self.best.testbench else "")
        return (f"interrupted: {self.written} finished round(s) kept in "
                f"{self.out / 'rounds'}{best}")

    def __call__(self, record: RoundRecord) -> None:
        write_round(self.out, record)
        self.written += 1
        if self.best is None or (state_key(record.observation, self.task)
                                 > state_key(self.best.observation, self.task)):
            self.best = record
            if record.testbench:
                (self.out / "tb.sv").write_text(record.testbench, encoding="utf-8")


@dataclass(eq=False)
class RoundProgress:
    """Status line and per-round lines of one agent run (``rounds`` rounds, files in
    ``out``). ``steps``: the evaluator's progress file (``SimConfig.progress_file``,
    when it can be read); ``meter``: the policy's token meter (local models);
    ``first_build``: the first simulation also builds the Verilator runtime (said in the
    status)."""

    console: Console
    status: RichStatus
    rounds: int
    out: Path
    model: str
    steps: Path | None = None
    meter: TokenMeter | None = None
    first_build: bool = False
    round: int = field(default=1, init=False)
    _phase: str = field(default="", init=False)
    _since: float = field(default_factory=time.monotonic, init=False)

    def _show(self, phase: str) -> None:
        self._phase, self._since = phase, time.monotonic()
        self._tick()

    def _tick(self) -> None:
        elapsed = time.monotonic() - self._since
        phase = self._phase
        if phase == SIMULATING and self.steps is not None:
            with contextlib.suppress(OSError):
                phase = f"simulating: {self.steps.read_text()[:40]}"
        if phase.startswith(SIMULATING) and self.first_build:
            phase += " (first run: building the Verilator runtime once, about a minute)"
        elif phase != SIMULATING and self.meter is not None and self.meter.describe():
            phase += f": {self.meter.describe()}"
        self.status.update(terminal(f"round {self.round}/{self.rounds}: {phase} "
                                    f"{elapsed:.0f} s"))

    @contextlib.contextmanager
    def ticking(self) -> Iterator[None]:
        """Refresh the elapsed time every second while the body runs (in an event loop)."""
        async def tick() -> None:
            while True:
                await asyncio.sleep(1)
                self._tick()

        task = asyncio.get_running_loop().create_task(tick())
        try:
            yield
        finally:
            task.cancel()

    def wrap(self, simulate: Callable[[Task, str], Awaitable[Observation]]
             ) -> Callable[[Task, str], Awaitable[Observation]]:
        """``simulate`` that shows the simulation phase of the current round."""
        async def run(task: Task, testbench: str) -> Observation:
            if self.steps is not None:
                with contextlib.suppress(OSError):
                    self.steps.unlink()
            self._show(SIMULATING)
            return await simulate(task, testbench)

        self._show(f"{self.model} writing the testbench")
        return run

    def on_round(self, record: RoundRecord) -> None:
        """Print the finished round (1-based) and move the status to the next one."""
        obs = record.observation
        k = record.round + 1
        cov = f"{obs.coverage.overall:.2f}%" if obs.coverage else "-"
        line = f"round {k}/{self.rounds}: {obs.status.value}, coverage {cov}"
        if record.completion_tokens and record.latency_s:
            line += (f" ({record.completion_tokens:,} tokens in {record.latency_s:.0f} s, "
                     f"{record.completion_tokens / record.latency_s:.1f} tokens/s)")
        if obs.status in (Status.COMPILE_ERROR, Status.REJECTED, Status.RUNTIME_ERROR):
            log = self.out / "rounds" / f"round_{k}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(terminal(obs.log), encoding="utf-8")  # a user `cat`s it
            line += f"\n  {first_error_line(obs.log)}\n  full log: {log}"
        self.console.print(terminal(line), markup=False, highlight=False, soft_wrap=True)
        self.first_build = False
        if k < self.rounds:  # after the last round the status has nothing more to say
            self.round = k + 1
            self._show(f"{self.model} writing the testbench")
