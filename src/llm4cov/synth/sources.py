"""Training repos from local files, each as a :class:`RepoItem` (a task, or why not).

Formats (``--repos-format``, ``auto`` detects them):

- ``tasks``: task JSONL in our schema (``../shared/benchmarks/README.md``);
- ``cvdp_raw`` / ``cvdp_ecov``: NVIDIA's raw CVDP JSONL (cid012 records only) and the
  CVDP-ECov release, read by :mod:`llm4cov.tasks.cvdp`;
- ``codev``: CodeV-R1-style JSONL, one design per line: an id (``problem_id`` or
  ``id``), a spec text (``question``, ``instruction``, ``problem``, ``prompt`` or
  ``spec``) and the reference RTL (``reference``, ``answer``, ``ground_truth``,
  ``solution``, ``code``, ``output`` or ``response``; fenced code and ``<think>``
  sections are handled). The DUT is the single top module, or among several the one
  the spec names;
- ``dirs``: a directory whose subdirectories are repos of RTL and spec files
  (:func:`llm4cov.tasks.loaders.task_from_dir`).

A bad record is data, not an exception: it becomes a :class:`RepoItem` without a task
and with a ``reason`` (``invalid_record``, ``not_cid012``, ``no_rtl``, ``no_module``,
``ambiguous_top``, ``dut_not_declared``, ``invalid_repo``, ``duplicate_id``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llm4cov.agent.response import strip_thinking
from llm4cov.tasks.cvdp import CID, cvdp_ecov_task, cvdp_raw_task, detect_format
from llm4cov.tasks.hdl import HDL_SUFFIXES, module_decls, top_modules
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.tasks.model import SourceFile, Task, TaskError
from llm4cov.util.jsonl import iter_json_objects

CODEV_ID_KEYS = ("problem_id", "id")
CODEV_SPEC_KEYS = ("question", "instruction", "problem", "prompt", "spec")
CODEV_RTL_KEYS = ("reference", "answer", "ground_truth", "solution", "code", "output",
                  "response")
_FENCED = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_MODULE = re.compile(r"\bmodule\s+\w+")


class RepoFormat(StrEnum):
    AUTO = "auto"
    TASKS = "tasks"
    CVDP_RAW = "cvdp_raw"
    CVDP_ECOV = "cvdp_ecov"
    CODEV = "codev"
    DIRS = "dirs"


class RepoSkip(TaskError):
    """A repo that cannot be used, with a short machine-readable ``reason`` and, when
    known, the id the repo would have had."""

    def __init__(self, reason: str, detail: str, repo_id: str = "") -> None:
        super().__init__(reason, detail, repo_id)
        self.reason = reason
        self.detail = detail
        self.repo_id = repo_id

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


@dataclass(frozen=True)
class RepoItem:
    """One repo of a source: its task, or ``reason``/``detail`` why there is none."""

    repo_id: str
    task: Task | None = None
    reason: str = ""
    detail: str = ""


def _first(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((record[k] for k in keys if record.get(k) not in (None, "")), None)


def rtl_from_answer(text: str) -> str:
    """The Verilog of an answer text: every fenced block that declares a module (joined),
    else the text from the first ``module`` to the last ``endmodule``; "" if none."""
    text = strip_thinking(text)
    blocks = [b.strip() for b in _FENCED.findall(text) if _MODULE.search(b)]
    if blocks:
        return "\n\n".join(blocks) + "\n"
    start, end = _MODULE.search(text), text.rfind("endmodule")
    if start is None or end < start.start():
        return ""
    return text[start.start() : end + len("endmodule")] + "\n"


def detect_top(rtl_files: list[SourceFile], spec: str = "") -> str:
    """The DUT module: the single top module, else the only top the spec names.

    Raises:
        RepoSkip: ``no_module`` or ``ambiguous_top``.
    """
    tops = top_modules(module_decls(rtl_files))
    if not tops:
        raise RepoSkip("no_module", "no module declaration in the RTL")
    if len(tops) == 1:
        return tops[0]
    named = [t for t in tops if re.search(rf"\b{re.escape(t)}\b", spec)]
    if len(named) == 1:
        return named[0]
    raise RepoSkip("ambiguous_top", f"several top modules: {', '.join(tops)}")


def codev_task(record: dict[str, Any]) -> Task:
    """The task of one CodeV-R1-style record (module docstring for the field names).

    Raises:
        RepoSkip: ``invalid_record`` (no id), ``no_rtl``, ``no_module``, ``ambiguous_top``.
    """
    pid = _first(record, CODEV_ID_KEYS)
    if pid is None:
        raise RepoSkip("invalid_record", f"no id field ({', '.join(CODEV_ID_KEYS)})")
    repo_id = f"codev/{pid}"
    spec = str(_first(record, CODEV_SPEC_KEYS) or "")
    rtl = rtl_from_answer(str(_first(record, CODEV_RTL_KEYS) or ""))
    if not rtl:
        raise RepoSkip("no_rtl", f"no Verilog module in {', '.join(CODEV_RTL_KEYS)}", repo_id)
    try:
        top = detect_top([SourceFile(name="design.v", content=rtl)], spec)
    except RepoSkip as exc:
        raise RepoSkip(exc.reason, exc.detail, repo_id) from exc
    return Task(
        id=repo_id,
        source="codev",
        spec_files=[SourceFile(name="spec.md", content=spec)] if spec else [],
        rtl_files=[SourceFile(name=f"{top}.v", content=rtl)],
        dut_module_name=top,
        meta={"upstream_id": str(pid)},
    )


def _detect(record: dict[str, Any]) -> RepoFormat:
    """``codev`` for a record with ``problem_id``, or with an RTL answer field and none
    of the task formats' keys; else the format :func:`detect_format` names."""
    if "problem_id" in record or (
        "rtl_files" not in record and "harness" not in record
        and _first(record, CODEV_RTL_KEYS) is not None
    ):
        return RepoFormat.CODEV
    try:
        return RepoFormat(detect_format(record).value)
    except TaskError as exc:
        raise RepoSkip("invalid_record", str(exc)) from exc


