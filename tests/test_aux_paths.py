"""``--aux`` files keep the folder the testbench reads them from (hints.aux_files).

A testbench that reads ``$readmemh("d/x.hex")`` got the note "pass it with --aux
d/x.hex", but that file was copied as ``x.hex``, so the advice did not work (seen on
YosysHQ/picorv32's testbench.v, which reads ``firmware/firmware.hex``). A file below the
testbench's folder is now named by its path from there when the testbench reads that
name; every other file keeps its base name (a directory: names relative to it), and no
name leaves the work dir (no ``..``, no absolute name, no link out of the folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from llm4cov.sim.analysis import hints
from llm4cov.tasks.model import SourceFile


def _tb(path: str) -> SourceFile:
    return SourceFile(name="tb.sv", content=(
        f'module tb; logic [7:0] m [0:1]; initial $readmemh("{path}", m); endmodule\n'))


def _names(paths: list[Path], tb_path: Path, tb: SourceFile) -> list[str]:
    return [f.name for f in hints.aux_files(paths, tb_path, tb)[0]]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.hex").write_text("00\n01\n")
    return tmp_path


def test_the_notes_advice_names_the_file_as_the_testbench_reads_it(tree: Path):
    tb = _tb("d/x.hex")
    files, notes = hints.aux_files([], tree / "tb.sv", tb)
    assert files == []
    assert notes == ["tb.sv reads `d/x.hex`; a file of that name sits next to the testbench: "
                     f"pass it with --aux {tree / 'd' / 'x.hex'}"]
    assert _names([tree / "d" / "x.hex"], tree / "tb.sv", tb) == ["d/x.hex"]
    assert _names([tree / "d"], tree / "tb.sv", tb) == ["d/x.hex"]  # the folder, too
    assert _names([tree / "d" / ".." / "d" / "x.hex"], tree / "tb.sv", tb) == ["d/x.hex"]
    assert _names([tree / "d" / "x.hex"], tree / "tb.sv", _tb("./d/x.hex")) == ["d/x.hex"]


def test_the_relative_path_works_from_the_testbenchs_folder(tree: Path, monkeypatch):
    monkeypatch.chdir(tree)
    assert _names([Path("d/x.hex")], Path("tb.sv"), _tb("d/x.hex")) == ["d/x.hex"]
    monkeypatch.chdir(tree / "d")
    assert _names([Path("x.hex")], Path("../tb.sv"), _tb("d/x.hex")) == ["d/x.hex"]


def test_other_files_keep_their_base_name(tree: Path):
    # the testbench reads the base name: as before
    assert _names([tree / "d" / "x.hex"], tree / "tb.sv", _tb("x.hex")) == ["x.hex"]
    assert _names([tree / "d"], tree / "tb.sv", _tb("x.hex")) == ["x.hex"]
    # a file outside the testbench's folder: the name it reads is not its path from there
    (tree / "sub").mkdir()
    assert _names([tree / "d" / "x.hex"], tree / "sub" / "tb.sv", _tb("../d/x.hex")) == [
        "x.hex"]
    assert _names([tree / "d" / "x.hex"], tree / "sub" / "tb.sv", _tb("d/x.hex")) == ["x.hex"]


def test_a_link_out_of_the_testbenchs_folder_names_nothing_below_it(tmp_path: Path):
    """``d`` links to a folder outside: the file given is read (the user named it) but
    keeps its base name, and the note does not advise it."""
    outside, here = tmp_path / "outside", tmp_path / "here"
    outside.mkdir()
    here.mkdir()
    (outside / "x.hex").write_text("00\n")
    (here / "d").symlink_to(outside)
    tb = _tb("d/x.hex")
    assert hints.aux_files([], here / "tb.sv", tb) == ([], [])
    assert _names([here / "d" / "x.hex"], here / "tb.sv", tb) == ["x.hex"]


@pytest.mark.requires_verilator
@pytest.mark.slow
def test_readmemh_from_a_subfolder_is_found_with_the_advised_aux(tmp_path: Path, capsys,
                                                                  monkeypatch):
    """The testbench reads sel from ``d/x.hex`` (0 then 1, with en 1): both branches of
    mux2 are taken only when the file is found; the run follows the note's advice."""
    from llm4cov.cli.app import main

    tb = tmp_path / "tb.sv"
    tb.write_text(
        "module tb; logic sel, en = 1; logic [1:0] a = 1, b = 2, y; logic [7:0] m [0:1];\n"
        "  mux2 dut (.*);\n"
        '  initial begin $readmemh("d/x.hex", m);\n'
        "    sel = m[0][0]; #1; sel = m[1][0]; #1; $finish; end\nendmodule\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.hex").write_text("00\n01\n")
    monkeypatch.chdir(tmp_path)
    _, notes = hints.aux_files([], Path("tb.sv"), SourceFile(name="tb.sv",
                                                              content=tb.read_text()))
    assert notes and notes[0].endswith("pass it with --aux d/x.hex")
    args = ["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", "tb.sv", "--json", "--no-cache",
            "--aux", "d/x.hex"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["coverage"]["metrics"]["branch"] == {"covered": 2, "total": 2}
    assert not any("not in the simulation directory" in n for n in out["notes"])


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_localparam_file_name_reads_the_aux_file(tmp_path: Path, capsys, monkeypatch):
    """``$readmemh(HEX, m)`` with ``localparam HEX = "x.hex"``: the static check takes the
    constant's literal, and the file (0 then 1 for sel) reaches both branches of mux2."""
    from llm4cov.cli.app import main

    (tmp_path / "tb.sv").write_text(
        "module tb; localparam HEX = \"x.hex\";\n"
        "  logic sel, en = 1; logic [1:0] a = 1, b = 2, y; logic [7:0] m [0:1];\n"
        "  mux2 dut (.*);\n"
        "  initial begin $readmemh(HEX, m);\n"
        "    sel = m[0][0]; #1; sel = m[1][0]; #1; $finish; end\nendmodule\n")
    (tmp_path / "x.hex").write_text("00\n01\n")
    monkeypatch.chdir(tmp_path)
    args = ["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", "tb.sv", "--json", "--no-cache",
            "--aux", "x.hex"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["coverage"]["metrics"]["branch"] == {"covered": 2, "total": 2}
