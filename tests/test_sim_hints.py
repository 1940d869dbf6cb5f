"""Tool-failure detection, testbench workarounds, divergence and data-file notes
(pyslang and text only; the simulator runs are in test_repro_corpus.py)."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from llm4cov.sim.analysis import hints
from llm4cov.sim.backends.verilator import failures
from llm4cov.tasks.model import SourceFile

TB_PROP = SourceFile(name="tb.sv", content=(
    "module tb; logic clk, set, flag;\n  property p_flag_high; flag; endproperty\n\n"
    "  assert property (@(posedge clk) set |=> p_flag_high);\nendmodule\n"))


def test_tool_failures_come_from_the_tools_own_lines_only():
    internal = "%Error: Internal Error: tb.sv:17:13: ../V3Scope.cpp:88: Can't locate varref"
    assert failures.tool_failure(internal, [TB_PROP]) == "Verilator internal error"
    # the same text not at the start of a line (e.g. quoted by a testbench) is no signal
    assert failures.tool_failure("- tb: %Error: Internal Error: x", [TB_PROP]) is None
    var = "%Error: tb.sv:10:54: Found definition of '_Vpast_1_1' as a VAR but expected"
    assert failures.tool_failure(var, [TB_PROP]) == (
        "Verilator error about its own internal variable `_Vpast_1_1`")
    own = SourceFile(name="tb.sv", content="module tb; logic _Vpast_1_1; endmodule\n")
    assert failures.tool_failure(var, [own]) is None  # the testbench's own name
    at = "%Error: tb.sv:4:43: Can't find definition of task/function: 'p_flag_high'"
    assert "declared property `p_flag_high`" in failures.tool_failure(at, [TB_PROP])
    assert failures.tool_failure(at.replace("p_flag_high", "nope"), [TB_PROP]) is None


def test_a_pasted_internal_name_is_the_testbench_s():
    """A thirty-eighth red team: `` `V(tmp)`` pastes ``_V`` and ``tmp``, so no text holds
    the name Verilator complains about; the sources as expanded do."""
    tb = SourceFile(name="tb.sv", content=(
        "module tb;\n`define V(n) _V``n\n  logic `V(tmp); logic `V(tmp);\nendmodule\n"))
    dup = "%Error: tb.sv:3:22: Duplicate declaration of signal: '_Vtmp'"
    expanded = "module tb;\n\n  logic _Vtmp; logic _Vtmp;\nendmodule\n"
    assert failures.tool_failure(dup, [tb], expanded) is None
    assert failures.tool_failure(dup, [tb]) == (  # what the rule said without it
        "Verilator error about its own internal variable `_Vtmp`")


@pytest.mark.parametrize(("line", "col", "tool"), [
    (4, 43, True),    # the instance `|=> p_flag_high`: verilator#8295
    (4, 61, False),   # `else p_flag_high();` on the same line: a call, the testbench's
    (5, 11, False),   # `initial p_flag_high();`
    (6, 3, False),    # a macro's text: no place in the file to judge
    (6, 1, False),
])
def test_a_missing_property_is_verilators_only_at_a_property_instance(line, col, tool):
    """Rule 3 reads where the error points (line and column, from 1, as Verilator's):
    a property instance in a property expression, not a call of the name."""
    tb = SourceFile(name="tb.sv", content=(
        "module tb; logic clk, set, flag;\n"
        "  property p_flag_high; flag; endproperty\n"
        "`define CALL initial p_flag_high();\n"
        "  assert property (@(posedge clk) set |=> p_flag_high) else p_flag_high();\n"
        "  initial p_flag_high();\n"
        "  `CALL\nendmodule\n"))
    assert tb.content.splitlines()[3][42:53] == tb.content.splitlines()[3][60:71] == \
        "p_flag_high"
    error = f"%Error: tb.sv:{line}:{col}: Can't find definition of task/function: 'p_flag_high'"
    assert (failures.tool_failure(error, [tb]) is not None) is tool


def test_workarounds_insert_text_only_and_keep_lines():
    tb = SourceFile(name="tb.sv", content=(
        "module tb; logic r, q;\n"
        "  always @(posedge r) q <= r;\n"
        "  initial begin r <= 1; q <= #2 0;\n"
        "    fork : wd\n      begin disable wd; end\n      begin #5 $finish; end\n    join\n"
        "  end\nendmodule\n"))
    fix = hints.testbench_workarounds(tb)
    lines = fix.text.splitlines()
    assert lines[1] == "  always @(posedge r) q <= r;"  # not in an initial block
    assert lines[2] == "  initial begin r <= #0 1; q <= #2 0;"  # has its own delay
    assert lines[4] == "      begin #0 disable wd; end"
    assert fix.nba_lines == frozenset({3})
    assert fix.text.count("\n") == tb.content.count("\n")
    assert len(fix.notes) == 2


