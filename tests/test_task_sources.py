"""The task source registry (issue 43): one set of formats for bench and synth; a new
source is one module plus one registration, and both commands read it."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import EXAMPLES
from llm4cov.bench.config import BenchConfig
from llm4cov.bench.session import select_tasks
from llm4cov.cli.app import main
from llm4cov.pipeline.config import PipelineConfigError, load_config
from llm4cov.synth.launch import RepoSource
from llm4cov.synth.sources import iter_repos
from llm4cov.tasks import sources
from llm4cov.tasks.model import SourceFile, Task, TaskError
from llm4cov.tasks.sources import (
    RecordSkip,
    TaskSource,
    format_names,
    load_any_tasks,
    register_source,
)

INV = "module inv(input a, output y); assign y = ~a; endmodule\n"


def mini_task(record: dict) -> Task:
    """A tiny format: ``{"mini": NAME, "verilog": TEXT}``, the DUT named ``NAME``."""
    if not record.get("verilog"):
        raise RecordSkip("no_rtl", "no verilog field", f"mini/{record['mini']}")
    return Task(id=f"mini/{record['mini']}", source="mini", dut_module_name=record["mini"],
                rtl_files=[SourceFile(name=f"{record['mini']}.v", content=record["verilog"])])


@pytest.fixture
def mini(monkeypatch):
    """The registry with the tiny ``mini`` source registered (the one line a new source
    needs), restored afterwards."""
    monkeypatch.setattr(sources, "_SOURCES", dict(sources._SOURCES))
    register_source("mini", TaskSource("mini", lambda r: "mini" in r, mini_task))


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_registered_source_is_read_by_bench_and_synth(mini, tmp_path):
    path = _jsonl(tmp_path / "mini.jsonl", [{"mini": "inv", "verilog": INV},
                                            {"mini": "gone", "verilog": ""}])
    assert "mini" in format_names()
    # synth: each record, a bad one as a skip reason; the format detected or given
    items = list(iter_repos(path))
    assert [(i.repo_id, i.reason) for i in items] == [("mini/inv", ""), ("mini/gone", "no_rtl")]
    assert items[0].task is not None and items[0].task.dut_module_name == "inv"
    assert [i.repo_id for i in RepoSource(path, "mini").items()] == ["mini/inv", "mini/gone"]
    # bench: the whole file, a bad record an error naming its line
    with pytest.raises(TaskError, match=r"mini.jsonl:2: no_rtl: no verilog field"):
        load_any_tasks(path)
    _jsonl(path, [{"mini": "inv", "verilog": INV}])
    assert [t.id for t in select_tasks(BenchConfig(tasks=str(path)))] == ["mini/inv"]


def test_the_format_names_are_checked_by_synth_and_the_pipeline(mini, tmp_path, capsys):
    path = tmp_path / "p.yaml"
    base = {"out": "o", "init": "m", "repos": "r.jsonl", "bench": None}
    path.write_text(yaml.safe_dump({**base, "repos_format": "mini"}), encoding="utf-8")
    config = load_config(path)
    assert config.repos_format == "mini" and config.global_identity()["repos_format"] == "mini"
    path.write_text(yaml.safe_dump({**base, "repos_format": "minnie"}), encoding="utf-8")
    with pytest.raises(PipelineConfigError, match="unknown format 'minnie'; valid: auto, "
                                                  "codev, cvdp_raw, tasks, cvdp_ecov, dirs, mini"):
        load_config(path)
    assert main(["synth", "--stage", "0", "--repos-format", "minnie", "--print-config"]) == 2
    assert "unknown format 'minnie'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="format mini does not fit a directory"):
        iter_repos(tmp_path, "mini")


def test_bench_reads_every_format_synth_reads(tmp_path):
    """CodeV-R1-style JSONL and a directory of repo directories, which synth read and
    bench did not."""
    codev = _jsonl(tmp_path / "codev.jsonl", [
        {"problem_id": 7, "question": "An inverter.", "answer": f"```verilog\n{INV}```"}])
    (task,) = load_any_tasks(codev)
    assert (task.id, task.dut_module_name, task.source) == ("codev/7", "inv", "codev")
    assert [i.repo_id for i in iter_repos(codev)] == ["codev/7"]
    _jsonl(codev, [{"problem_id": 7, "answer": "no code"}])
    with pytest.raises(TaskError, match=r"codev.jsonl:1: no_rtl"):
        load_any_tasks(codev)

    tasks = load_any_tasks(EXAMPLES)
    assert [t.id for t in tasks] == [i.repo_id for i in iter_repos(EXAMPLES)]
    assert all(t.id.startswith("dir/") for t in tasks) and len(tasks) == 4

    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskError, match="no records"):
        load_any_tasks(tmp_path / "empty")
