"""Typed coverage (issue 43): the metric table, the typed construct of a miss, and
formal goals built from the construct, never from the wording.

Points come from real coverage.dat files of the pinned Verilator
(tests/fixtures/report/*.coverage.dat), as in tests/test_feedback_terms.py.
"""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, FIXTURES
from llm4cov.formal import goals as goal_mod
from llm4cov.sim.backends.verilator.coverage_dat import metric_name, parse_coverage_dat
from llm4cov.sim.backends.verilator.failures import RETRY_WITHOUT
from llm4cov.sim.model import wording
from llm4cov.sim.model.construct import Construct, ConstructKind, term_condition
from llm4cov.sim.model.coverage import typed_points, uncovered_items
from llm4cov.sim.model.exclusions import METRICS as EXCLUDABLE
from llm4cov.sim.model.feedback_terms import SourceIndex
from llm4cov.sim.model.metrics import (
    METRICS,
    OVERALL_METRICS,
    REPORT_ORDER,
    Metric,
    crash_retries,
    metric_of_tag,
    scored_metrics,
    verilator_flags,
)
from llm4cov.sim.model.observation import Observation, Status, UncoveredItem
from llm4cov.sim.report import coverage_markdown
from llm4cov.tasks.model import SourceFile, Task

REPORT = FIXTURES / "report"
DESIGNS = {
    "fsmx": ({"fsmx.sv": (REPORT / "fsmx" / "fsmx.sv").read_text()},
             parse_coverage_dat(REPORT / "fsmx.coverage.dat")),
    "mux2": ({"mux2.sv": (FIXTURES / "mux2" / "mux2.sv").read_text()},
             parse_coverage_dat(REPORT / "mux2_partial.coverage.dat")),
    "traffic": ({"traffic_light.sv":
                 (EXAMPLES / "traffic_fsm" / "traffic_light.sv").read_text()},
                parse_coverage_dat(REPORT / "traffic_fsm.coverage.dat")),
}


def _holes(name: str) -> list[UncoveredItem]:
    sources, points = DESIGNS[name]
    return uncovered_items(points, "tb.dut", sources, limit=10**9)[0]


def _goals(name: str, items: list[UncoveredItem], mode: str = "cover"):
    sources, _ = DESIGNS[name]
    files = [SourceFile(name=n, content=t) for n, t in sources.items()]
    placement = goal_mod.place_goals(files, items, mode)
    return ([f.content for f in placement.files],
            [(g.label, g.what, g.metric, g.item.file, g.item.line) for g in placement.goals],
            [(i.file, i.line, reason) for i, reason in placement.unplaced])


# -- the metric table ---------------------------------------------------------------


def test_every_list_of_metrics_is_the_table():
    assert [m.name for m in METRICS] == ["line", "branch", "expr", "toggle", "fsm", "user",
                                         "covergroup"]
    assert OVERALL_METRICS == ("line", "branch", "expr", "toggle", "fsm")
    assert REPORT_ORDER == ("line", "branch", "expr", "toggle", "fsm", "user")
    assert set(EXCLUDABLE) == {"line", "branch", "expr", "toggle", "fsm", "user"}
    # the build's flags in the order observations record them
    assert verilator_flags(False) == ["--coverage-line", "--coverage-expr",
                                      "--coverage-toggle", "--coverage-user"]
    assert verilator_flags(True)[-1] == "--coverage-fsm"
    assert scored_metrics(verilator_flags(False)) == ["line", "branch", "expr", "toggle"]
    assert scored_metrics(verilator_flags(True))[-1] == "fsm"
    # a build that crashes Verilator drops FSM coverage first, then expression coverage
    assert RETRY_WITHOUT == (("--coverage-fsm", "FSM"), ("--coverage-expr", "expression"))


def test_a_metric_row_alone_makes_its_crash_retry(monkeypatch):
    """The retries are the table's: a row with ``crash_retry`` adds its flag, in order,
    named by its ``noun`` (or its name)."""
    extra = Metric("assertion", "assert", verilator_flag="--coverage-assert", crash_retry=2)
    monkeypatch.setattr("llm4cov.sim.model.metrics.METRICS", (*METRICS, extra))
    assert crash_retries() == (("--coverage-fsm", "FSM"), ("--coverage-expr", "expression"),
                               ("--coverage-assert", "assertion"))


@pytest.mark.parametrize(("tag", "metric"), [
    ("line", "line"), ("branch", "branch"), ("expr", "expr"), ("toggle", "toggle"),
    ("fsm_state", "fsm"), ("fsm_arc", "fsm"), ("", "user"), ("covergroup", "covergroup"),
    ("newkind", "newkind"),
])
def test_reader_tags(tag, metric):
    assert metric_of_tag(tag) == metric_name(tag) == metric


# -- the typed construct ------------------------------------------------------------


def test_items_round_trip_with_their_construct():
    items = [i for name in DESIGNS for i in _holes(name)]
    kinds = {i.typed.kind for i in items}
    assert {ConstructKind.IF_ARM, ConstructKind.CASE_ITEM, ConstructKind.TERNARY_ARM,
            ConstructKind.EXPR_TERM, ConstructKind.TOGGLE} <= kinds
    for item in items:
        assert not item.typed.from_text
        assert item.detail == wording.render(item.kind, item.file, item.typed)
        again = UncoveredItem.model_validate_json(item.model_dump_json())
        assert again == item
        assert Construct.model_validate(json.loads(item.typed.model_dump_json())) == item.typed
    obs = Observation(status=Status.SUCCESS, uncovered=items)
    assert Observation.model_validate_json(obs.model_dump_json()) == obs


