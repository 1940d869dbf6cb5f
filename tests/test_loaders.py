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
