"""The random-stimulus baseline (no simulator needed for the structure checks)."""

from __future__ import annotations

import pytest

from conftest import example_task, fixture_task
from llm4cov.agent.response import extract_testbench
from llm4cov.policies import GenerationRequest, get_policy
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.tasks.model import SourceFile, Task


def test_small_combinational_input_space_is_exhaustive():
    tb = random_testbench(fixture_task("mux2"), seed=0)
    # sel, en, a[2], b[2] = 6 input bits -> 64 vectors in one loop
    assert "for (int i = 0; i < 64; i++)" in tb
    assert "{sel, en, a, b} = 6'(i);" in tb
    assert "$finish;" in tb and "mux2 dut (" in tb


def test_clock_reset_and_random_vectors_are_seeded():
    task = example_task("traffic_fsm")
    tb = random_testbench(task, seed=5, length=10)
    assert "always #5 clk = ~clk;" in tb
    assert tb.count("rst_n = 1'b0;") == 2  # initial reset + one mid-run pulse
    assert tb.count("{ped_req} = 1'h") == 10
    assert tb == random_testbench(task, seed=5, length=10)
    assert tb != random_testbench(task, seed=6, length=10)


@pytest.mark.parametrize(
    ("name", "active_value"),
    [("rst", "1'b1"), ("rst_n", "1'b0"), ("resetn", "1'b0"), ("nreset", "1'b0"), ("reset", "1'b1")],
)
def test_reset_polarity_from_name(name, active_value):
    rtl = f"module d(input clk, input {name}, input [3:0] x, output y); endmodule\n"
    task = Task(id="t", rtl_files=[SourceFile(name="d.v", content=rtl)], dut_module_name="d")
    first_reset = random_testbench(task, length=4).split("initial begin\n")[1].splitlines()[0]
    assert first_reset.strip() == f"{name} = {active_value};"


def test_policy_wraps_code_for_the_agent():
    task = fixture_task("mux2")
    gen = get_policy("random").generate(GenerationRequest(task, [], seed=3))
    assert extract_testbench(gen.text, "mux2") == random_testbench(task, seed=3)
