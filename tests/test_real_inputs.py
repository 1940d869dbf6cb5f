"""Inputs of real projects: nested include dirs, macros, packages out of order,
filelists, parameter overrides, CVDP harness command lines (issue 13).

The fixtures under tests/fixtures/real_inputs_* are ours, except
real_inputs_verilog_uart (alexforencich/verilog-uart, MIT, see its SOURCE.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, fixture_task, shared_path
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.analysis.structure import TestbenchPlan as Plan
from llm4cov.sim.backends.verilator import repo_args
from llm4cov.sim.model.observation import Status
from llm4cov.tasks.cvdp import harness_build
from llm4cov.tasks.filelist import parse_args, parse_filelist
from llm4cov.tasks.hdl import compile_order, module_decls, search_dirs, task_ports
from llm4cov.tasks.loaders import filelist_root, load_tasks, task_from_dir
from llm4cov.tasks.model import SourceFile, Task, TaskError

FILELIST = FIXTURES / "real_inputs_filelist" / "sim" / "files.f"
UART = FIXTURES / "real_inputs_verilog_uart"


def filelist_task() -> Task:
    return task_from_dir(FILELIST.parent.parent, filelist=FILELIST)  # the list names ../


def uart_task() -> Task:
    return task_from_dir(UART, filelist=UART / "uart.f")


def widths(task: Task) -> dict[str, int]:
    return {p.name: p.width for p in task_ports(task)}


# -- structure detection sees what the compiler sees ------------------------------------

def test_realbench_macro_sized_ports_have_the_header_widths():
    """sd_defines.v: RAM_MEM_WIDTH 16, BD_WIDTH 5 (ACTEL branch); FIFO_RX_MEM_ADR_SIZE 4."""
    tasks = {t.id: t for t in load_tasks(shared_path("benchmarks", "realbench_dev.jsonl"))}
    bd = widths(tasks["realbench/sdc/sd_bd"])
    assert (bd["dat_in_m"], bd["free_bd"], bd["dat_out_s"]) == (16, 5, 16)
    master = widths(tasks["realbench/sdc/sd_data_master"])
    assert (master["dat_in_tx"], master["free_tx_bd"], master["cmd_arg"]) == (16, 5, 32)
    aes = widths(tasks["realbench/aes/aes_cipher_top"])
    assert (aes["key"], aes["text_in"], aes["ld"]) == (128, 128, 1)


def test_nested_include_dir_is_inferred_and_sizes_the_ports():
    task = fixture_task("real_inputs_nested_include")
    assert search_dirs(task.rtl_files)[0] == "include"
    assert task.dut_module_name == "cc_counter"
    assert widths(task)["count_o"] == 6  # `CC_WIDTH from include/common_cells/assertions.svh


def test_module_inside_ifdef_is_declared_only_with_the_define():
    rtl = [SourceFile(name="m.sv", content="`ifdef HAVE_M\nmodule m(input a); endmodule\n`endif\n")]
    assert module_decls(rtl) == []
    assert [d.name for d in module_decls(rtl, defines={"HAVE_M": ""})] == ["m"]


def test_port_lists_of_module_headers():
    rtl = [SourceFile(name="m.sv", content=(
        "module a(input x); endmodule\nmodule b(x); input x; endmodule\n"
        "module c(.*); endmodule\nmodule t(); endmodule\nmodule u; endmodule\n"))]
    assert {d.name: d.has_ports for d in module_decls(rtl)} == {
        "a": True, "b": True, "c": True, "t": False, "u": False}  # (.*): the extern's ports


def test_packages_compile_before_their_users():
    task = fixture_task("real_inputs_pkg_order")
    assert [f.name for f in task.rtl_files] == ["a_alu.sv", "z_alu_pkg.sv"]
    assert [f.name for f in compile_order(task.rtl_files)] == ["z_alu_pkg.sv", "a_alu.sv"]
    ports = {p.name: p for p in task_ports(task)}
    assert ports["operator_i"].type_text == "z_alu_pkg::alu_op_e"
    assert (ports["operator_i"].width, ports["operand_a_i"].width) == (2, 12)


def test_unpacked_array_ports_keep_their_dimensions():
    ports = {p.name: p for p in task_ports(fixture_task("real_inputs_unpacked"))}
    assert ports["a_i"].declaration() == "logic [7:0] a_i [0:1]"
    assert ports["max_o"].unpacked == ((0, 1),)


def test_parameter_overrides_size_the_ports():
    rtl = [SourceFile(name="w.sv",
                      content="module w #(parameter W = 4)(input [W-1:0] x); endmodule\n")]
    task = Task(id="t", rtl_files=rtl, dut_module_name="w", parameters={"W": "11"})
    assert widths(task) == {"x": 11}
    assert "#(.W(11))" in task.instruction


# -- filelists ------------------------------------------------------------------------

def test_filelist_options_and_relative_paths():
    fl = parse_filelist(FILELIST)
    root = FILELIST.parent.parent.resolve()
    assert fl.sources == [root / "rtl" / "fl_top.sv"]
    assert fl.include_dirs == [root / "inc"]
    assert fl.defines == {"FL_WIDTH": "5", "FL_HAS_PARITY": ""}
    assert (fl.library_dirs, fl.libext) == ([root / "lib"], [".v"])


def test_filelist_task_pulls_library_module_and_included_header():
    task = filelist_task()
    assert task.dut_module_name == "fl_top"
    assert task.compile_files == ["rtl/fl_top.sv", "lib/fl_leaf.v"]  # not lib/unused_leaf.v
    assert sorted(f.name for f in task.rtl_files) == [
        "inc/fl_defs.vh", "lib/fl_leaf.v", "rtl/fl_top.sv"]
    assert (task.include_dirs, task.defines) == (["inc"], {"FL_WIDTH": "5", "FL_HAS_PARITY": ""})
    assert widths(task)["data_in"] == 5


def test_filelist_tokens(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.f").write_text("b.sv // trailing comment\n")
    (tmp_path / "top.f").write_text(
        "/* block\ncomment */ -Iinc -DA=1 +define+B+C=x -GN=3 -pvalue+M=4\n"
        "--top-module ignored_value a.sv -F sub/inner.f -sv\n")
    fl = parse_filelist(tmp_path / "top.f")
    assert fl.sources == [tmp_path / "a.sv", tmp_path / "sub" / "b.sv"]
    assert fl.include_dirs == [tmp_path / "inc"]
    assert fl.defines == {"A": "1", "B": "", "C": "x"}
    assert fl.parameters == {"N": "3", "M": "4"}
    assert fl.ignored == ["--top-module", "ignored_value", "-sv"]
    with pytest.raises(TaskError, match="-y needs a value"):
        parse_args(["-y"], tmp_path)


@pytest.mark.parametrize("lists", [
    {"files.f": "top.sv\n../outside/secret.txt\n"},
    {"files.f": "-f sub.f\n+incdir+../outside\ntop.sv\n", "sub.f": "top.sv\n"},
    {"files.f": "-f ../outside/secret.txt\ntop.sv\n"},
    {"files.f": "-y ../outside top.sv\n"},
    {"files.f": "-v link.sv top.sv\n"},
])
def test_filelist_naming_anything_outside_its_folder_is_refused(tmp_path: Path, capsys, lists):
    """Without an RTL directory the root is the list's own folder; a file, nested list,
    -y/-v or include dir outside it (links resolved) stops the run before it is read."""
    from llm4cov.cli.app import main

    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET_pw123\n")
    (repo / "top.sv").write_text("module top; endmodule\n")
    (repo / "link.sv").symlink_to(outside / "secret.txt")
    for name, text in lists.items():
        (repo / name).write_text(text)
    assert filelist_root(repo / "files.f") == repo.resolve()
    code = main(["sim", "-f", str(repo / "files.f"), "--tb", str(repo / "top.sv")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"lies outside the repository root {repo.resolve()}" in err
    assert "SECRET_pw123" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(TaskError, match="lies outside the repository root"):
        task_from_dir(repo, filelist=repo / "files.f")


def test_filelist_with_a_missing_file_is_a_clear_error(tmp_path: Path):
    (tmp_path / "x.f").write_text("nothere.sv\n")
    with pytest.raises(TaskError, match="missing file"):
        task_from_dir(tmp_path, filelist=tmp_path / "x.f")


def test_task_include_dirs_must_lie_in_the_repository():
    """(An include dir outside the RTL directory that the user names is read for
    includes only: tests/test_repo_layouts.py.)"""
    with pytest.raises(ValueError, match="relative to the repository"):
        Task(id="t", rtl_files=[SourceFile(name="m.v", content="")], dut_module_name="m",
             include_dirs=["../x"])


# -- task JSONL, CVDP, Verilator arguments ---------------------------------------------

def test_task_fields_round_trip_and_reach_verilator():
    task = filelist_task().model_copy(update={"parameters": {"DEPTH": "4", "OTHER": "1"}})
    again = Task.model_validate_json(task.model_dump_json())
    assert again.build_settings() == task.build_settings()
    tb = SourceFile(name="tb.sv", content="module tb #(parameter DEPTH = 2); endmodule\n")
    args = repo_args(task, Plan("tb", "tb.dut").top_overrides(task.parameters, tb))
    assert args[:2] == ["-Iinc", "-I."]
    assert {"-DFL_WIDTH=5", "-DFL_HAS_PARITY", "-GDEPTH=4"} <= set(args)
    assert "-GOTHER=1" not in args  # the testbench top declares no OTHER parameter


def test_cvdp_harness_xrun_command_gives_the_build_fields():
    harness = {"src/process.py": 'cmd = "xrun -coverage all +incdir+/src/inc -define W=8 '
                                 '/src/b.sv /src/a.sv /code/verif/tb.sv -covtest test"'}
    build = harness_build(harness, {"a.sv", "b.sv", "inc/h.svh"})
    assert build == {"include_dirs": ["inc"], "defines": {"W": "8"}, "parameters": {},
                     "compile_files": ["b.sv", "a.sv"]}


# -- the acceptance designs simulate (random baseline, real Verilator) -----------------

@pytest.mark.requires_verilator
@pytest.mark.slow
@pytest.mark.parametrize("name", ["nested_include", "pkg_order", "filelist", "rst_ni",
                                  "first_port", "unpacked", "verilog_uart"])
def test_acceptance_designs_simulate_with_the_random_baseline(evaluator, name):
    task = {"filelist": filelist_task, "verilog_uart": uart_task}.get(
        name, lambda: fixture_task(f"real_inputs_{name}"))()
    obs = evaluator.evaluate(task, random_testbench(task, seed=1))
    assert obs.status is Status.SUCCESS, obs.log
    if name == "rst_ni":  # the reset is released: the FSM past the reset branch runs
        assert obs.coverage.overall > 80


def test_bad_build_fields_are_validation_errors():
    rtl = [SourceFile(name="a.v", content="module m; endmodule\n")]
    with pytest.raises(ValueError, match=r"compile_files not among rtl_files: b\.v"):
        Task(id="t", rtl_files=rtl, dut_module_name="m", compile_files=["b.v"])
    with pytest.raises(ValueError, match="not a SystemVerilog identifier: '1bad'"):
        Task(id="t", rtl_files=rtl, dut_module_name="m", defines={"1bad": ""})


def test_a_parameter_override_must_name_an_overridable_parameter(tmp_path: Path):
    """A simulator ignores an override of a parameter the DUT lacks (or of a
    localparam) without a word: the loader refuses it and names the valid ones."""
    (tmp_path / "w.sv").write_text(
        "module w #(parameter W = 8, localparam L = 2) (input [W-1:0] a);\n"
        "  parameter P = 3;  // local: the module has a parameter port list\n"
        "endmodule\n")
    assert task_from_dir(tmp_path, parameters={"W": "11"}).parameters == {"W": "11"}
    for name in ("X", "L", "P"):
        with pytest.raises(TaskError, match=rf"override {name}: not a parameter of module "
                                            r"'w' \(overridable: W\)"):
            task_from_dir(tmp_path, parameters={name: "1"})
