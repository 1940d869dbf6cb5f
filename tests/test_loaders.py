"""Task loaders: RTL directories (top detection) and task JSONL files."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, shared_path
from llm4cov.tasks.loaders import load_tasks, task_from_dir
from llm4cov.tasks.model import TaskError


def test_directory_top_detection_and_spec():
    task = task_from_dir(EXAMPLES / "hier_acc")
    assert task.dut_module_name == "acc_top"
    assert [f.name for f in task.rtl_files] == ["acc_top.sv", "sat_add.sv"]
    assert [f.name for f in task.spec_files] == ["spec.md"]
    assert "`acc_top` with the instance name `dut`" in task.instruction


def test_ambiguous_top_needs_top_option(tmp_path):
    (tmp_path / "a.v").write_text("module a; endmodule\nmodule b; endmodule\n")
    with pytest.raises(TaskError, match=r"several top-level modules \(a, b\); choose one"):
        task_from_dir(tmp_path)
    assert task_from_dir(tmp_path, top="b").dut_module_name == "b"
    with pytest.raises(TaskError, match="module 'c' is not declared"):
        task_from_dir(tmp_path, top="c")


def test_benchmark_jsonl():
    tasks = load_tasks(shared_path("benchmarks", "rtllm.jsonl"))
    assert len(tasks) == 50
    accu = load_tasks(shared_path("benchmarks", "rtllm.jsonl"), ["rtllm/accu"])[0]
    assert (accu.dut_module_name, accu.dut_instance_name, accu.target_for()) == ("accu", "dut", 76)
    with pytest.raises(TaskError, match="no task with id rtllm/nope"):
        load_tasks(shared_path("benchmarks", "rtllm.jsonl"), ["rtllm/nope"])


def test_invalid_jsonl_line_is_named(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(TaskError, match=r"t\.jsonl:1: not a valid task"):
        load_tasks(bad)


def test_directory_loader_build_options():
    from conftest import FIXTURES

    task = task_from_dir(FIXTURES / "real_inputs_nested_include", include_dirs=["include"],
                         defines={"CC_EXTRA": "1"})
    assert task.include_dirs == ["include"]
    assert (task.defines, task.parameters, task.compile_files) == ({"CC_EXTRA": "1"}, {}, [])
    with pytest.raises(TaskError, match="override P: not a parameter of module 'cc_counter' "
                                        r"\(overridable: none\)"):
        task_from_dir(FIXTURES / "real_inputs_nested_include", include_dirs=["include"],
                      parameters={"P": "2"})


def test_directory_loader_with_a_filelist_keeps_its_order():
    from conftest import FIXTURES

    uart = FIXTURES / "real_inputs_verilog_uart"
    task = task_from_dir(uart, filelist=uart / "uart.f")
    assert task.compile_files == ["rtl/uart.v", "rtl/uart_tx.v", "rtl/uart_rx.v"]
    assert task.parameters == {"DATA_WIDTH": "8"}
    assert [f.name for f in task.spec_files] == ["SOURCE.md"]


def test_link_to_a_file_outside_the_repository_is_refused(tmp_path, caplog):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / "top.sv").write_text("module top; endmodule\n")
    (outside / "secret.txt").write_text("SECRET\n")
    (repo / "inc.vh").symlink_to(outside / "secret.txt")
    (repo / "notes.md").symlink_to(outside / "secret.txt")
    task = task_from_dir(repo)
    assert [f.name for f in task.rtl_files] == ["top.sv"]
    assert task.spec_files == []
    why = (f"inc.vh is a symbolic link to a file outside {repo}: not loaded (links out of "
           "the repository are refused; copy the file in)")
    assert why in task.meta["notes"] and why in caplog.text


def test_link_inside_the_repository_is_read_as_its_target(tmp_path):
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "top.sv").write_text("module top; endmodule\n")
    (tmp_path / "top_link.sv").symlink_to(tmp_path / "rtl" / "top.sv")
    (tmp_path / "ext").symlink_to("/usr", target_is_directory=True)  # not followed
    task = task_from_dir(tmp_path)
    assert {f.name: f.content for f in task.rtl_files} == {
        "rtl/top.sv": "module top; endmodule\n", "top_link.sv": "module top; endmodule\n"}


def test_file_names_that_look_like_tool_options_load_unchanged(tmp_path):
    (tmp_path / "-o.sv").write_text("module top; endmodule\n")
    (tmp_path / "+define+EVIL=1.sv").write_text("module helper; endmodule\n")
    task = task_from_dir(tmp_path, top="top")
    assert [f.name for f in task.rtl_files] == ["+define+EVIL=1.sv", "-o.sv"]


def test_files_over_the_size_bounds_are_refused_unread(tmp_path):
    """A sparse all-NUL file costs no disk but was read whole, and copied, into this
    process (200 MB -> 2.66 GB): one file may have 16 MiB, a task's files 64 MiB
    together; both are refused before reading, with the path named."""
    from llm4cov.sim.analysis.hints import aux_files
    from llm4cov.tasks.model import SourceFile
    from llm4cov.tasks.reading import MAX_FILE_BYTES, MAX_REPO_BYTES

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.v").write_text("module a; endmodule\n")
    with (repo / "big.v").open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(TaskError, match=r"big\.v: over 16 MiB, the size a source file may"):
        task_from_dir(repo)
    (repo / "big.v").unlink()
    for i in range(MAX_REPO_BYTES // MAX_FILE_BYTES + 1):
        with (repo / f"notes{i}.md").open("wb") as f:
            f.truncate(MAX_FILE_BYTES)
    with pytest.raises(TaskError, match=r"repo: the files to read have 80 MiB together"):
        task_from_dir(repo)
    aux = tmp_path / "rom.hex"
    with aux.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(TaskError, match=r"rom\.hex: over 16 MiB"):
        aux_files([aux], tmp_path / "tb.sv",
                  SourceFile(name="tb.sv", content="module tb; endmodule\n"))
