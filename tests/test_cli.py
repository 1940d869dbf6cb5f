"""The CLI through ``main(argv) -> int``: usage errors and bad input (one line, exit 2,
no traceback), and commands with the real simulator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, FIXTURES, shared_path
from llm4cov.cli.app import main
from llm4cov.cli.errors import classify
from llm4cov.sim.safety.host import ToolchainError

MUX2 = (FIXTURES / "mux2" / "mux2.sv").read_text()


def error_line(capsys) -> str:
    """The one line a failed command printed on stderr (asserts it is one line)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def task_line(task_id: str, dut: str = "mux2") -> str:
    return json.dumps({"id": task_id, "source": "local", "dut_module_name": dut,
                       "rtl_files": [{"name": "mux2.sv", "content": MUX2}]}) + "\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["nosuch"], "error: No such command 'nosuch'. (see 'llm4cov --help')"),
    (["gen", "examples/alu_comb"], "error: Missing option '--out'. (see 'llm4cov gen --help')"),
    (["gen", "--zzz"], "error: No such option: --zzz (see 'llm4cov gen --help')"),
    (["sim", "--tb"], "error: Option '--tb' requires an argument."),
    (["gen", "x", "--out", "o", "--rounds", "0"], "error: Invalid value for '--rounds': Input "
     "should be greater than or equal to 1 (see 'llm4cov gen --help')"),
    (["bench", "--tasks", "t.jsonl", "--mode", "weird"], "error: Invalid value for '--mode': "
     "Value error, 'weird' is not one of 'agentic', 'direct'. (see 'llm4cov bench --help')"),
    (["bench", "--tasks", "t.jsonl", "--samples", "x"], "error: Invalid value for '--samples': "
     "Input should be a valid integer, unable to parse string as an integer "
     "(see 'llm4cov bench --help')"),
    (["cache", "drop"], "error: No such command 'drop'. (see 'llm4cov cache --help')"),
    (["sim", "--rtl", "examples/alu_comb", "--tb", "t.sv", "--run-timeout", "-5"],
     "error: Invalid value for '--run-timeout': Input should be greater than or equal to "
     "0.001 (see 'llm4cov sim --help')"),
    (["sim", "--rtl", "examples/alu_comb", "--tb", "t.sv", "--param", "WIDTH"],
     "error: --param 'WIDTH': expected NAME=VALUE"),
    (["gen", "examples/alu_comb", "--out", "o", "--instance", "bad name"],
     "error: --instance 'bad name' is not a SystemVerilog identifier"),
    (["sim", "--rtl", "examples/alu_comb", "--tasks", "t.jsonl", "--id", "a", "--tb", "t.sv"],
     "error: give either an RTL directory or --tasks FILE --id ID, not both"),
])
def test_usage_errors_are_one_line_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert error_line(capsys) == message


