"""Annotated coverage reports of each task's best testbench in a bench run.

``llm4cov bench --coverage-html`` picks, per task, the best model-written row of
``results.jsonl`` (Sim Pass, then Cov Pass, then coverage; the earliest on ties),
recovers its testbench from the stored response (the same extraction the agent used,
checked against the row's ``testbench_sha256``), simulates it once more (the evaluator
is deterministic) and writes ``RUN/coverage/<name>/index.html``, ``<name>`` the task id's
folder name (:func:`llm4cov.tasks.names.task_path_part`: ``local/mux2`` ->
``local_mux2-<16 hex digits>``; never ``links.json``, ``.`` or ``..``, one per id).
``RUN/coverage/links.json`` maps task ids to those pages; the bench HTML report
(``report.html``) links them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from llm4cov.agent.response import extract_testbench
from llm4cov.bench.rows import sha256
from llm4cov.report.capture import capture
from llm4cov.report.data import build_report_data
from llm4cov.report.html import write_html
from llm4cov.sim.config import SimConfig
from llm4cov.sim.model.exclusions import parse_rules
from llm4cov.tasks.model import Task
from llm4cov.tasks.names import task_path_part

LINKS_FILE = "coverage/links.json"


def best_rows(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task id, its best row with a model response and a testbench."""
    best: dict[str, dict[str, Any]] = {}
    for row in rows:
        if not row.get("response") or not row.get("testbench_sha256"):
            continue
        key = (bool(row["sim_pass"]), bool(row["cov_pass"]), float(row["coverage"]))
        held = best.get(row["task_id"])
        if held is None or key > (bool(held["sim_pass"]), bool(held["cov_pass"]),
                                  float(held["coverage"])):
            best[row["task_id"]] = row
    return best


def write_task_reports(
    run_dir: Path, tasks: Sequence[Task], rows: Iterable[dict[str, Any]], config: SimConfig
) -> dict[str, str]:
    """Write one HTML report per task (its best row's testbench) and ``links.json``;
    returns ``{task id: path relative to run_dir}``. A ``links.json`` folder left by
    an older version (the report of a task with that id) is replaced by the file.

    Raises:
        ToolchainError: the simulator toolchain is missing.
        ValueError: two ids got one folder name (:func:`_folders`), before any
            simulation.
    """
    by_id = {t.id: t for t in tasks}
    chosen = []
    for task_id, row in sorted(best_rows(rows).items()):
        task = by_id.get(task_id)
        testbench = extract_testbench(row["response"], task.dut_module_name) if task else None
        if task is not None and testbench is not None and \
                sha256(testbench) == row["testbench_sha256"]:
            chosen.append((task, testbench, row))
    folders = _folders([task.id for task, _, _ in chosen])
    links: dict[str, str] = {}
    for task, testbench, row in chosen:
        folder = folders[task.id]
        cap = capture(task, testbench, config, run_dir / folder)
        data = build_report_data(cap.points, cap.dut_hier,
                                 {f.name: f.content for f in task.rtl_files},
                                 parse_rules(config.exclusions), cap.modules)
        title = (f"Coverage: {task.id}, best testbench ({row['arm']}, sample {row['sample']}, "
                 f"round {row['round'] + 1})")
        write_html(data, run_dir / folder, title, cap.observation)
        links[task.id] = str(folder / "index.html")
    links_file = run_dir / LINKS_FILE
    links_file.parent.mkdir(parents=True, exist_ok=True)
    if links_file.is_dir() and not links_file.is_symlink():
        # a task "links.json"'s report folder, written here before task_path_part
        shutil.rmtree(links_file)
    links_file.write_text(json.dumps(links, indent=2), encoding="utf-8")
    return links


def _folders(task_ids: Sequence[str]) -> dict[str, Path]:
    """``coverage/<task_path_part(id)>`` of each id.

    Raises:
        ValueError: two ids got one folder name, up to case (a 64-bit hash collision:
            never seen; checked so that no report overwrites another).
    """
    folders: dict[str, Path] = {}
    taken: dict[str, str] = {}
    for task_id in task_ids:
        name = task_path_part(task_id)
        if (other := taken.setdefault(name.casefold(), task_id)) != task_id:
            raise ValueError(f"task ids {other!r} and {task_id!r} share the report folder "
                             f"coverage/{name}")
        folders[task_id] = Path("coverage") / name
    return folders


def read_links(run_dir: Path) -> dict[str, str]:
    """``links.json`` of a run dir, or {} when the reports were not written."""
    path = run_dir / LINKS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
