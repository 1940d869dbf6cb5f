"""Broken states worth repairing (synth/repair.py): each kind plants exactly one known
mistake; in a real synthesis run the teacher's testbench repairs them and only repairs
that pass tau_delta are kept."""

from __future__ import annotations

import asyncio
import difflib

import pytest

from conftest import example_task, fixture_task
from llm4cov.exec import get_executor
from llm4cov.policies import get_policy
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.synth.config import resolve, stage_preset
from llm4cov.synth.engine import SynthRun
from llm4cov.synth.records import Role
from llm4cov.synth.repair import BreakKind, break_testbench, repair_kinds
from llm4cov.synth.sources import RepoItem
from llm4cov.util.jsonl import iter_jsonl


def _changes(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(),
                                                  lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("---", "+++"))]


@pytest.mark.parametrize(("kind", "changes"), [
    (BreakKind.MODULE_NAME, ["-  acc_top dut (", "+  top_module dut ("]),
    (BreakKind.INSTANCE_NAME, ["-  acc_top dut (", "+  acc_top uut ("]),
    (BreakKind.MISSING_PIN, ["-    .valid(valid),"]),  # a data input, never clk or rst_n
    (BreakKind.MISSPELLED_PIN, ["-    .rst_n(rst_n),", "+    .rst_n_i(rst_n),"]),
    (BreakKind.PIN_CASE, ["-    .rst_n(rst_n),", "+    .RST_N(rst_n),"]),
    (BreakKind.SHORT_RUN, ["+  initial #1 $finish;"]),
    (BreakKind.MISSING_ENDMODULE, ["-endmodule"]),
    (BreakKind.GLUED_DECLARATION, ["-  logic rst_n = '0;", "+  logicrst_n = '0;"]),
    (BreakKind.MISSING_SEMICOLON, ["-    valid = '0; x = '0; y = '0; @(negedge clk);",
                                   "+    valid = '0 x = '0; y = '0; @(negedge clk);"]),
])
def test_each_kind_plants_one_known_mistake(kind, changes):
    task = example_task("hier_acc")
    tb = random_testbench(task, seed=1, length=10)
    assert _changes(tb, break_testbench(tb, task, kind, seed=3)) == changes


def test_a_pin_name_with_capitals_is_written_in_lower_case():
    """The v3 student's mistake on JC_counter: port ``Q`` connected as ``.q``. Seed 0
    picks hier_acc's last connection (``.sat``), here spelled ``.Sat``."""
    task = example_task("hier_acc")
    tb = random_testbench(task, seed=1, length=10).replace(".sat(sat)", ".Sat(sat)")
    assert _changes(tb, break_testbench(tb, task, BreakKind.PIN_CASE, seed=0)) == [
        "-    .Sat(sat)", "+    .sat(sat)"]


def test_a_truncated_answer_ends_at_a_whole_line_after_the_dut_instance_begins():
    """hier_acc's testbench has 40 lines, the DUT instance begins on line 9; seed 3 cuts
    inside the port list, after line 16 (``.sat(sat)``), as a token limit would."""
    task = example_task("hier_acc")
    tb = random_testbench(task, seed=1, length=10)
    cut = break_testbench(tb, task, BreakKind.TRUNCATED, seed=3)
    assert tb.startswith(cut) and cut.endswith("    .sat(sat)\n")
    assert len(cut.splitlines()) == 16
    cuts = {break_testbench(tb, task, BreakKind.TRUNCATED, seed=s) for s in range(200)}
    assert min(len(c.splitlines()) for c in cuts) == 9   # the instance's first line
    assert max(len(c.splitlines()) for c in cuts) == 39  # all but endmodule


def test_a_testbench_without_the_dut_instance_has_no_place_for_a_mistake():
    task = example_task("hier_acc")
    assert break_testbench("module tb; endmodule\n", task, BreakKind.MODULE_NAME) is None


def test_every_kind_is_planted_about_equally_often():
    kinds = list(BreakKind)
    got = [k for n in range(90) for k in repair_kinds(kinds, f"repo{n}", 2)]
    assert len(kinds) == 10 and all(abs(got.count(k) - 18) <= 7 for k in kinds)
    assert repair_kinds(kinds, "x", 0) == [] and repair_kinds([], "x", 2) == []


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_repairs_of_planted_mistakes_are_judged_like_any_transition(tmp_path):
    """mux2 with the random teacher (exhaustive: 100%): the wrong instance name and the
    glued declaration fail to compile (Cov 0), the short run stops at 1 ns; the
    teacher's testbench repairs all three, gaining more than tau_delta, so every repair
    point is kept and named by kind."""
    cfg = resolve(stage_preset(0), None, [
        "selection.candidates=1", "transitions=1", "concurrency=1",
        "repair.kinds=[instance_name, short_run, glued_declaration]", "repair.per_repo=3"])
    teacher = get_policy("random")
    policies = {Role.INTERMEDIATE: teacher, Role.TRANSITION: teacher}
    task = fixture_task("mux2")
    executor = get_executor("local", workers=1)
    try:
        run = SynthRun(tmp_path / "run", cfg, policies, executor.simulate)
        assert run.worst_case_calls() == 1 + 1 + 1 + 3
        asyncio.run(run.run([RepoItem(task.id, task)]))
    finally:
        executor.close()
    repairs = [p for p in iter_jsonl(tmp_path / "run" / "points.jsonl")
               if p["state"]["selected_as"].startswith("broken:")]
    by_kind = {p["state"]["selected_as"]: p for p in repairs}
    assert sorted(by_kind) == ["broken:glued_declaration", "broken:instance_name",
                               "broken:short_run"]
    for kind in ("glued_declaration", "instance_name"):
        assert by_kind[f"broken:{kind}"]["state"]["observation"]["status"] == "compile_error"
    for point in repairs:
        assert point["kind"] == "agentic" and point["verdict"] == "kept"
        assert point["point_id"] == f"{point['state']['id']}>int/0"
        assert point["next"]["cov"] == 1.0 and point["gain"] > 0.01