def test_a_macro_s_assignment_or_disable_is_left_and_nothing_else_moves():
    """A thirty-first red team: a `` `define`` body's ``<=`` and ``disable`` have offsets
    in the macro's buffer, and the rewrite inserted its ``#0`` there, into other code of
    the testbench. Only tokens written in the text are rewritten now."""
    tb = SourceFile(name="tb.sv", content=(
        "module tb; logic r, q;\n"
        "`define NB(a, b) begin /* padding padding padding */ a <= b; end\n"
        "`define STOP_WD disable wd\n"
        "  initial `NB(r, 1'b1)\n"
        "  initial begin q <= 0;\n"
        "    fork : wd\n      begin `STOP_WD; end\n      begin #5 $finish; end\n    join\n"
        "  end\nendmodule\n"))
    fix = hints.testbench_workarounds(tb)
    assert fix.text == tb.content.replace("begin q <= 0;", "begin q <= #0 0;")
    assert fix.nba_lines == frozenset({5})


def test_a_clocking_drive_gets_no_delay():
    """``cb.x <= #0 1`` does not compile (IEEE 1800 14.16: a clocking drive takes a
    cycle delay only), which sent a thirty-second red team's build to the fallback."""
    tb = SourceFile(name="tb.sv", content=(
        "module tb; logic clk, x, y;\n  clocking cb @(posedge clk); output x; endclocking\n"
        "  initial begin cb.x <= 1; y <= 1; end\nendmodule\n"))
    assert hints.testbench_workarounds(tb).text == tb.content.replace("y <= 1", "y <= #0 1")


def test_rewrites_land_after_characters_of_several_bytes():
    """pyslang counts UTF-8 bytes: each two-byte ``é`` in a comment had moved every later
    edit one character left (the same red team: ``wdog #0 dut``, ``$finish`` cutting
    other text)."""
    tb = SourceFile(name="tb.sv", content=(
        "module tb; logic r, q; // éééé ☃\n"
        "  initial begin r <= 1; #3 $stop; end\n"
        "  initial fork : wd begin disable wd; end join\nendmodule\n"))
    fix = hints.testbench_workarounds(tb)
    assert fix.text == tb.content.replace("r <= 1; #3 $stop", "r <= #0 1; #3 $finish") \
        .replace("begin disable wd", "begin #0 disable wd")


def test_initialdly_note_only_for_unfixed_lines_of_a_clocked_testbench():
    tb = SourceFile(name="tb.sv", content="module tb; initial @(posedge c) r <= 1; endmodule")
    log = "%Warning-INITIALDLY: tb.sv:1:34: Non-blocking assignment '<=' in initial"
    assert "lines 1" in failures.build_notes(log, tb)[0]
    assert failures.build_notes(log, tb, frozenset({1})) == []


def test_missing_data_files_are_named_with_their_line(tmp_path):
    tb = SourceFile(name="tb.v", content=(
        '`define F "vec.dat"\nmodule tb; integer fd; reg [7:0] m [0:3];\n'
        '  initial begin fd = $fopen(`F, "r"); $readmemh("mem.hex", m);\n'
        '  fd = $fopen("out.txt", "w"); fd = $fopen("out.txt", "r"); end\nendmodule\n'))
    assert hints.data_files(tb) == [("vec.dat", 3), ("mem.hex", 3)]
    notes = hints.missing_data_notes(tb, {"mem.hex"})
    assert notes == ["tb.v:3 reads `vec.dat`, which is not in the simulation directory: the "
                     "open fails ($fopen returns 0) and nothing is read. Pass it with "
                     "`llm4cov sim --aux FILE`, or generate the data in the testbench"]


def test_a_data_file_named_by_a_string_parameter_is_named_too():
    tb = SourceFile(name="tb.v", content=(
        'module tb; localparam HEX = "rom.hex"; reg [7:0] m [0:3];\n'
        '  initial $readmemh(HEX, m);\nendmodule\n'))
    assert hints.data_files(tb) == [("rom.hex", 2)]


def test_a_rewrite_is_blamed_only_for_errors_on_lines_it_changed():
    rewrite = hints.Rewrite([], frozenset(), {"tb.sv": "a\nb <= 1;\nc\n"},
                            {"tb.sv": "a\nb <= #0 1;\nc\n"})
    assert rewrite.caused(failures.error_sites("%Error: tb.sv:2:7: syntax error"))
    assert rewrite.caused(failures.error_sites("%Error-UNSUPPORTED: tb.sv:2:7: Unsupported: ..."))
    assert not rewrite.caused(failures.error_sites("%Error: tb.sv:3:1: syntax error"))
    assert not rewrite.caused(failures.error_sites("%Error: rtl.sv:2:7: syntax error"))


