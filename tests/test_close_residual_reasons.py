"""The residual reports the verdict formal gave: a toggle item formal placed no goal
for (one verdict for its whole signal, bits and directions) explains each of its
points, not "not analyzed".

The points are hand-made as Verilator writes them for ``gen_lzc.index_lut[0]``, a
signal of a generate block (``cc_lzc.sv`` of pulp's common_cells): one point per bit
and direction at the signal's declaration line.
"""

from __future__ import annotations

from llm4cov.close.model import Cause, GoalVerdict
from llm4cov.close.residual import classify, verdict_for, whole_toggle
from llm4cov.formal.goals import place_goals
from llm4cov.sim.model.construct import Construct, ConstructKind
from llm4cov.sim.model.coverage import Point
from llm4cov.sim.model.observation import UncoveredItem
from llm4cov.tasks.model import SourceFile

SOURCE = """\
module lzc(input [2:0] in_i, output [2:0] cnt_o);
  if (1) begin : gen_lzc
    logic [2:0] index_lut [2];
    assign index_lut[0] = in_i;
    assign cnt_o = index_lut[0];
  end
endmodule
"""
SOURCES = {"lzc.sv": SOURCE}
NOT_PLACED = "toggle of a structured or array signal is not placed"


def _toggle(comment: str, line: int = 3) -> Point:
    return Point(metric="toggle", file="lzc.sv", line=line, comment=comment,
                 hier="tb.dut", count=0, module="lzc")


ITEM = UncoveredItem(kind="toggle", file="lzc.sv", line=3,
                     detail="gen_lzc.index_lut[0][1:0] never toggled 0->1",
                     typed=Construct(kind=ConstructKind.TOGGLE, signal="gen_lzc.index_lut[0]",
                                     bits=(1, 0), direction="0->1"))


def _not_placed() -> GoalVerdict:
    """The verdict formal gives an item it placed no goal for, as the analysis step
    records it (``what`` and ``metric`` are the item's kind)."""
    placement = place_goals([SourceFile(name="lzc.sv", content=SOURCE)], [ITEM])
    assert placement.goals == [] and [r for _, r in placement.unplaced] == [NOT_PLACED]
    return GoalVerdict.of(ITEM, "toggle", "toggle", status="unknown", reason=NOT_PLACED)


def test_a_whole_item_verdict_explains_each_of_its_bits_and_directions():
    v = _not_placed()
    assert whole_toggle(v)
    bit0, bit1 = _toggle("gen_lzc.index_lut[0][0]:0->1"), _toggle("gen_lzc.index_lut[0][1]:0->1")
    other_dir = _toggle("gen_lzc.index_lut[0][0]:1->0")  # not in the item (0->1 only)
    other_bit = _toggle("gen_lzc.index_lut[0][2]:0->1")
    other_line = _toggle("gen_lzc.index_lut[0][0]:0->1", line=4)
    found = verdict_for([bit0, bit1, other_dir, other_bit, other_line], [v], SOURCES)
    assert found == {bit0: v, bit1: v}


def test_the_residual_says_formal_did_not_place_it_not_that_it_did_not_get_to_it():
    points = [_toggle("gen_lzc.index_lut[0][0]:0->1"), _toggle("gen_lzc.index_lut[0][1]:0->1"),
              _toggle("gen_lzc.index_lut[0][2]:0->1")]
    residual = classify(points, [], SOURCES, [_not_placed()], "not hit by 1 random tests",
                        "not analyzed: the budget was spent", 10)
    assert [(r.cause, r.reason) for r in residual] == [
        (Cause.NOT_REACHED, f"not hit by 1 random tests; formal: {NOT_PLACED}"),
        (Cause.NOT_REACHED, f"not hit by 1 random tests; formal: {NOT_PLACED}"),
        (Cause.NOT_REACHED, "not hit by 1 random tests; formal: not analyzed: the budget "
                            "was spent")]


def test_a_bit_goal_verdict_still_wins_over_its_whole_item():
    bit0 = _toggle("gen_lzc.index_lut[0][0]:0->1")
    proven = GoalVerdict.of(ITEM, "gen_lzc.index_lut[0][0] 0->1", "toggle",
                            status="unreachable", reason="proven by 10-induction")
    assert not whole_toggle(proven)
    assert verdict_for([bit0], [proven, _not_placed()], SOURCES) == {bit0: proven}
