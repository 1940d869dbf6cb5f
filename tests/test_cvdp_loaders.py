"""CVDP loaders: raw CVDP JSONL (cid012) and CVDP-ECov, format detection.

Fixtures in tests/fixtures/cvdp/ follow the shape of NVIDIA's example_dataset records
(``id``, ``categories``, ``input.prompt``, ``input.context``, ``output.context``,
``harness.files``); ``cvdp_raw.jsonl`` holds two cid012 records and one cid003 record.
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES, shared_path
from llm4cov.tasks.cvdp import (
    TaskFormat,
    cvdp_raw_task,
    detect_format,
    iter_cvdp_ecov,
    iter_cvdp_raw,
    load_any_tasks,
    parse_env,
)
from llm4cov.tasks.model import TaskError

RAW = FIXTURES / "cvdp" / "cvdp_raw.jsonl"
ECOV = FIXTURES / "cvdp" / "cvdp_ecov.jsonl"


def _raw_records() -> list[dict]:
    return [json.loads(line) for line in RAW.read_text().splitlines()]


def test_raw_cid012_records_become_tasks_and_others_are_skipped():
    tasks = list(iter_cvdp_raw(RAW))
    assert [t.id for t in tasks] == ["cvdp/cvdp_copilot_counter8_0001",
                                     "cvdp/cvdp_copilot_inc_pair_0002"]
    counter, pair = tasks

    assert counter.source == "cvdp" and counter.difficulty == "easy"
    assert [f.name for f in counter.rtl_files] == ["counter8.sv"]
    assert counter.dut_module_name == "counter8"
    assert counter.dut_instance_name == "dut_c"  # "instantiated as `dut_c`" in the prompt
    assert [(t.inst_name, t.metric, t.target_percentage) for t in counter.targets] == [
        ("dut_c", "overall", 85.0)]
    # spec: the prompt plus the non-HDL context files; HDL context files are not spec
    assert [f.name for f in counter.spec_files] == ["prompt.md", "docs/counter8_spec.md"]
    assert counter.meta["target_source"] == "cvdp_official"
    assert counter.meta["upstream_id"] == "cvdp_copilot_counter8_0001"

    assert pair.difficulty == "medium"
    assert [f.name for f in pair.rtl_files] == ["inc_pair.sv", "sat_inc.sv"]
    assert pair.dut_module_name == "inc_pair"
    assert pair.dut_instance_name == "u_top"  # only the reference testbench names it
    assert pair.target_for() == 92.5


def test_reference_testbench_is_kept_hidden_from_the_model():
    counter = next(iter_cvdp_raw(RAW))
    assert counter.reference_tb is not None
    assert counter.reference_tb.name == "counter8_tb.sv"
    assert "counter8 dut_c" in counter.reference_tb.content
    shown = counter.instruction + "".join(f.content for f in counter.spec_files + counter.rtl_files)
    assert "counter8_tb" not in shown and "repeat (300)" not in shown
    assert "cvdp_raw" not in counter.meta


def test_instance_from_the_harness_check_when_the_prompt_has_none():
    record = copy.deepcopy(_raw_records()[0])
    record["input"]["prompt"] = "Write a testbench for counter8, instantiated as a submodule."
    record["output"]["context"] = {}
    task = cvdp_raw_task(record)
    assert task.dut_instance_name == "dut_c"  # metrics ["dut_c"]["Average"] in process.py
    assert task.reference_tb is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r["harness"]["files"].pop("src/.env"), "TARGET"),
        (lambda r: r["harness"]["files"].update({"src/.env": "TARGET = high"}), "TARGET"),
        (lambda r: r["harness"]["files"].pop("src/counter8.sv"), r"no src/\*\.sv"),
        (lambda r: r.update(categories=["cid003", "easy"]), "cid012"),
        (lambda r: r.pop("harness"), "not a raw CVDP record"),
    ],
)
def test_unusable_raw_records_raise_task_error(mutate, message):
    record = copy.deepcopy(_raw_records()[0])
    mutate(record)
    with pytest.raises(TaskError, match=message):
        cvdp_raw_task(record)


def test_no_instance_anywhere_raises():
    record = copy.deepcopy(_raw_records()[2])  # inc_pair: instance only in the reference
    record["output"]["context"] = {}
    with pytest.raises(TaskError, match="instance name"):
        cvdp_raw_task(record)


def test_parse_env():
    assert parse_env("HASH   = 6eab\nTARGET = 90") == {"HASH": "6eab", "TARGET": "90"}


def test_the_real_cvdp_example_matches_the_shared_task():
    """The one real raw record (kept in meta.cvdp_raw of the shared example) converts to
    the same repository, instance, target and reference as the shared task."""
    path = shared_path("benchmarks", "cvdp_example.jsonl")
    shared = json.loads(path.read_text().splitlines()[0])
    task = cvdp_raw_task(shared["meta"]["cvdp_raw"])
    assert task.id == shared["id"] == "cvdp/cvdp_copilot_gf_multiplier_0039"
    assert task.dut_module_name == "gf_multiplier"
    assert task.dut_instance_name == "uut"
    assert task.target_for() == 90.0
    assert task.difficulty == "easy"
    assert [f.model_dump() for f in task.rtl_files] == shared["rtl_files"]
    assert [f.model_dump() for f in task.spec_files] == shared["spec_files"]
    assert task.reference_tb.model_dump() == shared["reference_tb"]
    assert task.instruction == shared["instruction"]


def test_cvdp_ecov_records():
    (task,) = iter_cvdp_ecov(ECOV)
    assert task.id == "cvdp/cvdp_copilot_counter8_0001"
    assert task.source == "cvdp"
    assert task.dut_instance_name == "dut_c"
    assert task.instruction.startswith("Generate a SystemVerilog testbench")
    assert task.target_for() == 85.0
    assert task.difficulty == "easy" and task.is_agentic is False
    assert task.reference_tb is None
    assert task.meta["target_source"] == "cvdp_official"


def test_cvdp_ecov_missing_field(tmp_path):
    record = json.loads(ECOV.read_text())
    del record["dut_instance_name"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record) + "\n")
    with pytest.raises(TaskError, match=r"bad.jsonl:1: .*dut_instance_name"):
        list(iter_cvdp_ecov(bad))


def test_load_any_tasks_detects_each_format(tmp_path):
    assert [t.id for t in load_any_tasks(RAW)] == [
        "cvdp/cvdp_copilot_counter8_0001", "cvdp/cvdp_copilot_inc_pair_0002"]
    assert [t.id for t in load_any_tasks(ECOV)] == ["cvdp/cvdp_copilot_counter8_0001"]
    ours = tmp_path / "tasks.jsonl"
    ours.write_text(next(iter_cvdp_raw(RAW)).model_dump_json() + "\n")
    (task,) = load_any_tasks(ours)
    assert task.reference_tb is not None and task.dut_instance_name == "dut_c"
    assert detect_format(json.loads(ours.read_text())) is TaskFormat.TASKS

    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(TaskError, match="no records"):
        load_any_tasks(tmp_path / "empty.jsonl")
    (tmp_path / "other.jsonl").write_text('{"question": "?"}\n')
    with pytest.raises(TaskError, match="unknown task format"):
        load_any_tasks(tmp_path / "other.jsonl")
