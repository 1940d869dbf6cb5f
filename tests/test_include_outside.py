"""The last line behind the include rule (a red team's finding of 2026-12-07): pyslang
pastes tokens its own way, so a macro can build an `` `include`` the rule does not see
(`` `M(.`BT()include) "/abs/file" `` with ``M(y) K``y``). Whatever builds it, a parse of
RTL that reads, or reaches for, a file outside its sources is refused, and the bounded
child refuses it first, so this process never opens the file."""

from __future__ import annotations

import pytest

from llm4cov.tasks.hdl import OutsideFileError, ParseBoundError, compiled, parse_design
from llm4cov.tasks.model import SourceFile

BACKTICK = "`define BT() `\n`define M(y) K``y\n`M(.`BT()include) \"{path}\"\n"
SPLIT = "`define I() `inclu\n`define M(y) K``y\n`M(.`I()de \"{path}\")\n"


@pytest.mark.parametrize("header", [BACKTICK, SPLIT])
def test_an_include_built_by_pasting_is_refused_in_this_process(tmp_path, header):
    secret = tmp_path / "secret.vh"
    secret.write_text("`define LEAK 1\n")
    rtl = SourceFile(name="a.sv", content=header.format(path=secret) + "module a; endmodule\n")
    with pytest.raises(OutsideFileError, match=f"reached for {secret}, outside the sources"):
        compiled([rtl], [], [])


@pytest.mark.parametrize("header", [BACKTICK, SPLIT])
def test_the_bounded_child_refuses_it_before_this_process_parses(tmp_path, header):
    """The child (in the OS sandbox where it runs) finds the file, or the include it
    could not open by that absolute name: either way the parse here never starts."""
    secret = tmp_path / "secret.vh"
    secret.write_text("`define LEAK 1\n")
    rtl = SourceFile(name="a.sv", content=header.format(path=secret) + "module a; endmodule\n")
    with pytest.raises(ParseBoundError, match=f"RTL a.sv: an `include reached for {secret}"):
        parse_design([rtl])


def test_includes_inside_the_sources_still_parse():
    rtl = [SourceFile(name="inc/defs.vh", content="`define W 8\n"),
           SourceFile(name="a.sv", content="`include \"defs.vh\"\n"
                                           "module a(output logic [`W-1:0] q); endmodule\n")]
    design = parse_design(rtl, ["inc"])
    assert [p.width for p in design.ports("a")] == [8]
