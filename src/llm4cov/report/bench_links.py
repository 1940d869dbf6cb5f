"""Annotated coverage reports of each task's best testbench in a bench run.

``llm4cov bench --coverage-html`` picks, per task, the best model-written row of
``results.jsonl`` (Sim Pass, then Cov Pass, then coverage; the earliest on ties),
recovers its testbench from the stored response (the same extraction the agent used,
checked against the row's ``testbench_sha256``), simulates it once more (the evaluator
is deterministic) and writes ``RUN/coverage/<task>/index.html``. ``RUN/coverage/links.json``
maps task ids to those pages; the bench HTML report (``report.html``) links them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from llm4cov.agent.response import extract_testbench
from llm4cov.bench.rows import sha256
from llm4cov.report.capture import capture
from llm4cov.report.data import build_report_data
from llm4cov.report.html import write_html
from llm4cov.sim.config import SimConfig
from llm4cov.sim.exclusions import parse_rules
from llm4cov.tasks.model import Task

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
    returns ``{task id: path relative to run_dir}``.

    Raises:
        ToolchainError: the simulator toolchain is missing.
    """
    by_id = {t.id: t for t in tasks}
    links: dict[str, str] = {}
    for task_id, row in sorted(best_rows(rows).items()):
        task = by_id.get(task_id)
        testbench = extract_testbench(row["response"], task.dut_module_name) if task else None
        if task is None or testbench is None or sha256(testbench) != row["testbench_sha256"]:
            continue
        folder = Path("coverage") / re.sub(r"[^\w.-]+", "_", task_id)
        cap = capture(task, testbench, config, run_dir / folder)
        data = build_report_data(cap.points, cap.dut_hier,
                                 {f.name: f.content for f in task.rtl_files},
                                 parse_rules(config.exclusions), cap.modules)
        title = (f"Coverage: {task_id}, best testbench ({row['arm']}, sample {row['sample']}, "
                 f"round {row['round'] + 1})")
        write_html(data, run_dir / folder, title, cap.observation)
        links[task_id] = str(folder / "index.html")
    (run_dir / LINKS_FILE).parent.mkdir(parents=True, exist_ok=True)
    (run_dir / LINKS_FILE).write_text(json.dumps(links, indent=2), encoding="utf-8")
    return links


def read_links(run_dir: Path) -> dict[str, str]:
    """``links.json`` of a run dir, or {} when the reports were not written."""
    path = run_dir / LINKS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
