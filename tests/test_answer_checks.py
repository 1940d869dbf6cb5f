"""Per-answer copy checks (llm4cov.bench.answer_checks) on the hand-read mux2 fixture:
ports sel, en, a, b, y; the task asks for the instance name `dut`."""

from __future__ import annotations

import pytest

from conftest import fixture_task
from llm4cov.bench.answer_checks import AnswerChecks, check_answer
from llm4cov.bench.config import Arm, ArmKind
from llm4cov.bench.plan import RunPlan, task_info
from llm4cov.bench.report import markdown
from llm4cov.bench.score import score

PORTS = ["sel", "en", "a", "b", "y"]
DECLS = "logic sel, en; logic [1:0] a, b, y;"


def answer(instance: str) -> str:
    return f"```systemverilog\nmodule tb; {DECLS}\n{instance}\ninitial $finish;\nendmodule\n```"


@pytest.mark.parametrize(("text", "expected"), [
    ("I cannot write that.", AnswerChecks()),
    # echoed RTL: a module, but nothing instantiates mux2
    ("```verilog\nmodule mux2(input sel, output y); endmodule\n```", AnswerChecks(True)),
    (answer("top_module dut(.sel(sel));"), AnswerChecks(True)),  # another module name
    (answer("mux2 dut(.sel(sel), .en(en), .a(a), .b(b), .y(y));"),
     AnswerChecks(True, True, True, True, True)),
    (answer("mux2 uut(.sel(sel), .en(en), .a(a), .b(b), .y(y));"),  # wrong instance name
     AnswerChecks(True, True, False, True, True)),
    (answer("mux2 dut(.sel(sel), .en(en), .a(a), .y(y));"),  # b left out
     AnswerChecks(True, True, True, True, False)),
    (answer("mux2 dut(.sel(sel), .enable(en), .a(a), .b(b), .y(y));"),  # no port `enable`
     AnswerChecks(True, True, True, False, False)),
    (answer("mux2 dut(.sel, .*);"), AnswerChecks(True, True, True, True, True)),
    (answer("mux2 dut(sel, en, a, b, y);"), AnswerChecks(True, True, True, True, True)),
    (answer("mux2 dut(sel, en, a, b);"), AnswerChecks(True, True, True, True, False)),
    (answer("mux2 dut(sel, en, a, b, y, y);"), AnswerChecks(True, True, True, False, False)),
    # two instances: pins are read on the one with the right name
    (answer("mux2 u0(.q(a));\nmux2 dut(.*);"), AnswerChecks(True, True, True, True, True)),
])
def test_checks_by_hand(text, expected):
    assert check_answer(text, "mux2", "dut", PORTS) == expected


def test_unknown_ports_and_any_instance_name():
    text = answer("mux2 u1(.*);")
    assert check_answer(text, "mux2", None, None) == AnswerChecks(True, True, True)
    assert check_answer(text, "mux2", "dut", None) == AnswerChecks(True, True)


def test_plan_names_the_dut_and_summary_counts_answers():
    info = task_info(fixture_task("mux2"), "verilator rev X")
    assert (info.dut_module, info.dut_instance, info.dut_ports) == ("mux2", "dut", PORTS)
    plan = RunPlan(command="c", identity={"mode": "direct"}, tasks_file="t.jsonl",
                   tasks_sha256="0", simulator="verilator rev X", coverage_options=[],
                   overall_metrics=["line"], stop_at_full_coverage=True,
                   arms=[Arm("m", ArmKind.AGENT, 3, 1)], tasks=[info])

    def row(sample: int, response: str | None) -> dict:
        return {"arm": "m", "task_id": info.id, "sample": sample, "round": 0,
                "sim_pass": False, "cov_pass": False, "coverage": 0.0, "response": response,
                "testbench_sha256": None, "prompt_tokens": 1, "completion_tokens": 1,
                "gen_s": 0.0, "build_s": 0.0, "run_s": 0.0, "observation": {}}

    rows = [row(0, answer("mux2 dut(.*);")), row(1, answer("mux2 uut(.sel(sel));")),
            row(2, "no code")]
    summary = score(plan, rows)
    assert summary["arms"]["m"]["answer_checks"] == {
        "answers": 3, "testbench": 2, "dut_module": 2, "dut_instance": 1, "pins_valid": 2,
        "pins_complete": 1}
    assert "| m | 3 | 66.7% | 66.7% | 33.3% | 66.7% | 33.3% | - |" in markdown(summary)
    assert "answer_checks_by_round" not in summary["arms"]["m"]  # one round only
    # two rounds: in round 1 sample 0 and 2 hold no code, sample 1 names the instance
    # uut with one pin; in round 2 samples 0 and 1 instantiate dut with every pin
    full = "mux2 dut(.sel(sel), .en(en), .a(a), .b(b), .y(y));"
    two = [row(0, "no code"), rows[1], rows[2],
           {**row(0, answer("mux2 dut(.*);")), "round": 1},
           {**row(1, answer(full)), "round": 1}]
    summary = score(plan, two)
    assert summary["arms"]["m"]["answer_checks"] == {
        "answers": 5, "testbench": 3, "dut_module": 3, "dut_instance": 2, "pins_valid": 3,
        "pins_complete": 2}
    assert summary["arms"]["m"]["answer_checks_by_round"] == {
        "1": {"answers": 3, "testbench": 1, "dut_module": 1, "dut_instance": 0,
              "pins_valid": 1, "pins_complete": 0},
        "2": {"answers": 2, "testbench": 2, "dut_module": 2, "dut_instance": 2,
              "pins_valid": 2, "pins_complete": 2}}
    assert "| m, round 2 | 2 | 100.0% | 100.0% | 100.0% | 100.0% | 100.0% | - |" in \
        markdown(summary)


def test_repeated_testbenches_are_counted_round_by_round():
    """Three rounds of two samples: sample 0 repeats its round-1 testbench in round 2 and
    changes it in round 3; sample 1 has no testbench in round 1 and repeats its round-2
    one in round 3. An answer without a testbench never counts as a repeat."""
    info = task_info(fixture_task("mux2"), "verilator rev X")
    plan = RunPlan(command="c", identity={"mode": "agentic"}, tasks_file="t.jsonl",
                   tasks_sha256="0", simulator="verilator rev X", coverage_options=[],
                   overall_metrics=["line"], stop_at_full_coverage=True,
                   arms=[Arm("m", ArmKind.AGENT, 1, 3)], tasks=[info])
    hashes = {0: ["h1", "h1", "h2"], 1: [None, "h3", "h3"]}
    rows = [{"arm": "m", "task_id": info.id, "sample": s, "round": r, "sim_pass": False,
             "cov_pass": False, "coverage": 0.0, "response": None, "testbench_sha256": h,
             "prompt_tokens": 1, "completion_tokens": 1, "gen_s": 0.0, "build_s": 0.0,
             "run_s": 0.0, "observation": {}}
            for s, hs in hashes.items() for r, h in enumerate(hs)]
    summary = score(plan, rows)
    assert summary["arms"]["m"]["repeated_testbench_by_round"] == {
        "2": {"answers": 2, "repeated": 1}, "3": {"answers": 2, "repeated": 1}}
