"""The CLI through ``main(argv) -> int`` with the real simulator."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, FIXTURES, shared_path
from llm4cov.cli.app import main

pytestmark = pytest.mark.requires_verilator


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


def test_sim_bad_inputs_exit_2(tmp_path, capsys):
    assert main(["sim", "--rtl", str(tmp_path), "--tb", str(tmp_path / "x.sv")]) == 2
    assert "no RTL files" in capsys.readouterr().err
    assert main(["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", str(tmp_path / "nope.sv")]) == 2


def test_gen_random_writes_best_testbench_and_rounds(tmp_path):
    out = tmp_path / "run"
    assert main(["gen", str(EXAMPLES / "param_shift"), "--out", str(out), "--rounds", "2"]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["policy"]["model"] == "random"
    assert run["rounds"][0]["status"] == "success"
    assert (out / "tb.sv").read_text().startswith("module tb;")
    assert (out / "rounds" / "round_0.json").exists()
    assert "| toggle | 46 | 46 | 100.00 |" in (out / "coverage.md").read_text()


def test_gen_from_task_jsonl(tmp_path):
    tasks = shared_path("benchmarks", "cvdp_example.jsonl")
    out = tmp_path / "cvdp"
    rc = main(["gen", "--tasks", str(tasks), "--id", "cvdp/cvdp_copilot_gf_multiplier_0039",
               "--out", str(out), "--rounds", "1"])
    assert rc == 0
    assert "uut" in (out / "tb.sv").read_text()
    assert main(["gen", "--tasks", str(tasks), "--id", "nope", "--out", str(out)]) == 2
