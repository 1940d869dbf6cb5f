"""Every reproducer in ../shared/corpus/repro gets what its expected.txt says a correct
evaluator reports (status, how the run ended, key log/note content)."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import shared_path
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import EndReason, Status
from llm4cov.tasks.hdl import module_decls, top_modules
from llm4cov.tasks.model import SourceFile, Task

pytestmark = pytest.mark.requires_verilator

S, C, R, T, X, E = (Status.SUCCESS, Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.TIMEOUT,
                    Status.REJECTED, Status.TOOL_ERROR)
# name: (status, end reason, text that must appear in log + notes)
EXPECTED = {
    "01_fsm_negated_guard": (S, EndReason.FINISH, "tb.sv:12: Verilog $finish"),
    "02_time_compare_in_always": (S, EndReason.FINISH, "q=2"),
    "05_error_stops_run": (S, EndReason.FINISH, "errors=1"),
    "06_stop_at_end": (S, EndReason.FINISH, "tb.sv:9: `$stop` is compiled as `$finish`"),
    "07_fatal_in_tb": (R, EndReason.FATAL, "tb.sv:8"),
    "10_oversized_literal": (C, EndReason.NOT_RUN, "tb.sv:7:9: Too many digits for 8 bit number"),
    "11_blocking_nonblocking_mix": (C, EndReason.NOT_RUN, "tb.sv:7:14"),
    "13_covergroup_in_tb": (S, EndReason.FINISH, "COVERIGN"),
    "14_class_randomize_constraints": (S, EndReason.FINISH, "constraint violations=0"),
    "15_always_without_delay": (R, EndReason.FATAL, "`always` without delay or event control "
                                                     "at tb.sv:4"),
    "16_no_finish_free_clock": (T, EndReason.SIM_TIME_LIMIT, "simulated-time limit"),
    "17_timescale_tb_only": (S, EndReason.FINISH, "t=32000"),
    "19_dumpfile_escape": (X, EndReason.NOT_RUN, "points outside the work dir"),
    "20_delay_in_function": (C, EndReason.NOT_RUN, "%Error: tb.sv:7:5: "),
    # a Verilator fault on a legal property instance: the tool's failure, not the model's
    "25_property_instance_in_assert": (E, EndReason.NOT_RUN, "not the testbench"),
    # expression coverage of the testbench's fork crashed Verilator: the build leaves
    # the testbench's own code uninstrumented (it is never counted), so no retry
    "26_expr_cov_fork_in_task": (S, EndReason.FINISH, "errors=0 big=2"),
    # `<=` in initial blocks compiled as `<= #0`, so the reset edge is seen (IEEE order)
    "29_nba_in_initial_reset": (S, EndReason.FINISH, "cnt=3 wrapped=0"),
    # `disable wd` compiled as `#0 disable wd`, so the stale watchdog dies
    "32_disable_named_fork_immediate": (S, EndReason.FINISH, "done: count=12 at 280"),
    # the idle `dut` is measured alone; the driven second copy never counts
    "34_second_dut_copy_merged": (S, EndReason.FINISH, "only `tb.dut` is measured"),
}
# name: expected.txt's coverage of a correct evaluator, {metric: (covered, total)}
EXPECTED_COVERAGE = {
    "26_expr_cov_fork_in_task": {"line": (1, 1), "toggle": (31, 52)},
    "29_nba_in_initial_reset": {"line": (2, 2), "branch": (3, 4), "toggle": (9, 16)},
    "32_disable_named_fork_immediate": {
        "line": (3, 3), "branch": (2, 2), "expr": (5, 5), "toggle": (15, 16)},
    "34_second_dut_copy_merged": {"line": (2, 5), "branch": (2, 2), "toggle": (4, 26)},
}


def _toggled_points(values: list[int], width: int) -> int:
    """Toggle points hit by a sequence of values starting from 0 (0->1 and 1->0 per bit)."""
    hit: set[tuple[int, int]] = set()
    prev = 0
    for v in values:
        for bit in range(width):
            before, after = (prev >> bit) & 1, (v >> bit) & 1
            if before != after:
                hit.add((bit, after))
        prev = v
    return len(hit)


def _repro_task(folder) -> Task:
    rtl = SourceFile(name="rtl.sv", content=(folder / "rtl.sv").read_text())
    dut = top_modules(module_decls([rtl]))[0]
    tb = SourceFile(name="tb.sv", content=(folder / "tb.sv").read_text())
    instance = next(name for decl in module_decls([tb]) for mtype, name in decl.instances
                    if mtype == dut)  # the first instance is the required one
    return Task(id=folder.name, rtl_files=[rtl], dut_module_name=dut, dut_instance_name=instance)


def test_every_reproducer_is_covered_by_this_table():
    folders = {p.name for p in shared_path("corpus", "repro").iterdir() if p.is_dir()}
    assert folders == set(EXPECTED)


#: What differs under Verilator 5.052, which counts covergroups and does not crash on
#: 26's expression coverage: name -> (status, end reason, text), and 26 keeps its
#: expression coverage (no retry).
EXPECTED_5052 = {
    "13_covergroup_in_tb": (S, EndReason.FINISH, "functional coverage = 0.0"),
}


#: Reproducers whose testbench writes into the DUT: the default evaluator rejects them
#: (``docs/stimulus.md``); their construct's verdict is checked with the rule off.
WRITES_DUT = {
    "01_fsm_negated_guard": "tb.sv:7: the assignment to `uut.st` writes into the DUT",
    # the DUT's output net driven by the testbench: Verilator refuses it too (checked apart)
    "11_blocking_nonblocking_mix": "tb.sv:7: the testbench drives `tb.q_w`, a net the DUT drives",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.heavy
def test_reproducer(evaluator, name):
    _check_reproducer(evaluator, name, EXPECTED[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reproducer_under_verilator_5052(evaluator_5052, name):
    """The same verdicts under ``--simulator verilator-5.052`` (where 5.052 differs:
    :data:`EXPECTED_5052`); its testbenches are compiled as given (no ``<= #0``)."""
    obs = _check_reproducer(evaluator_5052, name, EXPECTED_5052.get(name, EXPECTED[name]))
    assert not any("compiled as `<= #0`" in n for n in obs.notes)
    if name == "13_covergroup_in_tb":  # cp_a lo/hi and s[8]'s two auto bins, all hit
        assert (obs.functional.bins.covered, obs.functional.bins.total) == (4, 4)


def _check_reproducer(evaluator, name: str, expected):
    """Run reproducer ``name`` and check ``expected`` (status, end reason, text) and the
    per-reproducer facts. Returns the observation."""
    folder = shared_path("corpus", "repro", name)
    status, end, text = expected
    task = _repro_task(folder)
    tb = (folder / "tb.sv").read_text()
    if name in WRITES_DUT:  # the score is the stimulus's own; the construct is checked apart
        refused = evaluator.evaluate(task, tb)
        assert refused.status is Status.REJECTED and WRITES_DUT[name] in refused.log
        evaluator = Evaluator(dataclasses.replace(evaluator.config, stimulus_only=False))
    obs = evaluator.evaluate(task, tb)
    assert (obs.status, obs.end_reason) == (status, end), obs.log
    assert text in obs.log + "\n".join(obs.notes)
    if status is S:
        assert obs.coverage is not None and obs.coverage.dut_hier == f"tb.{task.dut_instance_name}"
        assert obs.cov() > 0
    else:
        assert obs.cov() == 0.0
    if name == "05_error_stops_run":
        # coverage of all 8 vectors is kept; the TB's own $error is counted, not fatal
        a = [(i * 40) % 256 for i in range(8)]
        b = [i * 3 for i in range(8)]
        hits = (_toggled_points(a, 8) + _toggled_points(b, 8)
                + _toggled_points([x + y for x, y in zip(a, b, strict=True)], 9))
        assert obs.tb_error_count == 1
        assert obs.coverage.metrics["toggle"].covered == hits
    if name == "11_blocking_nonblocking_mix":
        assert "q_w" in obs.log and "rtl.sv:2" in obs.log
    if name in EXPECTED_COVERAGE:
        got = {m: (c.covered, c.total) for m, c in obs.coverage.metrics.items()}
        assert got == EXPECTED_COVERAGE[name]
        assert list(obs.coverage.per_instance) == ["tb.dut"]
    if name == "26_expr_cov_fork_in_task":  # built once, expression coverage on
        assert "--coverage-expr" in obs.coverage_options
        assert not any("rebuilt once without" in n for n in obs.notes)
    if name == "25_property_instance_in_assert":
        assert obs.tool_error and "_Vpast_" in "\n".join(obs.notes)
    if name == "34_second_dut_copy_merged":
        assert "shadow acc=84" in obs.log  # the second copy did run
    if name in ("07_fatal_in_tb", "16_no_finish_free_clock"):
        assert obs.coverage is not None  # kept for feedback, scored 0
    return obs