def test_sim_cli_rejects_a_missing_aux_path(tmp_path, capsys):
    from llm4cov.cli.app import main

    tb = tmp_path / "tb.sv"
    tb.write_text("module tb; mux2 dut(); endmodule\n")
    code = main(["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", str(tb),
                 "--aux", str(tmp_path / "nope.dat")])
    assert code == 2
    assert "--aux " + str(tmp_path / "nope.dat") + ": no such file or directory" in \
        capsys.readouterr().err


@pytest.mark.requires_verilator
@pytest.mark.slow
def test_sim_cli_passes_data_files_the_testbench_reads(tmp_path, capsys):
    """The testbench reads its 2 vectors from vec.dat: sel 0 then 1 with en 1, so both
    branches are taken. Without the file nothing is read (and a note says so)."""
    from llm4cov.cli.app import main

    tb = tmp_path / "tb.sv"
    tb.write_text(
        "module tb; logic sel, en = 1; logic [1:0] a = 1, b = 2, y; integer fd, v;\n"
        "  mux2 dut (.*);\n"
        '  initial begin fd = $fopen("vec.dat", "r");\n'
        '    while (fd != 0 && $fscanf(fd, "%d", v) == 1) begin sel = v[0]; #1; end\n'
        "    $finish; end\nendmodule\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "vec.dat").write_text("0\n1\n")
    args = ["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", str(tb), "--json", "--no-cache"]
    assert main([*args, "--aux", str(data)]) == 0
    with_file = json.loads(capsys.readouterr().out)
    assert with_file["coverage"]["metrics"]["branch"] == {"covered": 2, "total": 2}
    assert main(args) == 0
    without = json.loads(capsys.readouterr().out)
    assert without["coverage"]["metrics"]["branch"]["covered"] < 2
    assert any("reads `vec.dat`, which is not in the simulation directory" in n
               for n in without["notes"])
    (tmp_path / "vec.dat").write_text("0\n1\n")  # next to the testbench: a note only
    assert main(args) == 0
    beside = json.loads(capsys.readouterr().out)
    assert beside["coverage"]["metrics"]["branch"]["covered"] < 2
    assert any("sits next to the testbench: pass it with --aux" in n for n in beside["notes"])


def test_files_next_to_the_testbench_are_never_copied_only_named(tmp_path):
    """A hostile testbench could print any file beside it (``.env``): only --aux copies."""
    tb = SourceFile(name="tb.sv", content=(
        'module tb; integer fd; initial fd = $fopen(".env", "r"); endmodule\n'))
    (tmp_path / ".env").write_text("PASSWORD=hunter2\n")
    files, notes = hints.aux_files([], tmp_path / "tb.sv", tb)
    assert files == []
    assert notes == ["tb.sv reads `.env`; a file of that name sits next to the testbench: "
                     f"pass it with --aux {tmp_path / '.env'}"]
    files, notes = hints.aux_files([tmp_path / ".env"], tmp_path / "tb.sv", tb)
    assert [(f.name, f.content) for f in files] == [(".env", "PASSWORD=hunter2\n")]
    assert notes == []


def test_aux_directory_refuses_links_out_of_it(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET\n")
    (data / "vec.dat").write_text("1\n")
    (data / "table.txt").symlink_to(outside / "secret.txt")
    (data / "same.dat").symlink_to(data / "vec.dat")  # a link inside is read
    tb = SourceFile(name="tb.sv", content="module tb; endmodule\n")
    files, notes = hints.aux_files([data], tmp_path / "tb.sv", tb)
    assert [(f.name, f.content) for f in files] == [("same.dat", "1\n"), ("vec.dat", "1\n")]
    assert notes == [f"table.txt is a symbolic link to a file outside {data}: not loaded "
                     "(links out of the repository are refused; copy the file in)"]


def test_nesting_too_deep_for_pyslang_is_a_parse_limit_error(tmp_path):
    """20,000 nested parentheses: pyslang raises a bare RuntimeError; parse_tree names it,
    and the CLI's data-file notes leave the verdict to the evaluator (which rejects)."""
    from llm4cov.tasks.hdl import ParseLimitError, parse_tree

    text = "module tb; localparam int X = " + "(" * 20000 + "1" + ")" * 20000 + "; endmodule\n"
    with pytest.raises(ParseLimitError, match=r"^tb\.sv: nesting too deep for the parser"):
        parse_tree(text, "tb.sv")
    tb = SourceFile(name="tb.sv", content=text)
    assert hints.aux_files([], tmp_path / "tb.sv", tb) == ([], [])
