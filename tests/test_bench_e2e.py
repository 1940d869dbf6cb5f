"""``llm4cov bench`` end to end with the real simulator on two tiny tasks.

Tasks: tests/fixtures/mux2 (target 100%, with a reference testbench that names its
instance ``uut`` and reads its stimulus from a data file) and examples/alu_comb (target
90%, no reference). Expected numbers come from the designs: an exhaustive stimulus
covers every point of both (100%), and tests/fixtures/mux2_partial_tb.sv reaches the
hand-counted (100 + 50 + 200/3 + 18.75) / 4 percent (tests/test_coverage_counts.py).
About 15 simulations in all.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, FIXTURES, fixture_task
from llm4cov.bench.session import write_reports
from llm4cov.cli.app import main
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.tasks.model import ReferenceTestbench, SourceFile, Target
from support.replay_server import ReplayServer

pytestmark = pytest.mark.requires_verilator

BENCH = FIXTURES / "bench"
PARTIAL = (100 + 50 + 200 / 3 + 18.75) / 4  # mux2_partial_tb.sv, counted by hand
NO_CODE = "Sorry, I cannot write that testbench."


def _fenced(code: str) -> str:
    return f"<think>plan the stimulus</think>\nHere it is:\n```systemverilog\n{code}```\n"


def _broken(module: str) -> str:
    return _fenced(f"module tb;\n  {module} dut ();\n  initial begin\n    nope = 1;\n"
                   "    $finish;\n  end\nendmodule\n")


# (DUT module, policy seed) -> response; sample s, round r has seed 1000 * s + r
RESPONSES = {
    ("mux2", 0): _broken("mux2"),
    ("mux2", 1): _fenced((BENCH / "mux2_full_tb.sv").read_text()),
    ("mux2", 1000): _fenced((FIXTURES / "mux2_partial_tb.sv").read_text()),
    ("mux2", 1001): NO_CODE,
    ("alu4", 0): _fenced((BENCH / "alu4_full_tb.sv").read_text()),  # 100%: stops
    ("alu4", 1000): NO_CODE,
    ("alu4", 1001): _broken("alu4"),
}
LLM_ROWS = 7  # mux2: 2 + 2 rounds; alu4: 1 + 2 rounds


def select(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    module = "mux2" if "Instantiate `mux2`" in prompt else "alu4"
    return RESPONSES[(module, body["seed"])]


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory) -> Path:
    reference = ReferenceTestbench(
        name="mux2_ref_tb.sv", content=(BENCH / "mux2_ref_tb.sv").read_text(),
        aux_files=[SourceFile(name="mux2_vectors.hex",
                              content=(BENCH / "mux2_vectors.hex").read_text())])
    mux = fixture_task("mux2").model_copy(update={
        "targets": [Target(inst_name="dut", target_percentage=100)], "reference_tb": reference})
    alu = task_from_dir(EXAMPLES / "alu_comb").model_copy(update={
        "targets": [Target(inst_name="dut", target_percentage=90)]})
    path = tmp_path_factory.mktemp("tasks") / "tiny.jsonl"
    path.write_text(mux.model_dump_json() + "\n" + alu.model_dump_json() + "\n")
    return path


def _bench(tasks: Path, out: Path, *extra: str) -> int:
    return main(["bench", "--tasks", str(tasks), "--samples", "2", "--rounds", "2",
                 "--out", str(out), "--workers", "2", "--no-progress", *extra])


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _numbers(summary: dict) -> dict:
    """Every metric of every arm (what was spent and when aside)."""
    return {name: {k: v for k, v in arm.items() if k != "spent"}
            for name, arm in summary["arms"].items()}


@pytest.mark.heavy
def test_random_policy_and_reference_rows(tasks_file, tmp_path):
    out = tmp_path / "random"
    assert _bench(tasks_file, out) == 0
    s = _summary(out)
    assert s["complete"] and s["mode"] == "agentic"
    rnd, ref = s["arms"]["random"], s["arms"]["reference"]
    # both designs have <= 10 input bits and no clock: the random policy drives them
    # exhaustively, reaches 100% in round 1 and stops there
    assert rnd["headline"]["sim_pass"] == rnd["headline"]["cov_pass"] == 100.0
    assert rnd["headline"]["avg_cov"] == pytest.approx(100.0)
    assert (rnd["samples_finished"], rnd["spent"]["sim_calls"]) == (4, 4)
    # the random policy's answers get every name right; the reference has no answers
    assert rnd["answer_checks"] == {"answers": 4, "testbench": 4, "dut_module": 4,
                                    "dut_instance": 4, "pins_valid": 4, "pins_complete": 4}
    assert "answer_checks" not in ref
    # the reference runs once per task that has one, under its own instance name `uut`
    assert (ref["tasks_planned"], ref["samples_finished"]) == (1, 1)
    assert ref["headline"]["avg_cov"] == pytest.approx(100.0)

    rows = _rows(out)
    assert len(rows) == 5
    first = next(r for r in rows if r["arm"] == "random" and r["sample"] == 1)
    assert (first["round"], first["seed"], first["sim_seed"]) == (0, 1000, 1)
    assert first["simulator"].startswith("verilator ")
    assert first["params"] == {"temperature": 0.7, "top_p": 0.8, "max_tokens": 8192,
                               "seed": None}
    assert first["status"] == "success" and first["wall_s"] > 0
    reference = next(r for r in rows if r["arm"] == "reference")
    assert reference["observation"]["coverage"]["dut_hier"] == "mux2_ref_tb.uut"
    assert reference["policy"]["aux_files"] == ["mux2_vectors.hex"]

    md = (out / "summary.md").read_text()
    assert "llm4cov bench --tasks" in md and "Sim Pass" in md
    assert (out / "report.html").read_text().count("<img") == 3


@pytest.fixture(scope="module")
def llm_run(tasks_file, tmp_path_factory):
    """A clean run with recorded responses through the real openai client."""
    out = tmp_path_factory.mktemp("llm") / "run"
    with ReplayServer([], select=select) as server:
        code = _bench(tasks_file, out, "--model", "recorded-model", "--base-url",
                      server.base_url, "--baselines", "", "--no-plots")
        requests = list(server.requests)
    assert code == 0
    return out, requests


@pytest.mark.heavy
def test_retry_tool_errors_redoes_only_those_rounds(tasks_file, tmp_path):
    out = tmp_path / "retry"
    direct = ("--baselines", "random", "--mode", "direct")  # 1 round: a failed one ends it
    assert _bench(tasks_file, out, *direct) == 0
    rows = _rows(out)
    # mark one finished round as a failure of the simulator itself
    i = next(i for i, r in enumerate(rows) if r["task_id"].endswith("mux2") and r["sample"] == 1)
    rows[i].update(status="tool_error", tool_error=True, sim_pass=False, cov_pass=False,
                   coverage=0.0)
    (out / "results.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n"
                                               for r in rows))
    assert _bench(tasks_file, out, *direct) == 0  # a plain resume keeps it
    assert _summary(out)["arms"]["random"]["tool_failures"] == 1
    assert _bench(tasks_file, out, *direct, "--retry-tool-errors") == 0
    again = _rows(out)
    assert len(again) == 4 and not any(r["tool_error"] for r in again)
    assert again[-1]["task_id"].endswith("mux2") and again[-1]["sample"] == 1
    assert again[-1]["coverage"] == pytest.approx(100.0)  # redone: exhaustive again
    assert again[:3] == [r for j, r in enumerate(rows) if j != i]  # the rest untouched
    s = _summary(out)
    assert s["arms"]["random"]["tool_failures"] == 0
    assert [inv["removed_tool_error_rows"] for inv in s["invocations"][1:]] == [0, 1]
    assert [inv["sim_calls"] for inv in s["invocations"]] == [4, 0, 1]


@pytest.mark.heavy
def test_llm_run_numbers_by_hand(llm_run):
    out, requests = llm_run
    s = _summary(out)
    assert list(s["arms"]) == ["recorded-model"]
    arm = s["arms"]["recorded-model"]
    # finals - mux2: s0 round 2 full (100, pass), s1 round 1 partial (sim only);
    #          alu4: s0 round 1 full (100, pass, stopped), s1 nothing simulates
    h = arm["headline"]
    assert h["sim_pass"] == pytest.approx(75.0)
    assert h["cov_pass"] == pytest.approx(50.0)
    assert h["avg_cov"] == pytest.approx(((100 + PARTIAL) / 2 + 50) / 2, abs=1e-3)
    assert h["best_of_n"] == pytest.approx(100.0)
    assert h["pass_at_k"]["2"] == pytest.approx(100.0)
    # after round 1 - mux2: compile error, partial; alu4: full, no code
    r1 = arm["per_round"][0]
    assert r1["sim_pass"] == pytest.approx(50.0)
    assert r1["cov_pass"] == pytest.approx(25.0)
    assert r1["avg_cov"] == pytest.approx((PARTIAL / 2 + 50) / 2, abs=1e-3)

    rows = _rows(out)
    assert len(rows) == len(requests) == LLM_ROWS
    statuses = {(r["task_id"].split("/")[1], r["sample"], r["round"]): r["status"] for r in rows}
    assert statuses[("mux2", 0, 0)] == "compile_error"
    assert statuses[("mux2", 1, 1)] == "rejected"
    assert ("alu_comb", 0, 1) not in statuses  # stopped at 100%
    assert arm["spent"]["sim_calls"] == 5  # the two responses without code never simulate
    # 7 answers: 2 without code; the 2 broken ones (`mux2 dut ();`) connect no pin
    assert arm["answer_checks"] == {"answers": 7, "testbench": 5, "dut_module": 5,
                                    "dut_instance": 5, "pins_valid": 5, "pins_complete": 3}
    assert arm["spent"]["prompt_tokens"] == sum(r["prompt_tokens"] for r in rows) > 0
    assert all(r["model"] == "recorded-model" for r in rows)
    # the client sent the paper's sampling settings, and the hidden reference never
    for body in requests:
        assert (body["temperature"], body["top_p"]) == (0.7, 0.8)
        assert "mux2_vectors.hex" not in json.dumps(body["messages"])

    assert main(["bench", "report", str(out), "--pass-k-estimator", "cvdp", "--no-plots"]) == 0
    cvdp = _summary(out)["arms"]["recorded-model"]["headline"]
    assert cvdp["pass_at_k"]["2"] == pytest.approx(75.0)  # 1 - (1 - 1/2)^2 on both tasks


@pytest.mark.heavy
def test_interrupted_run_resumes_to_identical_numbers(llm_run, tasks_file, tmp_path):
    clean_out, _ = llm_run
    out = tmp_path / "resumed"
    args = ("--model", "recorded-model", "--baselines", "", "--no-plots")
    with ReplayServer([], select=select) as server:
        assert _bench(tasks_file, out, *args, "--base-url", server.base_url,
                      "--max-sim-calls", "2") == 0
        first = _summary(out)
        assert not first["complete"]
        assert first["invocations"][-1]["budget"]["exhausted"] == "sim_calls"
        rows_before, asked_before = len(_rows(out)), len(server.requests)
        assert 0 < rows_before < LLM_ROWS

        assert _bench(tasks_file, out, *args, "--base-url", server.base_url) == 0
        rows = _rows(out)
        # finished rounds are replayed, not asked again: one new request per new row
        assert len(server.requests) - asked_before == len(rows) - rows_before
    assert len(rows) == LLM_ROWS
    assert len({(r["task_id"], r["sample"], r["round"]) for r in rows}) == LLM_ROWS
    resumed = _summary(out)
    assert resumed["complete"] and len(resumed["invocations"]) == 2
    assert _numbers(resumed) == _numbers(write_reports(clean_out, plots=False))

    # the directory refuses a resume with other settings
    assert _bench(tasks_file, out, *args, "--base-url", "http://127.0.0.1:9/v1",
                  "--temperature", "0.2") == 2


@pytest.mark.slow
def test_killed_run_resumes_to_identical_numbers(llm_run, tasks_file, tmp_path):
    """SIGKILL the whole bench process group while second-round requests are in flight,
    then rerun: the torn state resumes to the clean run's numbers."""
    clean_out, _ = llm_run
    out = tmp_path / "killed"

    def slow_select(body: dict) -> str:
        if body["seed"] % 1000 == 1:  # every second-round request hangs for a while
            time.sleep(5)
        return select(body)

    with ReplayServer([], select=slow_select) as server:
        args = ["--tasks", str(tasks_file), "--samples", "2", "--rounds", "2", "--out",
                str(out), "--workers", "2", "--no-progress", "--model", "recorded-model",
                "--baselines", "", "--no-plots", "--base-url", server.base_url]
        proc = subprocess.Popen(
            [sys.executable, "-c", "from llm4cov.cli.app import main; raise SystemExit(main())",
             "bench", *args], start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        results = out / "results.jsonl"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and (
                not results.exists() or len(results.read_text().splitlines()) < 3):
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kept = len(_rows(out))
        assert 0 < kept < LLM_ROWS
        assert main(["bench", *args]) == 0
    assert len(_rows(out)) == LLM_ROWS
    assert _numbers(_summary(out)) == _numbers(write_reports(clean_out, plots=False))
