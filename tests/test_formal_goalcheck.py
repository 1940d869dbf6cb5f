"""Goals that would not compile where they are written are not placed; a job that
fails because of goals still runs the others.

The design below is written by hand so that each goal's fate is known:

- line 6, ``pick = pick | wstrb[k];`` sits in a function: its term names the argument
  ``wstrb`` and the loop variable ``k``, which module-level code cannot name;
- line 11, ``assign in_tmp = a[i] & b[i];`` sits in generate block ``g``: ``in_tmp``
  is declared there;
- line 14, ``assign z = &{1'b0, a};``: its term ``{1'h0, a}[4] && {1'h0, a}[0]`` is
  never true (bit 4 is the constant 0), written as Verilator words it, a select of a
  replicated concatenation (legal SystemVerilog: the goal is placed and proven
  unreachable);
- line 15, ``assign y = a[0] & b[0];``: ``y`` is 1 when ``a[0]`` and ``b[0]`` are
  (reached at cycle 0: the inputs are free from the first cycle).
- ``nosuch`` (a term naming nothing the design declares) does not elaborate: pyslang
  rejects its goal; the Yosys ``read_slang`` frontend fails on it, while the
  ``read_verilog`` fallback fails on the concatenation select instead (so only a job
  narrowed down with one frontend finds the goal at fault).
"""

from __future__ import annotations

import pytest

from llm4cov.formal import FormalConfig, analyze, closure
from llm4cov.formal.goalcheck import rejected_goals
from llm4cov.formal.goals import place_goals, read_term
from llm4cov.sim.model.observation import UncoveredItem
from llm4cov.tasks.loaders import task_from_dir

DESIGN = """\
module gc(input clk, input rst, input [3:0] a, input [1:0] b, output y, output z,
          output p, output reg [3:0] q);
  function automatic pick(input [3:0] wstrb);
    integer k;
    pick = 1'b0;
    for (k = 0; k < 4; k = k + 1) pick = pick | wstrb[k];
  endfunction
  genvar i;
  generate for (i = 0; i < 2; i = i + 1) begin : g
    wire in_tmp;
    assign in_tmp = a[i] & b[i];
  end endgenerate
  assign p = pick(a);
  assign z = &{1'b0, a};
  assign y = a[0] & b[0];
  always @(posedge clk) if (rst) q <= 4'h0; else q <= a;
endmodule
"""


def _term(line: int, term: str) -> UncoveredItem:
    return UncoveredItem(kind="expr", file="gc.v", line=line, detail=f"`{term}` never true")


FUNCTION_ARG = _term(6, "wstrb[k[1:0]+:1]")
GENERATE_LOCAL = _term(11, "in_tmp && a[0]")
EXPR_SELECT = _term(11, "a[(32'sh0 * 32'sh2)[2:0]+:1]")
CONCAT_SELECT = _term(14, "{32'h1{{1'h0, a}}}[4] && {32'h1{{1'h0, a}}}[0]")
UNDECLARED = _term(15, "nosuch && a[0]")
Y_TERM = _term(15, "a[0] && b[0]")


@pytest.fixture()
def gc_task(tmp_path):
    (tmp_path / "gc.v").write_text(DESIGN, encoding="utf-8")
    return task_from_dir(tmp_path, top="gc")


def test_a_term_naming_function_or_generate_locals_is_not_placed(gc_task):
    placement = place_goals(gc_task.rtl_files, [FUNCTION_ARG, GENERATE_LOCAL, Y_TERM])
    assert [g.what for g in placement.goals] == ["term (a[0] && b[0])"]
    assert [r for _, r in placement.unplaced] == [
        "not placed: the term names k (declared in function pick), wstrb (declared in "
        "function pick), not visible at module level where its goal would go",
        "not placed: the term names in_tmp (declared in generate block g), not visible "
        "at module level where its goal would go"]