def test_usage_error_through_the_installed_script():
    script = Path(sys.executable).with_name("llm4cov")
    proc = subprocess.run([script, "gen", "--zzz"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["error: No such option: --zzz (see 'llm4cov gen --help')"]


def test_bare_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("Usage: llm4cov [OPTIONS] COMMAND [ARGS]...")


def test_out_naming_a_file_is_bad_input_and_writes_nothing(tmp_path, capsys):
    existing = tmp_path / "taken"
    existing.write_text("mine\n")
    assert main(["gen", str(EXAMPLES / "alu_comb"), "--out", str(existing)]) == 2
    assert error_line(capsys) == (f"error: Invalid value for '--out': dir '{existing}' is a "
                                  "file. (see 'llm4cov gen --help')")
    assert existing.read_text() == "mine\n"


@pytest.mark.parametrize(("content", "message"), [
    (b'{"id": "caf\xe9"}\n', "not UTF-8 text (byte 11)"),
    ((task_line("t1") + task_line("t1")).encode(), "duplicate task id t1"),
    (task_line("t1", dut="nope").encode(),
     "task t1: dut_module_name 'nope' is not declared in its RTL files"),
])
@pytest.mark.parametrize("command", [["gen", "--id", "t1"], ["bench"]])
def test_bad_task_files_are_one_line_exit_2_and_write_nothing(command, content, message,
                                                              tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(content)
    out = tmp_path / "out"
    assert main([*command, "--tasks", str(tasks), "--out", str(out)]) == 2
    assert error_line(capsys) == f"error: {tasks}: {message}"
    assert not out.exists()


def test_exit_codes_are_mapped_in_one_place():
    from llm4cov.exec.base import WorkerLost
    from llm4cov.tasks.model import TaskError

    assert classify(TaskError("bad\nrecord")) == (2, "bad record")
    assert classify(FileNotFoundError(2, "No such file or directory", "x.sv")) == (
        2, "x.sv: No such file or directory")
    assert classify(ToolchainError("verilator not found")) == (
        3, "simulator toolchain: verilator not found")
    assert classify(WorkerLost("sim: a worker died", 4)) == (
        1, "sim: a worker died (worker lost on all 4 attempts)")
    missing = ModuleNotFoundError("No module named 'transformers'", name="transformers")
    code, message = classify(missing)
    assert code == 3 and message.startswith("this command needs transformers: the [train]")
    assert classify(KeyError("k")) == (
        1, "internal error, KeyError: 'k' (llm4cov -v shows where)")


@pytest.mark.parametrize("command", ["", "sim", "gen", "bench", "bench report", "synth",
                                     "train", "pipeline", "cache", "cache clear"])
def test_help_fits_80_columns(command, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main([*command.split(), "--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"Usage: llm4cov {command}".replace("  ", " "))
    assert max(len(line) for line in lines) <= 80


def test_help_marks_required_options(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["gen", "--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    out_line = next(line for line in lines if line.startswith("  --out"))
    assert out_line.split() == ["--out", "<dir>", "Output", "directory.", "[required]"]


@pytest.mark.requires_verilator
def test_sim_json_and_exit_codes(tmp_path, capsys):
    rc = main(["sim", "--rtl", str(FIXTURES / "mux2"), "--tb",
               str(FIXTURES / "mux2_partial_tb.sv"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["status"] == "success"
    assert out["coverage"]["metrics"]["toggle"] == {"covered": 3, "total": 16}
    bad = tmp_path / "bad.sv"
    bad.write_text("module tb; mux2 dut(); initial x = ; endmodule\n")
    assert main(["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", str(bad)]) == 1
    assert "bad.sv:1" in capsys.readouterr().out


@pytest.mark.requires_verilator
def test_sim_bad_inputs_exit_2(tmp_path, capsys):
    assert main(["sim", "--rtl", str(tmp_path), "--tb", str(tmp_path / "x.sv")]) == 2
    assert "no RTL files" in capsys.readouterr().err
    assert main(["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", str(tmp_path / "nope.sv")]) == 2


@pytest.mark.requires_verilator
def test_gen_random_writes_best_testbench_and_rounds(tmp_path):
    out = tmp_path / "run"
    assert main(["gen", str(EXAMPLES / "param_shift"), "--out", str(out), "--rounds", "2"]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["policy"]["model"] == "random"
    assert run["rounds"][0]["status"] == "success"
    assert (out / "tb.sv").read_text().startswith("module tb;")
    assert (out / "rounds" / "round_1.json").exists()  # rounds count from 1, as printed
    assert "| toggle | 46 | 46 | 100.00 |" in (out / "coverage.md").read_text()


@pytest.mark.requires_verilator
def test_gen_from_task_jsonl(tmp_path):
    tasks = shared_path("benchmarks", "cvdp_example.jsonl")
    out = tmp_path / "cvdp"
    rc = main(["gen", "--tasks", str(tasks), "--id", "cvdp/cvdp_copilot_gf_multiplier_0039",
               "--out", str(out), "--rounds", "1"])
    assert rc == 0
    assert "uut" in (out / "tb.sv").read_text()
    assert main(["gen", "--tasks", str(tasks), "--id", "nope", "--out", str(out)]) == 2
