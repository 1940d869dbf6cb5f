"""Synthesis end to end with the real simulator on tests/fixtures/mux2: recorded LLM
responses from two endpoints (student, teacher), an interruption mid-repo and its
resume, then the CLI with budgets, the compile screen and the export."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from conftest import fixture_task
from llm4cov.cli.app import main
from llm4cov.exec import get_executor
from llm4cov.policies import PolicyError, get_policy
from llm4cov.synth.config import resolve, stage_preset
from llm4cov.synth.engine import SynthRun
from llm4cov.synth.records import SAMPLE_KEY, Role
from llm4cov.synth.sources import RepoItem
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.util.jsonl import iter_jsonl
from support.replay_server import ReplayServer

pytestmark = pytest.mark.requires_verilator

PORTS = ("  logic sel = 0, en = 0; logic [1:0] a = 0, b = 0; wire [1:0] y;\n"
         "  mux2 dut (.sel(sel), .en(en), .a(a), .b(b), .y(y));\n")
PARTIAL = f"```systemverilog\nmodule tb;\n{PORTS}  initial begin #1 a = 1; #1 $finish; end\n" \
          "endmodule\n```"
BROKEN = f"```systemverilog\nmodule tb;\n{PORTS}  initial begin a = 2'b1x2; end\nendmodule\n```"
FULL = f"""```systemverilog
module tb;
{PORTS}  initial begin
    for (int i = 0; i < 64; i++) begin {{sel, en, a, b}} = 6'(i); #1; end
    {{sel, en, a, b}} = 6'd0; #1;
    $finish;
  end
endmodule
```"""
STAGE1 = ["selection.candidates=2", "transitions=1", "screen_compile=false", "concurrency=1",
          "syntax_rules=true"]


def _run(out, student_url, teacher_url):
    cfg = resolve(stage_preset(1), None, STAGE1)
    policies = {Role.INTERMEDIATE: get_policy("student-m", student_url, max_retries=0),
                Role.TRANSITION: get_policy("teacher-m", teacher_url, max_retries=0)}
    task = fixture_task("mux2")
    executor = get_executor("local", workers=2)
    try:
        run = SynthRun(out, cfg, policies, executor.simulate)
        return asyncio.run(run.run([RepoItem(task.id, task)]))
    finally:
        executor.close()


def _keys(out):
    return [tuple(r[k] for k in SAMPLE_KEY) for r in iter_jsonl(out / "samples.jsonl")]


def test_imitation_trace_interrupted_and_resumed(tmp_path):
    out = tmp_path / "run"
    # The teacher has one recorded answer; its second request fails (HTTP 500).
    student = ReplayServer([PARTIAL, BROKEN], model="student-m")
    teacher = ReplayServer([FULL], model="teacher-m")
    with student, teacher, pytest.raises(PolicyError):
        _run(out, student.base_url, teacher.base_url)
    assert all("## SystemVerilog rules" in r["messages"][-1]["content"]
               for r in student.requests + teacher.requests)
    assert len(_keys(out)) == 3  # both M_int states and the finished transition survive
    assert not list(iter_jsonl(out / "repos.jsonl"))

    with ReplayServer([], model="student-m") as student2, \
            ReplayServer([FULL], model="teacher-m") as teacher2:
        outcome = _run(out, student2.base_url, teacher2.base_url)
    assert (len(student2.requests), len(teacher2.requests)) == (0, 1)
    assert outcome.done == 1
    keys = _keys(out)
    assert len(keys) == len(set(keys)) == 4

    points = list(iter_jsonl(out / "points.jsonl"))
    by_kind = Counter((p["kind"], p["verdict"]) for p in points)
    assert by_kind == {("direct", "kept"): 1, ("direct", "sim_failed"): 1,
                       ("agentic", "kept"): 2}
    states = {p["state"]["selected_as"]: p for p in points if p["kind"] == "agentic"}
    assert set(states) == {"worst", "failure"}
    assert states["failure"]["state"]["observation"]["status"] == "compile_error"
    worst = states["worst"]
    assert worst["state"]["cov"] == pytest.approx((100 + 50 + 200 / 3 + 2 / 16 * 100) / 400,
                                                  abs=1e-4)  # a[0], y[0] rise: 2/16 toggles
    assert worst["next"]["cov"] == 1.0
    assert worst["gain"] == pytest.approx(1.0 - worst["state"]["cov"])
    assert {p["models"]["trans"] for p in points} == {"teacher-m"}
    assert worst["trace_type"] == "imitation" and worst["stage"] == 1

    with ReplayServer([], model="student-m") as s3, ReplayServer([], model="teacher-m") as t3:
        again = _run(out, s3.base_url, t3.base_url)
    assert (again.done, again.already, len(s3.requests) + len(t3.requests)) == (0, 1, 0)


def _broken_repo() -> Task:
    """RTL that pyslang parses but Verilator cannot build (a missing submodule)."""
    rtl = ("module wrap(input logic a, output logic y);\n"
           "  missing_cell u0 (.a(a), .y(y));\nendmodule\n")
    return Task(id="local/wrap", rtl_files=[SourceFile(name="wrap.sv", content=rtl)],
                dut_module_name="wrap")


def test_cli_budget_resume_screen_and_export(tmp_path):
    repos = tmp_path / "repos.jsonl"
    repos.write_text(fixture_task("mux2").model_dump_json() + "\n"
                     + _broken_repo().model_dump_json() + "\n")
    out = tmp_path / "run"
    base = ["synth", "--stage", "0", "--repos", str(repos), "--teacher", "random",
            "--out", str(out), "--workers", "2"]
    # per repo at most: probe + 1 state + 1 transition = 3 calls
    assert main([*base, "--max-sim-calls", "3"]) == 0
    rows = list(iter_jsonl(out / "repos.jsonl"))
    assert [(r["repo_id"], r["status"]) for r in rows] == [("local/mux2", "done")]
    assert main([*base, "--max-sim-calls", "6"]) == 0
    rows = list(iter_jsonl(out / "repos.jsonl"))
    assert [(r["repo_id"], r["status"], r["reason"]) for r in rows] == [
        ("local/mux2", "done", ""), ("local/wrap", "skipped", "rtl_error")]  # its own RTL
    assert sum(r["simulated"] for r in iter_jsonl(out / "samples.jsonl")) == 4
    assert main([*base, "--set", "seed=3"]) == 2  # another identity: refused

    assert main(["synth", "export", str(out), "--out", str(tmp_path / "sft"),
                 "--set", "rebalance.short_direct_keep=1"]) == 0
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "sft" / "sft.jsonl"),
                               split="train", cache_dir=str(tmp_path / "cache"))
    points = list(iter_jsonl(out / "points.jsonl"))
    assert ds.num_rows == sum(p["verdict"] == "kept" for p in points) >= 1
    for row in ds:
        assert row["messages"][2]["content"].startswith("```systemverilog\n")
        assert "## SystemVerilog rules" not in row["messages"][1]["content"]
    run = json.loads((out / "run.json").read_text())
    assert run["command"].startswith("llm4cov synth --stage 0 --repos")
