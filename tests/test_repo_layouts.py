"""Real repository layouts (issue 23, item 6): test folders and testbench files left
out of a folder walk (and said so), RTL files named one by one, include dirs outside the
RTL directory, Bender manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from llm4cov.cli.app import main
from llm4cov.tasks.bender import matches, parse_manifest
from llm4cov.tasks.layout import Exclusions
from llm4cov.tasks.loaders import task_from_dir, task_from_paths
from llm4cov.tasks.model import TaskError

CC = FIXTURES / "common_cells_like"
LEFT_OUT = ("left out as verification code, not RTL: test/ (1 file) (--exclude-dir GLOB "
            "leaves out more; --no-default-excludes keeps them)")
DUT = "module dut(input logic clk, input logic a, output logic y);\n" \
      "  always_ff @(posedge clk) y <= a;\nendmodule\n"
BENCH = "module dut_tb;\n  logic clk, a, y;\n  dut u (.clk(clk), .a(a), .y(y));\nendmodule\n"


def names(task) -> list[str]:
    return [f.name for f in task.rtl_files]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


# -- folder walks: what is left out -----------------------------------------------------

def test_test_folder_is_left_out_of_the_walk_and_named_in_a_note():
    task = task_from_dir(CC)
    assert task.dut_module_name == "cc_fifo_like"  # before: the test/ bench was the top
    assert names(task) == ["include/common_cells/registers.svh", "src/cc_fifo_like.sv",
                           "src/cc_like_pkg.sv"]
    assert task.meta["notes"][0] == LEFT_OUT
    kept = task_from_dir(CC, top="cc_fifo_like", exclude=Exclusions(defaults=False))
    assert "test/cc_fifo_like_tb.sv" in names(kept)
    assert not any(n.startswith("left out") for n in kept.meta["notes"])


def test_a_portless_module_instantiating_the_design_is_a_testbench(tmp_path: Path):
    write(tmp_path, {"dut.sv": DUT, "dut_tb.sv": BENCH,
                     "lonely.sv": "module lonely;\nendmodule\n"})  # instantiates nothing
    with pytest.raises(TaskError, match=r"several top-level modules \(dut, lonely\)"):
        task_from_dir(tmp_path)
    task = task_from_dir(tmp_path, top="dut")
    assert names(task) == ["dut.sv", "lonely.sv"]
    assert task.meta["notes"][0].startswith(
        "left out as verification code, not RTL: dut_tb.sv (module dut_tb: no ports, "
        "instantiates the design)")
    assert "dut_tb.sv" in names(task_from_dir(tmp_path, top="dut_tb"))  # named: kept


def test_exclude_dir_globs_match_folder_names_paths_and_files(tmp_path: Path):
    write(tmp_path, {"src/dut.sv": DUT, "vendor/v.sv": "module v(input a); endmodule\n",
                     "src/deprecated/old.sv": "module old(input a); endmodule\n",
                     "src/dut_v1.sv": "module dut_v1(input a); endmodule\n"})
    task = task_from_dir(tmp_path, exclude=Exclusions(("vendor", "src/dep*", "*_v1.sv")))
    assert names(task) == ["src/dut.sv"]
    assert task.meta["notes"][0].startswith(
        "left out as verification code, not RTL: src/deprecated/ (1 file), src/dut_v1.sv, "
        "vendor/ (1 file)")


@pytest.mark.parametrize(("rel", "why"), [
    ("ip/TB/x.sv", "ip/TB/"), ("a/verification/env/x.sv", "a/verification/"),
    ("sim/x.sv", "sim/"), ("simple/x.sv", None), ("src/test_mux.sv", None),
    ("src/latest/x.sv", None),
])
def test_default_exclusions_match_whole_folder_names(rel: str, why: str | None):
    from pathlib import PurePosixPath

    assert Exclusions().excluded(PurePosixPath(rel)) == why
    assert Exclusions(defaults=False).excluded(PurePosixPath(rel)) is None


# -- RTL files named one by one ---------------------------------------------------------

def test_single_rtl_file_and_several_in_their_order(tmp_path: Path):
    write(tmp_path, {"a/dut.sv": '`include "defs.svh"\n' + DUT, "a/defs.svh": "`define X 1\n",
                     "a/unused.sv": "module unused(input a); endmodule\n",
                     "b/leaf.sv": "module leaf(input a); endmodule\n", "a/notes.md": "x"})
    one = task_from_paths([tmp_path / "a" / "dut.sv"])  # before: "not a directory"
    assert (one.dut_module_name, names(one), one.compile_files) == (
        "dut", ["dut.sv", "defs.svh"], ["dut.sv"])
    assert one.spec_files == []
    two = task_from_paths([tmp_path / "b" / "leaf.sv", tmp_path / "a" / "dut.sv"], top="dut")
    assert two.compile_files == ["b/leaf.sv", "a/dut.sv"]
    with pytest.raises(TaskError, match="not an RTL file"):
        task_from_paths([tmp_path / "a" / "notes.md"])
    with pytest.raises(TaskError, match="one RTL directory or RTL files, not both"):
        task_from_paths([tmp_path / "a", tmp_path / "b" / "leaf.sv"])


# -- include dirs outside the RTL directory ---------------------------------------------

def test_include_dir_outside_the_rtl_dir_is_read_for_includes_only(tmp_path: Path):
    task = task_from_dir(CC / "src", include_dirs=["../include"])  # before: refused
    assert names(task) == ["src/cc_fifo_like.sv", "src/cc_like_pkg.sv",
                           "include/common_cells/registers.svh"]
    assert task.include_dirs == ["include"]
    assert task.compile_files == ["src/cc_fifo_like.sv", "src/cc_like_pkg.sv"]

    write(tmp_path, {"rtl/top.sv": '`include "h.svh"\nmodule top(input a); endmodule\n',
                     "inc/h.svh": "`define H 1\n", "inc/extra.sv": "module extra; endmodule\n",
                     "secret/s.svh": "SECRET\n"})
    task = task_from_dir(tmp_path / "rtl", include_dirs=[tmp_path / "inc"])
    assert names(task) == ["rtl/top.sv", "inc/h.svh"]  # inc/extra.sv: not included
    (tmp_path / "inc" / "h.svh").unlink()
    (tmp_path / "inc" / "h.svh").symlink_to(tmp_path / "secret" / "s.svh")
    with pytest.raises(TaskError, match=r"included file .* lies outside"):
        task_from_dir(tmp_path / "rtl", include_dirs=["../inc"])
    with pytest.raises(TaskError, match=r"include dir \.\./nowhere: no such directory"):
        task_from_dir(tmp_path / "rtl", include_dirs=["../nowhere"])


# -- Bender manifests -------------------------------------------------------------------

def test_bender_manifest_of_the_fixture():
    task = task_from_dir(CC, filelist=CC / "Bender.yml")
    assert task.compile_files == ["src/cc_like_pkg.sv", "src/cc_fifo_like.sv"]
    assert task.include_dirs == ["include"]
    assert ("Bender.yml: dependencies not fetched (their modules are missing unless the "
            "folder has them): common_verification") in task.meta["notes"]
    with_tests = task_from_dir(CC, top="cc_fifo_like", filelist=CC / "Bender.yml",
                               targets=["test"])
    assert with_tests.compile_files[-1] == "test/cc_fifo_like_tb.sv"
    with pytest.raises(TaskError, match="--target applies to a Bender manifest"):
        task_from_dir(CC, targets=["test"])


def test_bender_groups_nest_with_defines_globs_and_targets(tmp_path: Path):
    write(tmp_path, {"src/a.sv": "", "src/b.sv": "", "src/c.vhd": "", "fpga/x.sv": "",
                     "Bender.yml": """
