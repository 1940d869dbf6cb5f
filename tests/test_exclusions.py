"""Exclusion rules (sim/model/exclusions.py) on the hand-counted mux2 design.

mux2 partial testbench, hand count (tests/test_coverage_counts.py): line 1/1 (the
always_comb at line 9), branch 1/2 and expr 2/3 (both at line 10), toggle 3/16 (lines
3-7: sel, en, a[1:0], b[1:0], y[1:0]).
"""

from __future__ import annotations

import pytest

from conftest import FIXTURES, fixture_task
from llm4cov.sim.backends.verilator.coverage_dat import parse_coverage_dat
from llm4cov.sim.config import SimConfig
from llm4cov.sim.model.coverage import summarize
from llm4cov.sim.model.exclusions import (
    ExclusionError,
    Rule,
    excluded_note,
    load_rules,
    parse_rules,
    split_points,
)
from llm4cov.sim.model.observation import Status

POINTS = parse_coverage_dat(FIXTURES / "report" / "mux2_partial.coverage.dat")


def counts(points):
    rep = summarize(points, "tb.dut", {"mux2.sv"})
    return {k: (v.covered, v.total) for k, v in rep.metrics.items()} if rep else {}


def test_rule_syntax(tmp_path):
    text = "# comment\nmux2.sv:10\n*.sv:3-7 toggle  # inputs\nhier tb.dut.u_*\n\n"
    (tmp_path / "excl.txt").write_text(text)
    assert load_rules(tmp_path / "excl.txt") == (
        Rule(file="mux2.sv", first=10, last=10),
        Rule(file="*.sv", first=3, last=7, metrics=frozenset({"toggle"})),
        Rule(hier="tb.dut.u_*"),
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("mux2.sv", "x:1: expected FILE:LINE[-LAST] or 'hier PATTERN', got 'mux2.sv'"),
        ("mux2.sv:9-3", "x:1: line range 9-3 is reversed"),
        ("mux2.sv:3 lines", "x:1: unknown metric 'lines'"),
        ("hier", "x:1: 'hier' needs a hierarchy pattern"),
    ],
)
def test_bad_rules_name_the_line(line, message):
    with pytest.raises(ExclusionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_rules([line], "x")


def test_line_rule_removes_the_branch_and_expression_points():
    kept, excluded = split_points(POINTS, parse_rules(["mux2.sv:10"]))
    assert counts(kept) == {"line": (1, 1), "toggle": (3, 16)}
    assert excluded_note(excluded) == "5 points excluded by the exclusion rules (branch 2, expr 3)"


def test_metric_and_hierarchy_rules():
    kept, excluded = split_points(POINTS, parse_rules(["mux2.sv:3-7 toggle"]))
    assert counts(kept) == {"line": (1, 1), "branch": (1, 2), "expr": (2, 3)}
    assert len(excluded) == 16
    kept, _ = split_points(POINTS, parse_rules(["hier tb.dut"]))
    assert counts(kept) == {}
    kept, _ = split_points(POINTS, parse_rules(["hier tb.other*"]))
    assert counts(kept) == counts(POINTS)
    assert excluded_note([]) == ""


@pytest.mark.requires_verilator
def test_evaluator_applies_exclusions_when_counting(evaluator):
    from llm4cov.sim.evaluator import Evaluator

    ev = Evaluator(SimConfig(exclusions=("mux2.sv:10",)))
    obs = ev.evaluate(fixture_task("mux2"), (FIXTURES / "mux2_partial_tb.sv").read_text())
    assert obs.status is Status.SUCCESS
    assert {k: (v.covered, v.total) for k, v in obs.coverage.metrics.items()} == {
        "line": (1, 1), "toggle": (3, 16)}
    assert obs.coverage.overall == pytest.approx((100 + 18.75) / 2)
    assert "5 points excluded by the exclusion rules (branch 2, expr 3)" in obs.notes
    assert all(u.kind == "toggle" for u in obs.uncovered)