def test_a_term_that_is_no_expression_is_not_placed(gc_task):
    placement = place_goals(gc_task.rtl_files, [EXPR_SELECT, CONCAT_SELECT])
    assert [r for _, r in placement.unplaced] == [
        "not placed: the term (a[(32'sh0 * 32'sh2)[2:0]+:1]) is not a SystemVerilog "
        "expression (slang: select expression is not allowed here)"]
    assert [g.item.line for g in placement.goals] == [14]  # a concatenation's select is


def test_read_term_names_the_identifiers_of_a_condition():
    assert read_term("!(wstrb[k[1:0]+:1])").names == {"wstrb", "k"}
    assert read_term("!(wstrb[k[1:0]+:1])").error == ""
    assert read_term("(a && b").error == "slang: expected ')'"


def test_a_goal_that_does_not_elaborate_is_rejected_and_the_labels_stay(gc_task):
    items = [Y_TERM, UNDECLARED, CONCAT_SELECT]

    def place(reject):
        return place_goals(gc_task.rtl_files, items, reject=reject)

    reject = rejected_goals(place, gc_task)
    assert reject == {"llm4cov_g1": "not placed: its goal does not compile where it would "
                                    "be written (slang: use of undeclared identifier "
                                    "'nosuch')"}
    placement = place(reject)
    assert [g.label for g in placement.goals] == ["llm4cov_g0", "llm4cov_g2"]
    assert [(g.label, r) for g, r in placement.rejected] == [
        ("llm4cov_g1", reject["llm4cov_g1"])]
    assert "nosuch" not in placement.files[0].content
    assert rejected_goals(lambda r: place_goals(gc_task.rtl_files, [Y_TERM], reject=r),
                          gc_task) == {}


def test_goal_spans_cover_exactly_the_text_written_for_each_goal(gc_task):
    placement = place_goals(gc_task.rtl_files, [Y_TERM, CONCAT_SELECT])
    data = placement.files[0].content.encode()
    texts = {label: data[a:b].decode() for a, b, label in placement.spans["gc.v"]}
    assert texts == {
        "llm4cov_g0": "  always @* begin llm4cov_g0: cover ((a[0] && b[0])); end\n",
        "llm4cov_g1": "  always @* begin llm4cov_g1: cover (({32'h1{{1'h0, a}}}[4] && "
                      "{32'h1{{1'h0, a}}}[0])); end\n"}


@pytest.mark.requires_solver
def test_analysis_classifies_the_goals_that_compile_and_says_why_not_the_others(gc_task):
    config = FormalConfig(cover_depth=4, prove_depth=2, cache=False)
    result = analyze(gc_task, [FUNCTION_ARG, UNDECLARED, CONCAT_SELECT, Y_TERM], config)
    by_line = {g.item.line: g for g in result.goals if g.item is not UNDECLARED}
    assert result.errors == []
    assert by_line[14].status == "unreachable"
    assert (by_line[15].status, by_line[15].step) == ("reached", 0)
    assert by_line[6].status == "unknown" and by_line[6].reason.startswith("not placed:")
    undeclared = next(g for g in result.goals if g.what == "term (nosuch && a[0])")
    assert undeclared.status == "unknown"
    assert undeclared.reason.endswith("(slang: use of undeclared identifier 'nosuch')")


@pytest.mark.requires_solver
@pytest.mark.heavy
def test_a_cover_job_failing_on_one_goal_runs_the_others(gc_task, monkeypatch):
    monkeypatch.setattr(closure, "rejected_goals", lambda place, task: {})  # check off
    config = FormalConfig(cover_depth=4, prove_depth=2, cache=False)
    result = analyze(gc_task, [UNDECLARED, CONCAT_SELECT, Y_TERM], config)
    status = {g.what: g.status for g in result.goals}
    assert status == {"term (nosuch && a[0])": "error",
                      "term ({32'h1{{1'h0, a}}}[4] && {32'h1{{1'h0, a}}}[0])": "unreachable",
                      "term (a[0] && b[0])": "reached"}
    bad = next(g for g in result.goals if g.status == "error")
    assert bad.reason.startswith("cover job error with this goal: ")
    assert len(result.errors) == 1 and "(with 1 of 3 goals;" in result.errors[0]
    assert not result.all_jobs_failed()
