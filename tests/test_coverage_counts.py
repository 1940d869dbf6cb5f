"""Coverage numbers checked against values counted by hand from the RTL."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, example_task, fixture_task
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.model.observation import Status

pytestmark = pytest.mark.requires_verilator


def test_mux2_partial_testbench_matches_hand_count(evaluator):
    """tests/fixtures/mux2: one always_comb block (1 line point), if/else (2 branch
    points), `sel && en` (3 expression terms: sel==0 => 0, en==0 => 0, both 1 => 1) and
    8 signal bits (sel, en, a[1:0], b[1:0], y[1:0]) x 2 directions = 16 toggle points.
    The testbench takes the else branch only (1/2), sees the two "=> 0" terms (2/3) and
    toggles a[0] 0->1, y[0] 0->1, sel 0->1 (3/16)."""
    task = fixture_task("mux2")
    obs = evaluator.evaluate(task, (FIXTURES / "mux2_partial_tb.sv").read_text())
    assert obs.status is Status.SUCCESS
    m = {k: (v.covered, v.total) for k, v in obs.coverage.metrics.items()}
    assert m == {"line": (1, 1), "branch": (1, 2), "expr": (2, 3), "toggle": (3, 16)}
    expected = (100 + 50 + 200 / 3 + 18.75) / 4
    assert obs.coverage.overall == pytest.approx(expected, abs=1e-3)
    assert obs.cov() == pytest.approx(expected / 100, abs=1e-5)
    kinds = [(u.kind, u.line) for u in obs.uncovered]
    assert kinds[:2] == [("branch", 10), ("expr", 10)]
    assert any(u.detail == "sel never toggled 1->0" for u in obs.uncovered)


@pytest.mark.parametrize(
    ("example", "toggle_bits"),
    [
        # 6 one-bit inputs + din[8] + q[8] + sout
        ("param_shift", 6 + 8 + 8 + 1),
        # clk, rst_n, ped_req, light[2], state[2], timer[4]
        ("traffic_fsm", 3 + 2 + 2 + 4),
        # acc_top: clk rst_n valid x[8] y[8] acc[8] sat xy[8] next[8] sat_a sat_b;
        # sat_add, counted per instance (IMC) for its 2 instances: a[8] b[8] s[8] sat
        # full[9]
        ("hier_acc", 3 + 8 + 8 + 8 + 1 + 8 + 8 + 2 + 2 * (8 + 8 + 8 + 1 + 9)),
        # a[4] b[4] op[2] y[4] carry zero sum[5]
        ("alu_comb", 4 + 4 + 2 + 4 + 1 + 1 + 5),
    ],
)
def test_examples_toggle_totals_and_random_baseline(evaluator, example, toggle_bits):
    """Every bundled example simulates with the random policy; toggle totals equal
    2 x the design's signal bits counted from the RTL."""
    task = example_task(example)
    obs = evaluator.evaluate(task, random_testbench(task, seed=3, length=120))
    assert obs.status is Status.SUCCESS, obs.log
    assert obs.coverage.metrics["toggle"].total == 2 * toggle_bits
    assert obs.coverage.dut_hier == "tb.dut"
    if example == "hier_acc":
        assert set(obs.coverage.per_instance) == {"tb.dut", "tb.dut.stage_a", "tb.dut.stage_b"}
        assert obs.coverage.merged == []
