"""Console lines of `llm4cov gen` rounds (cli/round_progress.py)."""

from __future__ import annotations

import io

from rich.console import Console

from llm4cov.agent.loop import RoundRecord
from llm4cov.cli.round_progress import RoundProgress, first_error_line
from llm4cov.sim.model.observation import CoverageReport, MetricCoverage, Observation, Status

LOG = ("== build ==\n%Warning-WIDTH: tb.sv:4:9: truncated\n"
       "%Error: tb.sv:7:3: syntax error, unexpected endmodule\n%Error: Exiting due to 1 error\n")


def record(index: int, obs: Observation) -> RoundRecord:
    return RoundRecord(round=index, from_round=index - 1, messages=[], response="",
                       model="m", testbench="module tb; endmodule", observation=obs)


def test_first_error_line_skips_warnings():
    assert first_error_line(LOG) == "%Error: tb.sv:7:3: syntax error, unexpected endmodule"
    assert first_error_line("just text\nmore") == "just text"


def test_rounds_print_from_one_and_point_at_the_full_log(tmp_path):
    out = io.StringIO()
    console = Console(file=out, width=200)
    progress = RoundProgress(console, console.status(""), 3, tmp_path, "random")
    progress.on_round(record(1, Observation(status=Status.COMPILE_ERROR, log=LOG)))
    metrics = {"line": MetricCoverage(covered=1, total=2)}
    good = Observation(status=Status.SUCCESS, coverage=CoverageReport(
        dut_hier="tb.dut", metrics=metrics, overall=50.0))
    progress.on_round(record(2, good))
    log = tmp_path / "rounds" / "round_2.log"
    assert out.getvalue().splitlines() == [
        "round 2/3: compile_error, coverage -",
        "  %Error: tb.sv:7:3: syntax error, unexpected endmodule",
        f"  full log: {log}",
        "round 3/3: success, coverage 50.00%",
    ]
    assert log.read_text() == LOG
    assert progress.round == 3  # the last round: the status never says "round 4/3"


def test_the_full_log_a_user_cats_holds_no_terminal_escape(tmp_path):
    """The testbench prints what it likes (a twenty-sixth red team: OSC 52 set the
    clipboard, a CR overwrote a line with a fake status, when the user ran ``cat``)."""
    out = io.StringIO()
    progress = RoundProgress(Console(file=out, width=200), Console(file=out).status(""), 2,
                             tmp_path, "random")
    hostile = "\x1b]52;c;cHduZWQ=\x07harmless\rstatus: success\u200f\n%Error: x\n"
    progress.on_round(record(1, Observation(status=Status.RUNTIME_ERROR, log=hostile)))
    assert (tmp_path / "rounds" / "round_2.log").read_text() == (
        "\\x1b]52;c;cHduZWQ=\\x07harmless\\rstatus: success\\u200f\n%Error: x\n")


class _Status:
    """Records the status lines a RoundProgress shows (Rich's Status stand-in)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def update(self, text: str) -> None:
        self.lines.append(text)


def test_the_status_line_names_the_evaluator_step_from_the_progress_file(tmp_path):
    import asyncio

    steps = tmp_path / ".step"
    status = _Status()
    progress = RoundProgress(Console(file=io.StringIO()), status, 3, tmp_path, "m", steps)

    async def simulate(task, testbench):
        steps.write_text("build")  # what the evaluator writes in its worker
        progress._tick()
        return Observation(status=Status.SUCCESS)

    asyncio.run(progress.wrap(simulate)(None, "tb"))
    assert status.lines[0].startswith("round 1/3: m writing the testbench")
    assert status.lines[-1].startswith("round 1/3: simulating: build ")