def record_task(record: dict[str, Any], fmt: RepoFormat) -> Task:
    """The task of one JSONL record in format ``fmt`` (``auto``: detected per record).

    Raises:
        RepoSkip: the record cannot be used (see the module docstring for reasons).
    """
    if fmt is RepoFormat.AUTO:
        fmt = _detect(record)
    if fmt is RepoFormat.CVDP_RAW and CID not in (record.get("categories") or []):
        raise RepoSkip("not_cid012", f"categories {record.get('categories')}")
    try:
        if fmt is RepoFormat.CODEV:
            return codev_task(record)
        if fmt is RepoFormat.CVDP_RAW:
            return cvdp_raw_task(record)
        if fmt is RepoFormat.CVDP_ECOV:
            return cvdp_ecov_task(record)
        return Task.model_validate(record)
    except RepoSkip:
        raise
    except (TaskError, ValidationError) as exc:
        raise RepoSkip("invalid_record", str(exc).splitlines()[0]) from exc


def _check_dut(task: Task) -> Task:
    declared = {d.name for d in module_decls(task.rtl_files, task.include_dirs, task.defines)}
    if task.dut_module_name not in declared:
        raise RepoSkip("dut_not_declared",
                       f"{task.dut_module_name!r} is not declared in the RTL files")
    return task


def _jsonl_items(path: Path, fmt: RepoFormat) -> Iterator[RepoItem]:
    for n, record, why in iter_json_objects(path):
        where = f"{path.name}:{n}"
        if record is None:
            yield RepoItem(where, reason="invalid_record", detail=why)
            continue
        try:
            task = _check_dut(record_task(record, fmt))
        except RepoSkip as exc:
            repo_id = exc.repo_id or _record_id(record, where)
            yield RepoItem(repo_id, reason=exc.reason, detail=exc.detail)
        else:
            yield RepoItem(task.id, task)


def _record_id(record: Any, where: str) -> str:
    if isinstance(record, dict):
        rid = _first(record, ("id", "problem_id"))
        if rid is not None:
            return str(rid)
    return where


def _repo_dirs(root: Path) -> Iterator[Path]:
    """Subdirectories of ``root`` with at least one HDL file, sorted."""
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        if any(f.suffix.lower() in HDL_SUFFIXES for f in sub.rglob("*") if f.is_file()):
            yield sub


def _dir_items(root: Path) -> Iterator[RepoItem]:
    for sub in _repo_dirs(root):
        repo_id = f"dir/{sub.name}"
        try:
            task = _check_dut(task_from_dir(sub, task_id=repo_id))
        except RepoSkip as exc:
            yield RepoItem(repo_id, reason=exc.reason, detail=exc.detail)
        except (TaskError, OSError) as exc:
            yield RepoItem(repo_id, reason="invalid_repo", detail=str(exc))
        else:
            yield RepoItem(repo_id, task)


def iter_repos(path: Path | str, fmt: RepoFormat | str = RepoFormat.AUTO) -> Iterator[RepoItem]:
    """Every repo of ``path`` (a JSONL file, or a directory of repo directories), in
    source order, read lazily (the path and format are checked at once). The n-th
    repeat of an id is yielded as ``<id>#<n>`` with reason ``duplicate_id``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: ``fmt`` is ``dirs`` for a file, or a JSONL format for a directory.
    """
    path, fmt = Path(path), RepoFormat(fmt)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    wrong = path.is_dir() if fmt not in (RepoFormat.AUTO, RepoFormat.DIRS) else (
        fmt is RepoFormat.DIRS and not path.is_dir())
    if wrong:
        kind = "directory" if path.is_dir() else "file"
        raise ValueError(f"{path}: format {fmt.value} does not fit a {kind}")
    return _numbered(_dir_items(path) if path.is_dir() else _jsonl_items(path, fmt))


def count_repos(path: Path | str) -> int:
    """How many items :func:`iter_repos` yields for ``path`` (one per non-blank JSONL
    line, one per repo directory), counted without parsing a record."""
    path = Path(path)
    if path.is_dir():
        return sum(1 for _ in _repo_dirs(path))
    with path.open(encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def _numbered(items: Iterator[RepoItem]) -> Iterator[RepoItem]:
    seen: Counter[str] = Counter()
    for item in items:
        seen[item.repo_id] += 1
        if seen[item.repo_id] > 1:
            yield RepoItem(f"{item.repo_id}#{seen[item.repo_id]}", reason="duplicate_id",
                           detail=f"repeats the id {item.repo_id!r}")
            continue
        yield item
