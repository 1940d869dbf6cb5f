"""Bad inputs: each gets a clear status and message, and nothing is lost or hung."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, fixture_task
from llm4cov.agent.loop import no_testbench_observation
from llm4cov.agent.response import extract_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import EndReason, Status
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.tasks.model import TaskError

HEAD = "module tb;\n  logic sel = 0, en = 0; logic [1:0] a = 0, b = 0; wire [1:0] y;\n"
DUT = "  mux2 dut (.sel(sel), .en(en), .a(a), .b(b), .y(y));\n"


def tb(body: str, inst: str = DUT) -> str:
    return HEAD + inst + body + "endmodule\n"


@pytest.mark.requires_verilator
def test_compile_error_names_testbench_line(evaluator):
    obs = evaluator.evaluate(fixture_task("mux2"), tb("  initial begin a = 2'b1x2; $finish; end\n"))
    assert obs.status is Status.COMPILE_ERROR
    assert "tb.sv:4" in obs.log and "/tmp" not in obs.log


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_zero_time_infinite_loop_times_out_and_is_killed():
    evaluator = Evaluator(SimConfig(run_timeout_s=1))
    src = tb("  initial begin forever a = a + 1; end\n")
    obs = evaluator.evaluate(fixture_task("mux2"), src)
    assert obs.status is Status.TIMEOUT
    assert obs.end_reason is EndReason.WALL_TIMEOUT
    assert "wall-clock limit of 1 s" in " ".join(obs.notes)


@pytest.mark.requires_verilator
def test_fatal_is_runtime_error_with_location(evaluator):
    src = tb("  initial begin #1 a = 1; #1 $fatal(1, \"boom\"); end\n")
    obs = evaluator.evaluate(fixture_task("mux2"), src)
    assert (obs.status, obs.end_reason) == (Status.RUNTIME_ERROR, EndReason.FATAL)
    assert "tb.sv:4" in obs.log and "boom" in obs.log
    assert obs.coverage is not None and obs.cov() == 0.0


def test_system_call_is_rejected_before_compiling(evaluator):
    obs = evaluator.evaluate(fixture_task("mux2"), tb("  initial begin $system(\"id\"); end\n"))
    assert obs.status is Status.REJECTED
    assert obs.build_s == 0.0
    assert "tb.sv:4: $system is not allowed" in obs.log


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_huge_output_is_capped_and_the_run_still_passes(evaluator):
    line = "x" * 100
    src = tb(f"  initial begin repeat (100000) $display(\"{line}\"); $finish; end\n")
    obs = evaluator.evaluate(fixture_task("mux2"), src)  # ~10 MB of output
    assert obs.status is Status.SUCCESS
    assert len(obs.log) <= evaluator.config.log_limit_chars + 100
    assert "cut ..." in obs.log


def test_wrong_instance_name_is_a_clear_compile_error(evaluator):
    src = tb("  initial $finish;\n", inst=DUT.replace(" dut ", " uut "))
    obs = evaluator.evaluate(fixture_task("mux2"), src)
    assert obs.status is Status.COMPILE_ERROR
    assert "instantiated as `uut`, but the task requires the instance name `dut`" in obs.log


def test_response_with_no_code_is_an_observation():
    assert extract_testbench("Sorry, I can't.", "mux2") is None
    obs = no_testbench_observation()
    assert obs.status is Status.REJECTED and obs.log == "no testbench in response"


def test_empty_rtl_dir(tmp_path):
    (tmp_path / "notes.md").write_text("spec only")
    with pytest.raises(TaskError, match="no RTL files"):
        task_from_dir(tmp_path)


@pytest.mark.requires_verilator
def test_non_utf8_file_is_read_and_noted(tmp_path, evaluator):
    data = (FIXTURES / "mux2" / "mux2.sv").read_bytes()
    (tmp_path / "mux2.sv").write_bytes(b"// caf\xe9 latin-1 comment\n" + data)
    task = task_from_dir(tmp_path)
    assert task.meta["notes"] == ["mux2.sv is not valid UTF-8 (byte 6); read as Latin-1"]
    obs = evaluator.evaluate(task, tb("  initial begin #1 sel = 1; #1 $finish; end\n"))
    assert obs.status is Status.SUCCESS


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_many_files_filling_the_work_dir_end_the_run_with_a_note():
    """The run's sources are read-only: the testbench's 16 MiB of files are not written
    (its ``$fopen`` gets 0). RTL, which no static check reads, can still write beside
    them (``../``): the work dir's bound ends that run."""
    evaluator = Evaluator(SimConfig(run_dir_bytes=4 << 20, result_cache=False))
    fill = ("    fd = $fopen(\"{where}fill{k}.bin\", \"w\");\n"  # 16 files x 1 MiB
            "    for (i = 0; i < 4096; i++) $fwrite(fd, \"%0256d\", i);\n"
            "    $fclose(fd); #1;\n")
    body = "".join(fill.format(where="", k=k) for k in range(16))
    src = tb(f"  integer fd, i;\n  initial begin\n{body}    $finish;\n  end\n")
    obs = evaluator.evaluate(fixture_task("mux2"), src)
    assert obs.status is Status.SUCCESS, obs.log
    mux2 = fixture_task("mux2")
    rtl = mux2.rtl_files[0]
    body = "".join(fill.format(where="../", k=k) for k in range(16))
    filler = rtl.content.replace("endmodule", f"  integer fd, i;\n  initial begin\n{body}"
                                 "  end\nendmodule", 1)
    task = mux2.model_copy(update={"rtl_files": [rtl.model_copy(update={"content": filler})]})
    obs = evaluator.evaluate(task, tb("  initial #40 $finish;\n"))
    assert (obs.status, obs.end_reason) == (Status.RUNTIME_ERROR, EndReason.CRASHED)
    assert "the files the testbench wrote passed 4 MiB together" in " ".join(obs.notes)