def test_the_stored_construct_leaves_defaults_out():
    toggle = next(i for i in _holes("mux2") if i.kind == "toggle")
    stored = json.loads(toggle.model_dump_json())["typed"]
    assert stored["kind"] == "toggle" and "signal" in stored
    assert not {"at", "arm", "has_else", "condition", "label", "from_text"} & set(stored)


def test_typed_fields_of_the_fsmx_misses():
    """fsmx.sv: `if (!rst_n) ... else if (go)` at 11, `case (st)` at 20, `go ? ...` at 27,
    `if (MODE == 1)` at 29 (parameter only, no else)."""
    sources, points = DESIGNS["fsmx"]
    typed = {(t.point.metric, t.point.line, t.point.comment): t
             for t in typed_points(points, sources)}
    arm = typed[("line", 13, "else")]
    assert (arm.construct.kind, arm.construct.arm, arm.construct.at, arm.line) == (
        ConstructKind.IF_ARM, "else", 13, 15)
    case = typed[("line", 24, "case")].construct
    assert (case.kind, case.label, case.at) == (ConstructKind.CASE_ITEM, "2'd3", 20)
    tern = typed[("branch", 27, "cond_then")].construct
    assert (tern.arm, tern.condition) == ("true", "go")
    term = typed[("expr", 11, "(rst_n==0) => 1")].construct
    assert (term.expression, term.terms, term.result) == ("!rst_n", (("rst_n", "0"),), "1")
    assert term_condition(term) == "((rst_n) == 0)"
    mode = next(t for (m, line, _), t in typed.items() if line == 29 and m == "branch")
    assert mode.construct.param_only and mode.construct.condition == "MODE == 1"


def test_an_item_stored_without_its_construct_reads_it_from_its_words():
    """An observation stored before items were typed (schema 4) still loads: each item
    gets its construct back from its wording, marked from_text."""
    for item in _holes("fsmx"):
        old = {k: v for k, v in item.model_dump(mode="json").items() if k != "typed"}
        back = UncoveredItem.model_validate(old)
        assert back.typed.from_text and back.detail == item.detail
        assert back.param_only == item.param_only
        assert goal_mod.branch_condition(back) == goal_mod.branch_condition(item)
        assert goal_mod.toggle_targets(back) == goal_mod.toggle_targets(item)


def test_constant_is_a_flag_not_the_wording():
    """`llm4cov sim`'s Markdown lists a parameter-constant miss apart by its flag."""
    item = next(i for i in _holes("fsmx") if i.param_only)
    plain = item.model_copy(update={"typed": item.typed.model_copy(
        update={"param_only": False})})
    task = Task(id="t", rtl_files=[SourceFile(name="fsmx.sv", content="module fsmx; endmodule")],
                dut_module_name="fsmx")
    text = coverage_markdown(Observation(status=Status.SUCCESS, uncovered=[item]), task)
    assert "## Unreachable under the parameters" in text
    text = coverage_markdown(Observation(status=Status.SUCCESS, uncovered=[plain]), task)
    assert "## Unreachable under the parameters" not in text and "## Uncovered (1)" in text


# -- formal goals from the typed construct ------------------------------------------


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_goals_do_not_depend_on_the_wording(name, monkeypatch):
    """Goals read the typed construct only: the same holes with other words (any words)
    get the same goals, and so do the holes of a reworded phrase table. (The feedback
    lists its items in the order of their words, so a phrase table that reorders them
    reorders the goal labels with them: goals are numbered in the order they come.)"""
    before = _holes(name)
    expected = _goals(name, before), _goals(name, before, "prove")
    assert expected[0][1], "the design has goals"
    garbled = [i.model_copy(update={"detail": f"the {n}th miss, in other words"})
               for n, i in enumerate(before)]
    assert (_goals(name, garbled), _goals(name, garbled, "prove")) == expected

    def reworded(metric, file, construct):
        return "MISSED: " + wording.render(metric, file, construct).replace(
            "never", "not once").replace("branch", "arm")

    monkeypatch.setattr("llm4cov.sim.model.coverage.render", reworded)
    after = _holes(name)
    assert [i.detail for i in after] != [i.detail for i in before]
    assert [i.typed for i in after] == [i.typed for i in before]
    assert (_goals(name, after), _goals(name, after, "prove")) == expected


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_typed_goals_equal_the_goals_of_the_words(name):
    """The goals of the typed holes are those the same holes get when only their words
    are known (how goals were made before items carried a construct)."""
    typed = _holes(name)
    words = [UncoveredItem(kind=i.kind, file=i.file, line=i.line, detail=i.detail,
                           source=i.source, instance=i.instance) for i in typed]
    assert all(i.typed.from_text for i in words)
    assert _goals(name, typed) == _goals(name, words)
    assert _goals(name, typed, "prove") == _goals(name, words, "prove")


def test_fsm_points_are_states_and_arcs():
    """Verilator names an FSM point `<state variable>::<state>` or `...::<from>-><to>`."""
    words = SourceIndex({})
    state, _ = words.construct("fsm", "sdc.v", 40, 0, "tb.dut.state::IDLE")
    arc, _ = words.construct("fsm", "sdc.v", 40, 0, "tb.dut.state::IDLE->SEND")
    assert (state.kind, state.signal, state.is_arc) == (ConstructKind.FSM, "tb.dut.state", False)
    assert arc.is_arc and arc.label == "tb.dut.state::IDLE->SEND"
    assert wording.render("fsm", "sdc.v", arc) == "tb.dut.state::IDLE->SEND never hit"
