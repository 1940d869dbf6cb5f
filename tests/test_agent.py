"""The memoryless agent loop with recorded LLM responses and the real simulator."""

from __future__ import annotations

import pytest

from conftest import fixture_task
from llm4cov.agent.loop import AgentConfig, run_agent
from llm4cov.policies import get_policy
from llm4cov.sim.model.observation import Status
from support.replay_server import ReplayServer

pytestmark = pytest.mark.requires_verilator

PORTS = "  logic sel = 0, en = 0; logic [1:0] a = 0, b = 0; wire [1:0] y;\n" \
        "  mux2 dut (.sel(sel), .en(en), .a(a), .b(b), .y(y));\n"
BROKEN = (
    "```systemverilog\nmodule tb;\n" + PORTS + "  initial begin a = 2'b1x2; end\nendmodule\n```"
)
PARTIAL = "```systemverilog\nmodule tb;\n" + PORTS + \
    "  initial begin #1 a = 1; #1 $finish; end\nendmodule\n```"
FULL = "```systemverilog\nmodule tb;\n" + PORTS + """  initial begin
    for (int i = 0; i < 64; i++) begin {sel, en, a, b} = 6'(i); #1; end
    {sel, en, a, b} = 6'd0; #1;
    $finish;
  end
endmodule
```"""


def _run(responses, **config):
    task = fixture_task("mux2")
    with ReplayServer(responses) as server:
        policy = get_policy("recorded", base_url=server.base_url)
        run = run_agent(task, policy, _evaluator(), AgentConfig(**config))
    return run, server.requests


_EV = []


def _evaluator():
    from llm4cov.sim.evaluator import Evaluator

    if not _EV:
        _EV.append(Evaluator())
    return _EV[0]


@pytest.mark.heavy
def test_three_rounds_memoryless_recovery_and_best_state():
    run, requests = _run(["no code, sorry", BROKEN, FULL], rounds=3)
    statuses = [r.observation.status for r in run.rounds]
    assert statuses == [Status.REJECTED, Status.COMPILE_ERROR, Status.SUCCESS]
    assert run.best_round == 2 and run.best.observation.overall() == 100.0
    first, second, third = (req["messages"][1]["content"] for req in requests)
    assert "## Current testbench" not in first  # s_0: no testbench yet
    assert "contained no testbench code block" in second
    assert "no testbench in response" in second
    # memoryless: round 3 sees round 2's testbench and its error, not round 1's answer
    assert "2'b1x2" in third and "compile_error" in third
    assert "no testbench in response" not in third


@pytest.mark.heavy
def test_start_from_best_and_early_stop():
    run, requests = _run([PARTIAL, BROKEN, FULL], rounds=3, start_from="best")
    assert [r.from_round for r in run.rounds] == [-1, 0, 0]  # round 1 failed: back to 0
    assert "2'b1x2" not in requests[2]["messages"][1]["content"]
    assert "a = 1; #1 $finish" in requests[2]["messages"][1]["content"]
    run, requests = _run([FULL, PARTIAL], rounds=3)
    assert len(run.rounds) == 1 and len(requests) == 1  # stopped at 100% coverage


def test_direct_inference_is_one_round():
    run, _ = _run([PARTIAL], rounds=1)
    assert len(run.rounds) == 1 and run.best.observation.status is Status.SUCCESS
    assert run.rounds[0].messages[0]["role"] == "system"
