"""Bounded in-process elaboration (sim/safety/forked.py, tasks/hdl.bounded_symbols): a
testbench can make pyslang's elaboration of the design take any CPU time or memory, so
the evaluator's elaborations run in a forked child under bounds."""

from __future__ import annotations

import time

import pytest

from llm4cov.sim.safety.forked import BoundExceeded, ForkLimits, bounded_call
from llm4cov.sim.safety.stimulus_only import check
from llm4cov.tasks.hdl import ElaborationLimitError, ParseLimitError

CNT = "module cnt(input logic clk, output logic [3:0] q);\n" \
      "  always_ff @(posedge clk) q <= q + 4'd1;\nendmodule\n"
HEAD = "module tb; logic clk = 0; logic [3:0] q; cnt dut(.clk(clk), .q(q));\n"
#: Each module instantiates the one below twice, 21 deep: 2**21 instances from 1.2 KB
#: (6 GB and std::bad_alloc in the evaluator's process before the bound).
DOUBLING = "module l0(input logic a); logic b; assign b = a; endmodule\n" + "".join(
    f"module l{k}(input logic a); l{k - 1} x(.a(a)); l{k - 1} y(.a(a)); endmodule\n"
    for k in range(1, 22)) + HEAD + "  l21 t(.a(clk));\nendmodule\n"
#: Products of 8-Mbit constants: each takes slang a large fraction of a second (40 lines
#: took 65 s of CPU in the evaluator's process before the bound).
PRODUCTS = HEAD + "  localparam logic [8388597:0] A0 = '1;\n" + "".join(
    f"  localparam logic [8388597:0] A{i} = A{i - 1} * A{i - 1} + {i};\n"
    for i in range(1, 200)) + "endmodule\n"


def _spin() -> None:
    while True:
        pass


def _grow() -> list[bytes]:
    return [bytes(1 << 20) for _ in range(4096)]  # 4 GiB


def _fail() -> None:
    raise ParseLimitError("nesting too deep")


def test_a_call_returns_its_json_value_and_its_named_exception():
    assert bounded_call(sorted, {3, 1, 2}) == [1, 2, 3]
    assert bounded_call(divmod, 7, 2) == [3, 1]  # a tuple comes back as a JSON list
    with pytest.raises(ParseLimitError, match="nesting too deep"):
        bounded_call(_fail, raises=(ParseLimitError,))
    with pytest.raises(RuntimeError, match="ParseLimitError: nesting too deep"):
        bounded_call(_fail)  # a class not named comes back as a RuntimeError


def test_each_bound_ends_the_call_with_its_name():
    with pytest.raises(BoundExceeded, match="passed 1 s of CPU"):
        bounded_call(_spin, limits=ForkLimits(cpu_s=1, wall_s=60))
    with pytest.raises(BoundExceeded, match="passed 64 MiB of memory"):
        bounded_call(_grow, limits=ForkLimits(memory_bytes=64 << 20))
    with pytest.raises(BoundExceeded, match=r"took longer than 0\.5 s"):
        bounded_call(time.sleep, 30, limits=ForkLimits(wall_s=0.5))


def test_a_design_that_doubles_per_level_stops_at_the_symbol_bound():
    """The visit that counts the symbols makes them (pyslang elaborates instance bodies
    lazily): it stops past the bound, long before 2**21 instances."""
    with pytest.raises(ElaborationLimitError, match="more than 500,000 symbols"):
        check(DOUBLING, "tb.sv", CNT, ["cnt"], "cnt", "tb.dut", {})


def test_constant_evaluation_past_the_cpu_bound_ends_in_the_child():
    with pytest.raises(BoundExceeded, match="passed 1 s of CPU"):
        bounded_call(check, PRODUCTS, "tb.sv", CNT, ["cnt"], "cnt", "tb.dut", {},
                     limits=ForkLimits(cpu_s=1, wall_s=120))


def test_the_evaluator_rejects_a_testbench_too_large_to_check(evaluator):
    from llm4cov.sim.model.observation import Status
    from llm4cov.tasks.model import SourceFile, Task

    task = Task(id="probe/doubling", rtl_files=[SourceFile(name="cnt.sv", content=CNT)],
                dut_module_name="cnt", dut_instance_name="dut")
    obs = evaluator.evaluate(task, DOUBLING)
    assert obs.status is Status.REJECTED
    assert "the design elaborates to more than 500,000 symbols" in obs.log


def test_only_a_wall_clock_stop_is_counted_as_the_host_s():
    """A verdict a wall-clock bound reached depends on the host (the evaluator does not
    cache it: :mod:`llm4cov.sim.safety.wall_clock`); the CPU and memory bounds hold on
    any host and are not counted."""
    from llm4cov.sim.safety import wall_clock

    before = wall_clock.count()
    with pytest.raises(BoundExceeded, match="passed 1 s of CPU"):
        bounded_call(_spin, limits=ForkLimits(cpu_s=1, wall_s=60))
    assert wall_clock.count() == before
    with pytest.raises(BoundExceeded, match=r"took longer than 0\.5 s"):
        bounded_call(time.sleep, 30, limits=ForkLimits(wall_s=0.5))
    assert wall_clock.count() == before + 1
