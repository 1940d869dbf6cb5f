"""A compile error in the RTL itself stops `gen` with exit code 2 after one check of the
RTL alone; RTL-located errors a testbench causes (a parameter override) do not."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from llm4cov.cli.app import main
from llm4cov.sim.analysis.rtl_check import RtlCompileError, guard, rtl_error_lines
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.tasks.model import SourceFile, Task

BROKEN = "module dut(input clk, input a, output reg y);\n  always @(posedge clk) begin\n" \
         "    y <= a\n  end\nendmodule\n"  # the missing ';': an error at line 4
# W = 32 makes the unpacked range divide by zero: an error in w.sv caused by the testbench
WIDE = ("module w #(parameter W = 8) (input logic [W-1:0] a, output logic y);\n"
        "  logic [W-1:0] r [0:(16/(32-W))-1];\n  assign y = ^a ^ r[0][0];\nendmodule\n")
WIDE_TB = ("module tb; logic [31:0] a = 0; logic y;\n  w #(.W(32)) dut (.a(a), .y(y));\n"
           "  initial begin #10 $finish; end\nendmodule\n")


def test_error_lines_count_only_when_every_located_error_is_in_the_rtl():
    task = Task(id="t", rtl_files=[SourceFile(name="rtl/w.sv", content="")],
                dut_module_name="w")
    both = ("%Error: rtl/w.sv:2:33: bad range\n%Error: tb.sv:3:1: syntax error\n"
            "%Error: Exiting due to 2 error(s)\n")
    rtl_only = "%Error-UNSUPPORTED: rtl/w.sv:7:2: no\n%Error: Exiting due to 1 error(s)\n"
    assert rtl_error_lines(Observation(status=Status.COMPILE_ERROR, log=both), task) == []
    assert rtl_error_lines(Observation(status=Status.COMPILE_ERROR, log=rtl_only), task) == [
        "%Error-UNSUPPORTED: rtl/w.sv:7:2: no"]
    assert rtl_error_lines(Observation(status=Status.RUNTIME_ERROR, log=rtl_only), task) == []


@pytest.mark.requires_verilator
def test_gen_stops_with_bad_input_when_the_rtl_does_not_compile(tmp_path: Path, capsys):
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "dut.v").write_text(BROKEN)
    assert main(["gen", str(tmp_path / "rtl"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "the RTL does not compile with the simulator on its own" in err
    assert "%Error: dut.v:4:3: syntax error, unexpected end" in err


@pytest.mark.requires_verilator
def test_rtl_errors_a_testbench_causes_do_not_stop_the_agent(tmp_path: Path):
    (tmp_path / "w.sv").write_text(WIDE)
    task = task_from_dir(tmp_path)
    # the testbench's W = 32 is a parameter change the evaluator refuses by default (the
    # score is the stimulus's own: docs/stimulus.md); the RTL blame is checked without it
    refused = Evaluator(SimConfig(result_cache=False)).evaluate(task, WIDE_TB)
    assert refused.status is Status.REJECTED and "W = 32 (the task's: 8)" in refused.log
    evaluator = Evaluator(SimConfig(result_cache=False, stimulus_only=False))
    calls: list[str] = []

    async def simulate(task: Task, testbench: str) -> Observation:
        calls.append(testbench)
        return evaluator.evaluate(task, testbench)

    guarded = guard(simulate)
    obs = asyncio.run(guarded(task, WIDE_TB))
    assert obs.status is Status.COMPILE_ERROR and rtl_error_lines(obs, task)
    assert not obs.rtl_error  # the evaluator compiled the RTL alone: it compiles
    assert not any("does not compile" in n for n in obs.notes)
    assert calls == [WIDE_TB]

    (tmp_path / "w.sv").write_text(BROKEN.replace("dut", "w"))
    with pytest.raises(RtlCompileError, match=r"w\.sv:4:3: syntax error"):
        asyncio.run(guard(simulate)(task_from_dir(tmp_path), WIDE_TB))


# -- issue 23 item 9: the culprit named in sim, bench and synth alike --------------------

OVERSIZED = ("module cnt(input logic clk, input logic rst, output logic [3:0] q);\n"
             "  always_ff @(posedge clk)\n    if (rst) q <= 4'd0;\n"
             "    else if (q == 4'h1F) q <= 4'd0;\n    else q <= q + 4'd1;\nendmodule\n")
GOOD_TB = ("module tb;\n  logic clk = 0, rst = 1;\n  logic [3:0] q;\n"
           "  cnt dut (.clk(clk), .rst(rst), .q(q));\n  always #5 clk = ~clk;\n"
           "  initial begin #12 rst = 0; #100 $finish; end\nendmodule\n")
RTL_NOTE = ("the design does not compile: the RTL fails with the simulator on its own, at "
            "rtl/cnt.sv:4 (%Error: rtl/cnt.sv:4:19: Too many digits for 4 bit number: "
            "'4'h1F'; 1 error(s), all in RTL files); no testbench can pass until the RTL is "
            "fixed, so this is not the testbench's fault")


@pytest.mark.requires_verilator
def test_an_rtl_with_an_oversized_literal_is_blamed_not_the_testbench(tmp_path: Path, capsys):
    from llm4cov.agent.prompt import render_observation

    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "cnt.sv").write_text(OVERSIZED)
    (tmp_path / "tb.sv").write_text(GOOD_TB)
    task = task_from_dir(tmp_path)  # tb.sv, a testbench of its own, is left out
    assert [f.name for f in task.rtl_files] == ["rtl/cnt.sv"]
    obs = Evaluator(SimConfig(result_cache=False)).evaluate(task, GOOD_TB)
    assert (obs.status, obs.rtl_error, obs.tool_error) == (Status.COMPILE_ERROR, True, False)
    assert obs.notes[0] == RTL_NOTE
    assert f"Note: {RTL_NOTE}" in render_observation(obs, task)  # the model's feedback

    code = main(["sim", "--rtl", str(tmp_path / "rtl"), "--tb", str(tmp_path / "tb.sv")])
    out, err = capsys.readouterr()
    assert code == 2
    assert RTL_NOTE.replace("rtl/", "") in out  # the report, then the one-line error
    assert err.strip().splitlines()[-1:] == [  # after the progress lines
        "error: local/cnt: the RTL does not compile with the simulator on its own (fix it "
        "first; no testbench can pass): %Error: cnt.sv:4:19: Too many digits for 4 bit "
        "number: '4'h1F'"]
