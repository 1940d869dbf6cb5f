"""Never silent (issue 41): a run whose stimulus never exercised the design, whose policy
repeated itself or whose formal job failed says so on stderr, in run.json and in
coverage.md; ``targets_met`` only where targets exist."""

from __future__ import annotations

import json

import pytest

from llm4cov.agent.loop import AgentRun, RoundRecord
from llm4cov.agent.warnings import run_warnings, warnings_markdown
from llm4cov.cli.app import main
from llm4cov.sim.model.observation import (
    CoverageReport,
    MetricCoverage,
    Observation,
    Status,
    overall_percent,
)
from support.replay_server import ReplayServer


def _round(k: int, tb: str, metrics: dict[str, tuple[int, int]],
           annotations: dict | None = None) -> RoundRecord:
    per = {m: MetricCoverage(covered=c, total=t) for m, (c, t) in metrics.items()}
    cov = CoverageReport(dut_hier="tb.dut", metrics=per, overall=overall_percent(per))
    obs = Observation(status=Status.SUCCESS, coverage=cov)
    return RoundRecord(round=k, from_round=k - 1, messages=[], response="", model="m",
                       testbench=tb, observation=obs, annotations=annotations or {})


def test_each_kind_is_found_with_its_numbers():
    job = {"formal": {"error": 3, "job_errors": ["cover job failed:  timing\ncontrol"]}}
    run = AgentRun(task_id="t", best_round=0, rounds=[
        _round(0, "module tb; endmodule\n", {"toggle": (2, 40), "fsm": (1, 6)}),
        _round(1, "module tb; endmodule\n", {"toggle": (2, 40)}, job),
    ])
    got = [(w.kind, w.message) for w in run_warnings(run)]
    assert got == [
        ("not_exercised", "the best testbench (round 1) toggled 5.0% of the DUT's signal "
                          "bits (2/40): the stimulus barely exercised the design"),
        ("fsm_stuck", "the best testbench (round 1) covered 1 of 6 FSM states and arcs: "
                      "the state machines never left their reset state"),
        ("unchanged", "round 2 repeated round 1's testbench unchanged: the policy did not "
                      "act on the feedback"),
        ("formal_job_failed", "round 2: formal: 3 goals not classified, a job failed: "
                              "cover job failed: timing control"),
    ]


def test_a_healthy_run_has_no_warning_and_no_section():
    run = AgentRun(task_id="t", rounds=[_round(0, "a", {"toggle": (30, 40)}),
                                        _round(1, "b", {"toggle": (36, 40)})], best_round=1)
    assert run_warnings(run) == [] and warnings_markdown([]) == ""


#: A design whose enable the testbench never raises: q and its register never toggle.
COUNTER = ("module counter(input logic clk, input logic rst, input logic en,\n"
           "               output logic [15:0] q);\n"
           "  always_ff @(posedge clk) if (rst) q <= '0; else if (en) q <= q + 16'd1;\n"
           "endmodule\n")
IDLE_TB = ("```systemverilog\nmodule tb;\n  logic clk = 0, rst = 1, en = 0;\n"
           "  logic [15:0] q;\n  counter dut(.clk(clk), .rst(rst), .en(en), .q(q));\n"
           "  always #5 clk = ~clk;\n  initial begin #100 $finish; end\nendmodule\n```")


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_gen_says_the_stimulus_never_exercised_the_design(tmp_path, capsys):
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "counter.sv").write_text(COUNTER)
    out = tmp_path / "out"
    with ReplayServer([IDLE_TB], cycle=True) as server:  # recorded answers: the same twice
        code = main(["gen", str(tmp_path / "rtl"), "--out", str(out), "--rounds", "2",
                     "--model", "recorded-model", "--base-url", server.base_url])
    assert code == 0
    err = capsys.readouterr().err
    run = json.loads((out / "run.json").read_text())
    kinds = [w["kind"] for w in run["warnings"]]
    assert kinds == ["not_exercised", "unchanged"]
    assert "warning: the best testbench (round 1) toggled" in err
    assert "warning: round 2 repeated round 1's testbench unchanged" in err
    assert "## Warnings" in (out / "coverage.md").read_text()
    html = (out / "html" / "index.html").read_text()
    assert "<b>warning:</b> the best testbench (round 1) toggled" in html
    assert [r["targets_met"] for r in run["rounds"]] == [None, None]  # no targets
