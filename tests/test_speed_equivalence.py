"""The speed levers never change an observation: every example design gives the same
observation (status, coverage points, log, notes; timing aside) with all levers on,
from the result cache, and with all levers off."""

from __future__ import annotations

import pytest

from conftest import example_task
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Status

pytestmark = pytest.mark.requires_verilator

#: Every lever off; ccache on (off by default, it is not a lever here): it returns
#: byte-identical objects by construction, and compiling the Verilated runtime without
#: it costs ~15 s per build on 2 cores.
LEVERS_OFF = SimConfig(precheck=False, result_cache=False, reuse_runtime=False,
                       runtime_pch=False, cxx_opt=None, fast_linker=False,
                       split_units=False, ccache=True)


@pytest.fixture(scope="module")
def fast(tmp_path_factory) -> Evaluator:
    """All levers on (the defaults) with a private cache dir."""
    return Evaluator(SimConfig(cache_dir=str(tmp_path_factory.mktemp("llm4cov-cache"))))


@pytest.mark.parametrize("design", [
    # two designs in the fast suite (a hierarchy, which the split-unit and runtime-reuse
    # levers see, and an FSM); the other two with -m slow: each costs ~25 s on 2 cores
    pytest.param("alu_comb", marks=pytest.mark.slow), "hier_acc",
    pytest.param("param_shift", marks=pytest.mark.slow), "traffic_fsm"])
@pytest.mark.heavy
def test_levers_do_not_change_the_observation(fast, design):
    task = example_task(design)
    tb = random_testbench(task, seed=0, length=40)
    plain = Evaluator(LEVERS_OFF).evaluate(task, tb)
    quick = fast.evaluate(task, tb)
    again = fast.evaluate(task, tb)
    assert plain.status is Status.SUCCESS, plain.log
    assert quick.comparable() == plain.comparable()
    assert (quick.cached, again.cached) == (False, True)
    assert again.comparable() == plain.comparable()
    assert plain.coverage.metrics == quick.coverage.metrics  # the same coverage points


def test_the_precheck_gives_verilators_status_and_location(fast):
    task = example_task("alu_comb")
    tb = random_testbench(task, seed=0, length=4).replace("$finish;", "$finish; ghost = 1;", 1)
    line = next(n for n, text in enumerate(tb.splitlines(), 1) if "ghost" in text)
    plain = Evaluator(LEVERS_OFF).evaluate(task, tb)
    quick = fast.evaluate(task, tb)
    assert plain.status is quick.status is Status.COMPILE_ERROR
    assert quick.build_s == 0.0 and plain.build_s > 0.0  # Verilator never ran
    assert f"%Error: tb.sv:{line}:" in plain.log
    assert f"%Error: tb.sv:{line}:" in quick.log
