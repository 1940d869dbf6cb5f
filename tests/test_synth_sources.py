"""Training repos from task JSONL, raw CVDP, CodeV-R1-style JSONL and RTL directories,
with top-module detection and per-reason skips."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from conftest import EXAMPLES, shared_path
from llm4cov.synth.launch import RepoSource
from llm4cov.synth.sources import iter_repos, rtl_from_answer

ONE = "module inv(input a, output y); assign y = ~a; endmodule"
TWO_TOPS = ("module alpha(input a, output y); assign y = a; endmodule\n"
            "module beta(input a, output y); assign y = ~a; endmodule")


def _write_jsonl(path, lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n"
                            for ln in lines))
    return path


def test_codev_records_and_skip_reasons(tmp_path):
    path = _write_jsonl(tmp_path / "codev.jsonl", [
        {"problem_id": 1, "question": "An inverter.",
         "reference": f"<think>a module?</think>\n```verilog\n{ONE}\n```"},
        {"problem_id": 2, "question": "Design module `beta`, an inverter.", "answer": TWO_TOPS},
        {"problem_id": 3, "question": "Two modules.", "answer": TWO_TOPS},
        {"problem_id": 4, "question": "Nothing.", "answer": "no code here"},
        {"question": "no id", "answer": ONE},
        "{not json",
        {"problem_id": 1, "question": "again", "answer": ONE},
    ])
    items = list(iter_repos(path))
    assert [(i.repo_id, i.reason) for i in items] == [
        ("codev/1", ""), ("codev/2", ""), ("codev/3", "ambiguous_top"), ("codev/4", "no_rtl"),
        ("codev.jsonl:5", "invalid_record"), ("codev.jsonl:6", "invalid_record"),
        ("codev/1#2", "duplicate_id"),
    ]
    first, second = items[0].task, items[1].task
    assert first.dut_module_name == "inv" and first.rtl_files[0].name == "inv.v"
    assert first.rtl_files[0].content.strip() == ONE
    assert first.spec_files[0].content == "An inverter."
    assert second.dut_module_name == "beta"


def test_skip_and_limit_split_one_file_into_disjoint_stages(tmp_path):
    path = _write_jsonl(tmp_path / "codev.jsonl", [
        {"problem_id": n, "question": "An inverter.", "answer": ONE} for n in range(1, 8)])
    first, rest = RepoSource(path, limit=3), RepoSource(path, skip=3)
    assert [i.repo_id for i in first.items()] == ["codev/1", "codev/2", "codev/3"]
    assert [i.repo_id for i in rest.items()] == [f"codev/{n}" for n in range(4, 8)]
    assert (first.count(), rest.count()) == (3, 4)
    middle = RepoSource(path, limit=2, skip=5)
    assert ([i.repo_id for i in middle.items()], middle.count()) == (["codev/6", "codev/7"], 2)
    past_the_end = RepoSource(path, limit=2, skip=9)
    assert (list(past_the_end.items()), past_the_end.count()) == ([], 0)


def test_rtl_from_unfenced_answer():
    assert rtl_from_answer(f"Here it is:\n{ONE}\nDone.") == ONE + "\n"


def test_task_jsonl_and_dut_check(tmp_path):
    rtllm = list(iter_repos(shared_path("benchmarks", "rtllm.jsonl")))
    assert len(rtllm) == 50 and all(i.task is not None for i in rtllm)
    row = json.loads(shared_path("benchmarks", "rtllm.jsonl").read_text().splitlines()[0])
    row["dut_module_name"] = "not_there"
    items = list(iter_repos(_write_jsonl(tmp_path / "t.jsonl", [row])))
    assert [(i.repo_id, i.reason) for i in items] == [("rtllm/accu", "dut_not_declared")]


def test_raw_cvdp_records(tmp_path):
    example = json.loads(shared_path("benchmarks", "cvdp_example.jsonl").read_text())
    raw = example["meta"]["cvdp_raw"]
    other = dict(raw, id="cvdp_other_0001", categories=["cid003", "easy"])
    items = list(iter_repos(_write_jsonl(tmp_path / "raw.jsonl", [raw, other])))
    assert items[0].task.id == "cvdp/cvdp_copilot_gf_multiplier_0039"
    assert items[0].task.dut_module_name == "gf_multiplier"
    assert (items[1].repo_id, items[1].reason) == ("cvdp_other_0001", "not_cid012")


def test_directory_of_repos(tmp_path):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "inv.v").write_text(ONE)
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "ab.v").write_text(TWO_TOPS)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "readme.md").write_text("no RTL here")
    items = list(iter_repos(tmp_path))
    assert [(i.repo_id, i.reason) for i in items] == [("dir/good", ""), ("dir/two", "invalid_repo")]
    assert "several top-level modules" in items[1].detail
    examples = Counter(bool(i.task) for i in iter_repos(EXAMPLES))
    assert examples == {True: 4}


def test_format_must_fit_the_path(tmp_path):
    with pytest.raises(ValueError, match="does not fit a directory"):
        iter_repos(tmp_path, "codev")
    with pytest.raises(FileNotFoundError):
        iter_repos(tmp_path / "missing.jsonl")


def test_cvdp_ecov_records(tmp_path):
    """A CVDP-ECov record has rtl_files and dut_instance_name but no source field."""
    row = json.loads(shared_path("benchmarks", "cvdp_example.jsonl").read_text())
    ecov = {k: row[k] for k in ("id", "spec_files", "rtl_files", "dut_module_name",
                                "dut_instance_name", "instruction", "targets", "difficulty",
                                "is_agentic")}
    ecov["id"] = "cvdp_copilot_gf_multiplier_0039"
    items = list(iter_repos(_write_jsonl(tmp_path / "ecov.jsonl", [ecov])))
    assert [(i.repo_id, i.reason) for i in items] == [("cvdp/cvdp_copilot_gf_multiplier_0039",
                                                       "")]
    assert items[0].task.meta["target_source"] == "cvdp_official"
