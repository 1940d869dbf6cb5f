"""Continuation (issue 41): cover jobs from the state a simulation ends in.

The netlist, RTLIL and log tests need no tool; the cover job from a dumped state runs
the solver (skipped without the formal tools, like ``tests/test_formal_solver.py``);
the round trip through the evaluator is ``slow``.

Fixture: ``tests/fixtures/formal_continue/deep_key.v``. ``open`` needs 100 enabled
clocks (``cnt`` counts to 100, then ``armed`` is entered) and then the key 16'hBEEF:
101 cycles from reset at the least, deeper than the 48-cycle cover jobs used here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm4cov.formal import FormalConfig, analyze
from llm4cov.formal.closure import design_io
from llm4cov.formal.continuation import (
    StateModel,
    read_dump,
    readable,
    state_model,
    with_state,
)
from llm4cov.formal.goals import Goal
from llm4cov.formal.sby import JobResult
from llm4cov.formal.stimulus import Phase, merge_phases
from llm4cov.sim.model.observation import UncoveredItem
from llm4cov.tasks.loaders import task_from_dir

FIXTURES = Path(__file__).parent / "fixtures"
DEEP = FIXTURES / "formal_continue"

OPEN = UncoveredItem(kind="branch", file="deep_key.v", line=17,
                     detail="then branch of the if at deep_key.v:17 never taken")
ARMED = UncoveredItem(kind="branch", file="deep_key.v", line=15,
                      detail="then branch of the if at deep_key.v:15 never taken")


def _netlist() -> dict:
    """A Yosys ``write_json`` netlist as read_slang + prep + flatten write it: a
    register ``st`` (bits 2-4) also visible as the port ``u1.q`` of an instance, a
    register known only by an alias (``u1.r`` drives ``bus[0]``), two elements of an
    unpacked array flattened into one wire (``arr``), a latch with no public name, a
    toggle shadow, a 4-word memory and one that is too large."""
    nets = {
        "st": {"bits": [2, 3, 4], "hide_name": 0},
        "u1.q": {"bits": [2, 3, 4], "hide_name": 0},
        "bus": {"bits": [9, "0", 5], "hide_name": 0},
        "arr": {"bits": [20, 21, 22, 23], "hide_name": 0},
        "$auto$x": {"bits": [6], "hide_name": 1},
        "u1.llm4cov_g3_prev": {"bits": [7], "hide_name": 0},
        "\\esc ape": {"bits": [8], "hide_name": 0},
    }
    cells = {
        "$driver$st": {"type": "$adff", "parameters": {}, "connections": {"Q": [2, 3, 4]}},
        "$driver$u1.r": {"type": "$dff", "parameters": {}, "connections": {"Q": [5]}},
        "$driver$arr[0]": {"type": "$dff", "parameters": {}, "connections": {"Q": [22, 23]}},
        "$driver$arr[1]": {"type": "$dff", "parameters": {}, "connections": {"Q": [20, 21]}},
        "$12": {"type": "$dlatch", "parameters": {}, "connections": {"Q": [6, 8]}},
        "$driver$u1.llm4cov_g3_prev": {"type": "$dff", "parameters": {},
                                       "connections": {"Q": [7]}},
        "u1.mem": {"type": "$mem_v2", "connections": {}, "parameters": {
            "MEMID": "\\u1.mem", "SIZE": "100", "WIDTH": "1000", "OFFSET": "1"}},
        "big": {"type": "$mem_v2", "connections": {}, "parameters": {
            "MEMID": "\\big", "SIZE": bin(5000)[2:], "WIDTH": "1", "OFFSET": "0"}},
        "$add$1": {"type": "$add", "parameters": {}, "connections": {"Y": [9]}},
    }
    return {"modules": {"top": {"netnames": nets, "cells": cells}}}


def _model() -> StateModel:
    toggle = Goal("llm4cov_g3", UncoveredItem(kind="toggle", file="s.v", line=2,
                                              detail="d[1] never toggled 0->1"),
                  "d[1] 0->1", "toggle")
    return state_model(_netlist(), "top", [toggle])


def test_state_elements_are_read_under_the_name_the_testbench_sees():
    model = _model()
    assert [(r.read, r.width, r.places) for r in model.registers] == [
        ("arr[0]", 2, ((0, "arr", 2), (1, "arr", 3))),  # an element: its own bits
        ("arr[1]", 2, ((0, "arr", 0), (1, "arr", 1))),
        ("bus", 3, ((2, "bus", 2),)),  # u1.r has no net of its own: its bit of bus
        ("st", 3, ((0, "st", 0), (1, "st", 1), (2, "st", 2))),  # before the port alias
        ("u1.d[1]", 1, ((0, "u1.llm4cov_g3_prev", 0),)),  # a shadow reads its bit
    ]
    assert [(m.name, m.size, m.width, m.offset) for m in model.memories] == [("u1.mem", 4, 8, 1)]
    assert model.unnamed_bits == 2 and model.free_memories == ["big"]
    assert model.signals() == ["arr[0]", "arr[1]", "bus", "st", "u1.d[1]", "u1.mem[1]",
                               "u1.mem[2]", "u1.mem[3]", "u1.mem[4]"]
    assert model.widths() == [2, 2, 3, 3, 1, 8, 8, 8, 8]
    assert readable("g[0].u.x") and not readable("$auto$x") and not readable("a b")


RTLIL = """\
module \\top
  attribute \\init 3'000
  wire width 3 \\st
  attribute \\src "s.v:3"
  wire width 3 \\bus
  wire width 4 \\arr
  wire \\u1.llm4cov_g3_prev
  attribute \\src "s.v:9"
  cell $check \\u1.llm4cov_g1
    parameter \\FLAVOR "cover"
    connect \\A 1'1
  end
  cell $check \\llm4cov_g2
    parameter \\FLAVOR "cover"
  end
  cell $check \\u2.blk.llm4cov_g1
  end
  cell $mem_v2 \\u1.mem
    parameter \\INIT 32'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
    parameter \\SIZE 4
  end