sources:
  - include_dirs: [inc]
    defines: {WIDTH: 8, FLAG: ~, FAST: true}
    files:
      - src/*.sv
      - target: any(fpga, xilinx)
        files: [fpga/x.sv]
      - target: all(simulation, not(synthesis))
        files: [src/c.vhd]
  - target: test
    files: [tb/t.sv]
vendor_package: []
"""})
    fl, notes = parse_manifest(tmp_path / "Bender.yml")
    assert [p.relative_to(tmp_path).as_posix() for p in fl.sources] == ["src/a.sv", "src/b.sv"]
    assert fl.include_dirs == [(tmp_path / "inc").resolve()]
    assert fl.defines == {"WIDTH": "8", "FLAG": "", "FAST": "1"}
    assert notes == ["Bender.yml: VHDL file src/c.vhd left out",
                     "Bender.yml: keys not supported, ignored: vendor_package"]
    fl, _ = parse_manifest(tmp_path / "Bender.yml", targets=["FPGA"])
    assert fl.sources[-1] == (tmp_path / "fpga" / "x.sv").resolve()


@pytest.mark.parametrize(("expression", "expected"), [
    ("*", True), ("simulation", True), ("SYNTHESIS", False), ("not(synthesis)", True),
    ("all(simulation, verilator)", True), ("all(simulation, fpga)", False),
    ("any(fpga, (verilator))", True), ("not(all(xilinx,vivado_ipx))", True),
])
def test_bender_target_expressions(expression: str, expected: bool):
    assert matches(expression, {"simulation", "verilator"}) is expected


@pytest.mark.parametrize("bad", ["all(a,", "not(a, b)", "a b", "a;b", ")"])
def test_bad_bender_target_expressions_are_errors(bad: str):
    with pytest.raises(TaskError, match="target expression"):
        matches(bad, set())


# -- the CLI ----------------------------------------------------------------------------

def test_cli_refuses_layout_options_with_tasks(tmp_path: Path, capsys):
    code = main(["sim", "--tasks", str(tmp_path / "t.jsonl"), "--id", "x", "--tb",
                 str(tmp_path / "tb.sv"), "--exclude-dir", "vendor"])
    assert code == 2
    assert "--exclude-dir/--target apply to an RTL directory" in capsys.readouterr().err


@pytest.mark.requires_verilator
@pytest.mark.parametrize("layout", [[str(CC)], [str(CC / "src"), "--incdir", "../include"]])
@pytest.mark.heavy
def test_gen_runs_on_the_common_cells_layout_without_a_filelist(tmp_path: Path, capsys,
                                                                  layout: list[str]):
    code = main(["gen", *layout, "--top", "cc_fifo_like", "--out", str(tmp_path / "out"),
                 "--rounds", "1", "--no-html"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "best: round 1, success" in err
    assert (LEFT_OUT in err) is (len(layout) == 1)
