"""One naming rule for every path written from a task id (``tasks.names.task_path_part``):
distinct ids give distinct names, never a name the tool writes itself, never ``.`` or
``..``, bounded in length; and ``bench --coverage-html`` writes each task's report into
its own folder below ``RUN/coverage/`` with ``links.json`` a file (issue 40)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llm4cov.cli.app import main
from llm4cov.report import bench_links
from llm4cov.tasks.model import safe_task_id
from llm4cov.tasks.names import task_path_part

#: Names the tool writes itself next to, or inside, a task's folder.
TOOL_NAMES = {"links.json", "index.html", "report.js", "coverage.dat", "run.json",
              "results.jsonl", "summary.json", "summary.md", "report.html", "plots", ".lock"}

HOSTILE = [
    "links.json", "index.html", "coverage.dat", "report.js", "plots", ".lock",
    ".", "..", "...", "/", "//", "a/b", "a_b", "a%2Fb", "a%252Fb", "a/../b", "../../etc",
    "/etc/passwd", "a/./b", "a\\b", "a:b", "a b", "a\nb", "-rf", "--out", "~", "$HOME",
    "Mux", "mux", "MUX", "local/mux2", "local_mux2",
    "x" * 300, "x" * 300 + "y", "x" * 64 + "/a", "x" * 64 + "/b",
    "ä", "%C3%A4", "",
]


def test_hostile_ids_get_distinct_safe_in_folder_names(tmp_path):
    ids = HOSTILE + [safe_task_id(i) for i in HOSTILE if 0 < len(i) <= 200]
    ids = list(dict.fromkeys(ids))
    names = {i: task_path_part(i) for i in ids}
    # distinct ids, distinct names, also where case does not count (macOS, Windows)
    assert len({n.casefold() for n in names.values()}) == len(ids)
    root = tmp_path / "coverage"
    root.mkdir()
    for task_id, name in names.items():
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}-[0-9a-f]{16}", name), (task_id, name)
        assert name not in {"", ".", ".."} and name not in TOOL_NAMES
        assert len(name.encode()) <= 81
        folder = root / name
        assert folder.resolve().parent == root.resolve()
        folder.mkdir()
    assert len(list(root.iterdir())) == len(ids)
    assert names["local/mux2"] == "local_mux2-ae65c64c44aef565"  # readable, stable
    assert task_path_part("a/b") != task_path_part("a_b") != task_path_part("a%2Fb")


def test_names_are_stable_and_depend_on_the_exact_id():
    assert task_path_part("links.json") == "links_json-55f0aa5efc45d7f7"
    assert task_path_part("..") == "_-5ec1f7e700f37c3d"
    assert task_path_part("a/b") == "a_b-c14cddc033f64b9d"
    assert task_path_part("a_b") == "a_b-648fa9b31bc7ff7e"
    assert task_path_part("x" * 300).startswith("x" * 64 + "-")


def test_a_shared_folder_is_refused_before_any_simulation(monkeypatch):
    monkeypatch.setattr(bench_links, "task_path_part", lambda task_id: task_id.upper())
    with pytest.raises(ValueError, match="share the report folder"):
        bench_links._folders(["a", "A"])
    assert bench_links._folders(["a", "b"]) == {"a": Path("coverage/A"), "b": Path("coverage/B")}


#: The ids of the end-to-end bench, and where each task's report goes.
E2E = {
    "links.json": "coverage/links_json-55f0aa5efc45d7f7/index.html",
    "..": "coverage/_-5ec1f7e700f37c3d/index.html",
    "a/b": "coverage/a_b-c14cddc033f64b9d/index.html",
    "a_b": "coverage/a_b-648fa9b31bc7ff7e/index.html",
}


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_bench_coverage_html_writes_one_folder_per_hostile_id(tmp_path):
    """A real bench (mux2, random model, direct, 1 sample) of four tasks whose ids were
    once output paths: ``links.json`` (made the links file a folder: exit 2 on every
    rerun), ``..`` (wrote into RUN/), ``a/b`` and ``a_b`` (shared a folder). The run dir
    holds the old layout's ``coverage/links.json/`` folder, which the rerun replaces."""
    from conftest import fixture_task

    mux2 = fixture_task("mux2")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(mux2.model_copy(update={"id": i}).model_dump_json() + "\n"
                             for i in E2E))
    out = tmp_path / "out"
    (out / "coverage" / "links.json").mkdir(parents=True)
    (out / "coverage" / "links.json" / "index.html").write_text("old layout")
    assert main(["bench", "--tasks", str(tasks), "--model", "random", "--mode", "direct",
                 "--samples", "1", "--baselines", "", "--out", str(out), "--workers", "1",
                 "--no-plots", "--no-progress", "--coverage-html"]) == 0
    links = out / "coverage" / "links.json"
    assert links.is_file()
    assert json.loads(links.read_text()) == E2E
    assert sorted(p.name for p in (out / "coverage").iterdir()) == sorted(
        ["links.json", *(path.split("/")[1] for path in E2E.values())])
    for task_id, path in E2E.items():
        page = (out / path).read_text()
        assert f"Coverage: {task_id}," in page
        assert (out / path).parent.joinpath("coverage.dat").is_file()
    assert not (out / "index.html").exists() and not (out / "coverage.dat").exists()