end
"""


def test_the_dumped_state_becomes_the_models_initial_state():
    model = _model()
    # arr[1] printed 3 bits wide (not what the model has), u1.d[1] and mem[3] missing
    values = {0: (2, 0b10), 1: (3, 0b11), 2: (3, 0b111), 3: (3, 0b101), 5: (8, 0x11),
              6: (8, 0x22), 8: (8, 0x44)}
    # g1 counts in instance u2 only (its cell in u1 goes; one in a named block of u2
    # stays), g2 anywhere, g3 is not kept
    text = with_state(RTLIL, model, values, keep={"llm4cov_g1": {"u2"}, "llm4cov_g2": None})
    assert "attribute \\init 3'101\n  wire width 3 \\st" in text
    assert "3'000" not in text  # the RTL's own init values are dropped
    assert ('attribute \\src "s.v:3"\n  attribute \\init 3\'1xx\n  wire width 3 \\bus'
            in text)  # only the state bit, after the wire's other attributes
    assert "attribute \\init 4'10xx\n  wire width 4 \\arr" in text  # arr[0] only
    assert "wire \\u1.llm4cov_g3_prev" in text and text.count("\\init") == 3
    assert "u1.llm4cov_g1" not in text and "s.v:9" not in text  # not in that instance
    assert "cell $check \\llm4cov_g2" in text and "cell $check \\u2.blk.llm4cov_g1" in text
    assert "parameter \\INIT 32'01000100xxxxxxxx0010001000010001" in text  # word 0 last


def test_a_goal_is_kept_in_the_instances_that_miss_it():
    from llm4cov.formal.continuation import _scopes
    from llm4cov.sim.model.observation import CoverageReport, Observation, Status

    obs = Observation(status=Status.SUCCESS, coverage=CoverageReport(
        dut_hier="tb.dut", metrics={}, overall=0.0))
    item = UncoveredItem(kind="toggle", file="fifo4.v", line=78, detail="wp[1] never toggled",
                         instance="tb.dut.rfifo", instances=("tb.dut.rfifo",), copies=2)
    assert _scopes(item, obs) == {"rfifo"}
    top = item.model_copy(update={"instance": "tb.dut", "instances": ("tb.dut",)})
    assert _scopes(top, obs) == {""}
    assert _scopes(item.model_copy(update={"instance": "", "instances": ()}), obs) is None


def test_the_dump_is_read_from_the_log_and_placed_after_the_phases():
    log = ("== simulation output ==\nllm4cov_state 0 5 1f\nllm4cov_state 1 1 0\n"
           "llm4cov_state 2 4 x\nllm4cov_state 3 64 '{'h0, 'h1}\nllm4cov_state 4 3\n"
           "- tb.sv:9: Verilog $finish\n")
    assert read_dump(log) == {0: (5, 0x1F), 1: (1, 0)}
    task = task_from_dir(DEEP)
    design = design_io(task)
    tb = (FIXTURES / "formal_continue" / "deep_key_tb.sv").read_text()
    text = merge_phases(tb, task, design.ports, design.clock, [Phase("p", [{"en": 1}])],
                        dump=["cnt", "armed"])
    assert text is not None
    head, tail = text.split("// llm4cov formal: state of the DUT", 1)
    assert "// llm4cov formal: p (1 steps)" in head
    assert tail.split("\n")[1:4] == [
        "    @(negedge clk);",
        '    $display("llm4cov_state 0 %0d %h", $bits(dut.cnt), dut.cnt);',
        '    $display("llm4cov_state 1 %0d %h", $bits(dut.armed), dut.armed);']
    assert tail.index("$display") < tail.index("$finish")


def test_traces_that_keep_the_reset_inactive_are_replayed_first(tmp_path):
    from llm4cov.formal.continuation import _traces

    def trace(name: str, rst: list[int]) -> str:
        steps = [{"bits": f"{r}"} for r in rst]
        data = {"signals": [{"path": ["\\rst_n"], "width": 1, "offset": 0,
                             "init_only": False}], "steps": steps}
        (tmp_path / name).write_text(json.dumps(data))
        return name

    job = JobResult(status="PASS", reached={
        "g0": (1, trace("a.yw", [1, 0])), "g1": (1, "a.yw"), "g2": (2, "a.yw"),
        "g3": (3, trace("b.yw", [1, 1, 1, 1])), "g4": (1, trace("c.yw", [1, 1]))})
    got = _traces(job, {"g0", "g1", "g2", "g3", "g4", "g9"}, tmp_path, {"rst_n"},
                  {"rst_n": True})
    assert [sorted(t.reached) for t in got] == [["g3"], ["g4"], ["g0", "g1", "g2"]]
    assert [t.resets for t in got] == [False, False, True]


@pytest.mark.requires_solver
@pytest.mark.heavy
def test_a_goal_too_deep_from_reset_is_reached_from_a_dumped_state(tmp_path):
    """From reset the 48-cycle cover job cannot open the lock (101 cycles); from the
    state ``cnt = 95`` (as a simulation would dump it) the job reaches ``open``'s
    branch: 95 -> 100 in 5 enabled steps, ``armed`` at step 6 with the key; the cover
    of a clocked block reports it one step later, at 7."""
    from llm4cov.formal.closure import _Runner
    from llm4cov.formal.continuation import _list_state, _search
    from llm4cov.formal.tools import Budget, find_tools

    task = task_from_dir(DEEP)
    config = FormalConfig(cover_depth=12, prove_depth=2, cache=False, max_cover_depth=48)
    flat = analyze(task, [OPEN], FormalConfig(cover_depth=48, prove_depth=2, cache=False))
    assert flat.goals[0].status == "unknown"
    runner = _Runner(task, design_io(task), config, find_tools())
    listed = _list_state(runner, [OPEN], tmp_path, config)
    assert not isinstance(listed, str)
    _placement, model, rtlil, frontend = listed
    assert frontend == "slang"
    assert [r.read for r in model.registers] == ["armed", "cnt", "open"]
    values = {0: (1, 0), 1: (7, 95), 2: (1, 0)}
    job, cycles, traces = _search(runner, with_state(rtlil, model, values, {"llm4cov_g0": None}),
                                  {"llm4cov_g0"}, tmp_path, config, Budget(runner.meter, 120),
                                  {"clk", "rst_n", "en", "key"})
    assert job is not None and job.status == "PASS" and cycles == 8  # steps 0-7
    assert [t.reached for t in traces] == [{"llm4cov_g0": 7}]
    steps = traces[0].steps
    assert all(s["en"] == 1 and s["rst_n"] == 1 for s in steps[:5])
    assert steps[6]["key"] == 0xBEEF


@pytest.mark.slow
@pytest.mark.requires_verilator
@pytest.mark.requires_solver
def test_continuation_covers_what_no_cover_job_from_reset_reaches(tmp_path):
    """The testbench counts 80 enabled clocks: ``cnt == 100`` and ``open`` never happen.
    Hand-checked coverage (mean of the four metrics): branch 6/8 (the then-branches of
    ``cnt == 7'd100`` and ``armed && key == 16'hBEEF``), expression 6/8, line 1/1,
    toggle 51/56 (``armed`` and ``open`` both ways, ``cnt[6]`` 1->0, which needs a reset
    after 64 counts): (75 + 75 + 100 + 91.07) / 4 = 85.27 %. Every open goal is deeper
    than 48 cycles from reset, so without continuation nothing changes; one
    continuation step from the dumped state (``cnt = 80``) reaches them all and its
    replay covers them: 100 %."""
    from llm4cov.formal.closure import close
    from llm4cov.sim.config import SimConfig
    from llm4cov.sim.evaluator import Evaluator

    task = task_from_dir(DEEP)
    tb = (DEEP / "deep_key_tb.sv").read_text()
    evaluator = Evaluator(SimConfig(feedback_limit=10_000, cache_dir=str(tmp_path / "c")))
    config = FormalConfig(cover_depth=12, prove_depth=3, cache=False, max_cover_depth=48,
                          escalate_budget_s=60)
    without = close(task, tb, evaluator, config)
    assert round(without.before.coverage.overall, 2) == 85.27
    assert without.how == "unchanged" and without.after.coverage.overall == \
        without.before.coverage.overall
    assert {g.status for g in without.result.goals} == {"unknown"}
    assert len(without.result.goals) == 9

    cont = close(task, tb, evaluator, FormalConfig(
        cover_depth=12, prove_depth=3, cache=False, max_cover_depth=48,
        continue_steps=3, continue_budget_s=300))
    assert cont.how == "continued" and cont.after.coverage.overall == 100.0
    goals = {(g.item.line, g.what): g for g in cont.result.goals}
    assert all(g.status == "reached" and g.confirmed for g in goals.values())
    assert goals[(17, "then branch")].reason.startswith("reached by continuation 1 at step ")
    assert "// llm4cov formal: continuation 1.0 (from the simulated state)" in cont.testbench


def test_the_continuation_note_says_no_time():
    """The note reaches the formal policy's testbench text (its header comments): a
    wall time in it made the same run's testbench differ from machine to machine."""
    from llm4cov.formal.closure import FormalResult
    from llm4cov.formal.continuation import Continuation, apply
    from llm4cov.formal.stimulus import Phase

    result = FormalResult(task_id="t", top="m")
    cont = Continuation(testbench="module tb; endmodule\n",
                        phases=[Phase(title="p", steps=[{"a": 1}])],
                        notes=["continuation 1: no goal reached"], jobs=3, simulations=2)
    assert apply(result, cont) == 0
    assert result.notes == [
        "continuation: 1 phases from the simulated state, 0 of 0 goals reached and covered "
        "by their replay (2 simulations, 3 jobs)", "continuation 1: no goal reached"]
