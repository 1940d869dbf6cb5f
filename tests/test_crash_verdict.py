"""A Verilator crash on an invalid testbench is the testbench's compile error, judged by
pyslang; a crash on a valid one stays a simulator failure (not counted against the
model). Real Verilator, real pyslang."""

from __future__ import annotations

import pytest

from conftest import example_task
from llm4cov.sim.model.observation import Status

pytestmark = pytest.mark.requires_verilator

# The v4 student's answer on VerilogEval rule90, reduced: function calls on the left of
# an assignment (not an lvalue). Verilator 5.x dies with "Internal Error: ... Wide op
# RAND w/ no temp" instead of rejecting it; pyslang reports ExpressionNotAssignable.
RAND_LHS_TB = """module tb;
  logic [3:0] a = 0, b = 0; logic [1:0] op = 0; wire [3:0] y; wire carry, zero;
  alu4 dut (.a(a), .b(b), .op(op), .y(y), .carry(carry), .zero(zero));
  initial begin
    for (int i = 0; i < 4; i++) begin
      {$urandom, $urandom, $urandom} = 2'(i);
      #1;
    end
    $finish;
  end
endmodule
"""


def test_a_crash_on_an_invalid_testbench_is_its_compile_error(evaluator):
    """(The other half, a crash on a valid testbench kept as a simulator failure, is
    ``../shared/corpus/repro/25_property_instance_in_assert`` in test_repro_corpus.py.)"""
    obs = evaluator.evaluate(example_task("alu_comb"), RAND_LHS_TB)
    assert (obs.status, obs.tool_error) == (Status.COMPILE_ERROR, False)
    assert obs.log.startswith("%Error: tb.sv:6:38: expression is not assignable\n")
    assert "Internal Error" in obs.log  # Verilator's own crash report follows
    assert any("pyslang finds invalid (ExpressionNotAssignable)" in n for n in obs.notes)
