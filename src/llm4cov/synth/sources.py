"""Training repos from local files, each as a :class:`RepoItem` (a task, or why not).

The formats are the task sources of :mod:`llm4cov.tasks.sources` (``--repos-format``,
``auto`` detects each record's), the same ones ``llm4cov bench`` reads:

- ``tasks``: task JSONL in our schema (``../shared/benchmarks/README.md``);
- ``cvdp_raw`` / ``cvdp_ecov``: NVIDIA's raw CVDP JSONL (cid012 records only) and the
  CVDP-ECov release, read by :mod:`llm4cov.tasks.cvdp`;
- ``codev``: CodeV-R1-style JSONL, one design per line (:mod:`llm4cov.tasks.codev`);
- ``dirs``: a directory whose subdirectories are repos of RTL and spec files
  (:func:`llm4cov.tasks.loaders.task_from_dir`);
- any format registered there later.

A bad record is data, not an exception: it becomes a :class:`RepoItem` without a task
and with a ``reason`` (``invalid_record``, ``not_cid012``, ``no_rtl``, ``no_module``,
``ambiguous_top``, ``dut_not_declared``, ``invalid_repo``, ``duplicate_id``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm4cov.tasks.codev import (
    CODEV_ID_KEYS,
    codev_task,
    detect_top,
    first_field,
    rtl_from_answer,
)
from llm4cov.tasks.hdl import module_decls
from llm4cov.tasks.model import Task
from llm4cov.tasks.sources import (
    AUTO,
    Entry,
    RecordSkip,
    check_layout,
    count_records,
    entries,
    read_record,
)

RepoSkip = RecordSkip
"""A repo that cannot be used (:class:`llm4cov.tasks.sources.RecordSkip`)."""


@dataclass(frozen=True)
class RepoItem:
    """One repo of a source: its task, or ``reason``/``detail`` why there is none."""

    repo_id: str
    task: Task | None = None
    reason: str = ""
    detail: str = ""


def record_task(record: dict[str, Any], fmt: str = AUTO) -> Task:
    """The task of one JSONL record in format ``fmt`` (``auto``: detected per record).

    Raises:
        RepoSkip: the record cannot be used (see the module docstring for reasons).
    """
    return read_record(record, fmt)


def _check_dut(task: Task) -> Task:
    declared = {d.name for d in module_decls(task.rtl_files, task.include_dirs, task.defines)}
    if task.dut_module_name not in declared:
        raise RepoSkip("dut_not_declared",
                       f"{task.dut_module_name!r} is not declared in the RTL files")
    return task


def _item(entry: Entry, fmt: str) -> RepoItem:
    """The repo of one record: a repo directory keeps its ``dir/NAME`` id; a JSONL
    record's is its task's, or when it has none the id it gives (else ``FILE:LINE``)."""
    if entry.record is None:
        return RepoItem(entry.label, reason="invalid_record", detail=entry.why)
    try:
        task = _check_dut(read_record(entry.record, fmt, entry.repo_id is not None))
    except RepoSkip as exc:
        repo_id = entry.repo_id or exc.repo_id or _record_id(entry.record, entry.label)
        return RepoItem(repo_id, reason=exc.reason, detail=exc.detail)
    return RepoItem(entry.repo_id or task.id, task)


def _record_id(record: Any, where: str) -> str:
    if isinstance(record, dict):
        rid = first_field(record, ("id", "problem_id"))
        if rid is not None:
            return str(rid)
    return where


def iter_repos(path: Path | str, fmt: str = AUTO) -> Iterator[RepoItem]:
    """Every repo of ``path`` (a JSONL file, or a directory of repo directories), in
    source order, read lazily (the path and format are checked at once). The n-th
    repeat of an id is yielded as ``<id>#<n>`` with reason ``duplicate_id``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: ``fmt`` is not a registered format, a directory format for a file,
            or a JSONL format for a directory.
    """
    path = Path(path)
    check_layout(path, fmt)
    return _numbered(_item(entry, fmt) for entry in entries(path))


def count_repos(path: Path | str) -> int:
    """How many items :func:`iter_repos` yields for ``path`` (one per non-blank JSONL
    line, one per repo directory), counted without parsing a record."""
    return count_records(path)


def _numbered(items: Iterator[RepoItem]) -> Iterator[RepoItem]:
    seen: Counter[str] = Counter()
    for item in items:
        seen[item.repo_id] += 1
        if seen[item.repo_id] > 1:
            yield RepoItem(f"{item.repo_id}#{seen[item.repo_id]}", reason="duplicate_id",
                           detail=f"repeats the id {item.repo_id!r}")
            continue
        yield item


__all__ = ["CODEV_ID_KEYS", "RepoItem", "RepoSkip", "codev_task", "count_repos",
           "detect_top", "iter_repos", "record_task", "rtl_from_answer"]
