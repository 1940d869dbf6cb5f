"""Uncovered items in engineer's terms, at the item's own line (sim/model/feedback_terms.py).

Expected wordings are read off the RTL by hand; Verilator's point positions come from
real coverage.dat files of the pinned Verilator (tests/fixtures/report/*.coverage.dat).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EXAMPLES, FIXTURES
from llm4cov.sim.backends.verilator.coverage_dat import parse_coverage_dat
from llm4cov.sim.model.coverage import uncovered_items
from llm4cov.sim.model.feedback_terms import CONSTANT_NOTE, SourceIndex, sim_time_text

REPORT = FIXTURES / "report"
FSMX = {"fsmx.sv": (REPORT / "fsmx" / "fsmx.sv").read_text()}
MUX2 = {"mux2.sv": (FIXTURES / "mux2" / "mux2.sv").read_text()}
SAT_ADD = {"sat_add.sv": (EXAMPLES / "hier_acc" / "sat_add.sv").read_text()}
TRAFFIC = {"traffic_light.sv": (EXAMPLES / "traffic_fsm" / "traffic_light.sv").read_text()}
INTERNAL_NAMES = ("'if'", "'else'", "elsif", "cond_then", "cond_else", "=>", "'case'")


@pytest.mark.parametrize(
    ("point", "detail", "line"),
    [
        # if (!rst_n) ... else if (go) ... else begin ... end  (fsmx.sv:11-17)
        (("line", "fsmx.sv", 11, 5, "elsif", "11-12"),
         "then branch of the if at fsmx.sv:11 never executed", 11),
        (("line", "fsmx.sv", 13, 10, "if", "13-14"),
         "then branch of the if at fsmx.sv:13 never executed", 13),
        # Verilator puts the else at the if's line 13; the else keyword is on line 15
        (("line", "fsmx.sv", 13, 11, "else", "15-16"),
         "else branch of the if at fsmx.sv:13 never executed", 15),
        (("line", "fsmx.sv", 24, 11, "case", "24"),
         "case item 2'd3 of the case at fsmx.sv:20 never executed", 24),
        (("branch", "fsmx.sv", 27, 27, "cond_then", "27"),
         "true arm of the ?: on `go` at fsmx.sv:27 never taken", 27),
        (("branch", "fsmx.sv", 27, 28, "cond_else", "27"),
         "false arm of the ?: on `go` at fsmx.sv:27 never taken", 27),
        (("expr", "fsmx.sv", 27, 17, "(go==0) => 0", ""), "`go` never false", 27),
        (("expr", "fsmx.sv", 11, 9, "(rst_n==0) => 1", ""),
         "`!rst_n` never true with rst_n=0", 11),
    ],
)
def test_fsmx_wording_and_own_line(point, detail, line):
    phrase = SourceIndex(FSMX).phrase(*point)
    assert (phrase.detail, phrase.line) == (detail, line)


def test_else_keyword_line_of_a_begin_end_else():
    """sat_add.sv: `if (full[8]) begin` at 11, `end else begin` at 14, body to 17."""
    phrase = SourceIndex(SAT_ADD).phrase("branch", "sat_add.sv", 11, 6, "else", "14-16")
    assert phrase == type(phrase)("else branch of the if at sat_add.sv:11 never taken", 14)


def test_if_without_else_and_parameter_constant_condition():
    """fsmx.sv:29 `if (MODE == 1)` has no else and reads only the parameter MODE."""
    phrase = SourceIndex(FSMX).phrase("branch", "fsmx.sv", 29, 6, "else", "")
    assert phrase.detail == (
        "the if at fsmx.sv:29 never saw its condition false (it has no else)" + CONSTANT_NOTE
    )
    expr = SourceIndex(FSMX).phrase("expr", "fsmx.sv", 24, 25, "((MODE == 32'sh1)==1) => 1")
    assert expr.detail == "`MODE == 1` never true" + CONSTANT_NOTE


@pytest.mark.parametrize(
    ("comment", "detail"),
    [
        # the row is one term of `timer == 4'd9 || (ped_req && timer >= 4'd2)`: name it
        ("((timer == 4'h9)==1) => 1",
         "`timer == 4'h9` never true (term of `timer == 4'd9 || (ped_req && timer >= 4'd2)`)"),
        ("(ped_req==1 && (timer >= 4'h2)==1) => 1",
         "`timer == 4'd9 || (ped_req && timer >= 4'd2)` never true with ped_req=1, "
         "`timer >= 4'h2` true"),
    ],
)
def test_a_term_of_a_larger_condition_is_named_from_the_row(comment, detail):
    """traffic_light.sv:26, Verilator's rows at the `||` (column 29, real coverage.dat of
    examples/traffic_fsm): the single-term row names its term, not the whole condition
    (whose then branch was taken through the other term)."""
    phrase = SourceIndex(TRAFFIC).phrase("expr", "traffic_light.sv", 26, 29, comment)
    assert phrase.detail == detail
    assert phrase.hit_label() == detail.replace(" never ", " ", 1)


def test_a_comment_before_a_case_item_is_not_its_label():
    """`case (i) // synopsys parallel_case`: the comment is trivia of the first item's
    token (realbench aes_rcon.v), not part of its label."""
    text = ("module r(input [3:0] i, output reg [7:0] o);\n"
            "  always @* case (i) // synopsys parallel_case\n"
            "    4'h0: o = 8'd1;\n"
            "    default: o = 8'd0;\n"
            "  endcase\nendmodule\n")
    phrase = SourceIndex({"r.v": text}).phrase("line", "r.v", 3, 9, "case", "")
    assert phrase.detail == "case item 4'h0 of the case at r.v:2 never executed"


def test_mux2_items_use_engineer_terms():
    """mux2 partial testbench (hand count in test_coverage_counts.py): the then branch of
    `if (sel && en)` and the term sel=1, en=1 are missed."""
    points = parse_coverage_dat(REPORT / "mux2_partial.coverage.dat")
    items, more = uncovered_items(points, "tb.dut", MUX2, limit=100)
    assert more == 0
    assert [i.render() for i in items[:2]] == [
        "mux2.sv:10 [branch] then branch of the if at mux2.sv:10 never taken"
        " | if (sel && en) y = b;",
        "mux2.sv:10 [expr] `sel && en` never true with sel=1, en=1 | if (sel && en) y = b;",
    ]
    fsmx, _ = uncovered_items(parse_coverage_dat(REPORT / "fsmx.coverage.dat"), "tb.dut",
                              FSMX, limit=100)
    for item in [*items, *fsmx]:
        assert not any(name in item.detail for name in INTERNAL_NAMES), item.detail


def test_unknown_file_still_gets_plain_words():
    phrase = SourceIndex({}).phrase("expr", "x.sv", 3, 1, "(cnt=='d3) => 1")
    assert phrase.detail == "the expression never true with cnt='d3"
    assert SourceIndex({}).phrase("branch", "x.sv", 5, 6, "else", "").detail == (
        "the if at x.sv:5 never saw its condition false (it has no else)"
    )


def test_coverage_off_region_has_no_points():
    """fsmx.sv:33-36 is inside /* verilator coverage_off */ ... coverage_on: the real
    coverage.dat has no point there (dbg's toggles and expression are absent)."""
    points = parse_coverage_dat(Path(REPORT / "fsmx.coverage.dat"))
    assert [p for p in points if p.file == "fsmx.sv" and 33 <= p.line <= 36] == []
    assert not any("dbg" in p.comment for p in points)


@pytest.mark.parametrize(
    ("seconds", "testbench", "text"),
    [
        (100e-9, "`timescale 1ns/1ps\nmodule tb;", "100 (time unit 1ns) = 100ns"),
        (1.25e-6, "module tb;\n  timeunit 10ns;", "125 (time unit 10ns) = 1.25us"),
        (3e-12, "module tb;", "3 (time unit 1ps) = 3ps"),  # Verilator's default unit
    ],
)
def test_simulated_time_in_the_design_time_unit(seconds, testbench, text):
    assert sim_time_text(seconds, testbench) == text
