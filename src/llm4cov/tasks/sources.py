"""Task sources: the formats tasks are read from, one registry for ``llm4cov bench``
(``--tasks``), ``llm4cov synth`` (``--repos``, ``--repos-format``) and the pipeline.

A :class:`TaskSource` is one format: ``detect(record)`` says whether a record is in it,
``read(record)`` makes the record's :class:`~llm4cov.tasks.model.Task`. A record is one
JSON object of a JSONL file or, for a ``directory`` source, one repo directory (a
subdirectory with HDL files, :func:`repo_dirs`) of a folder. The registered formats, in
the order detection tries them (the table at the end of this module, each imported on
first use): ``codev`` (CodeV-R1-style JSONL, :mod:`llm4cov.tasks.codev`), ``cvdp_raw``
and ``cvdp_ecov`` (:mod:`llm4cov.tasks.cvdp`), ``tasks`` (our schema) and ``dirs`` (a
directory of repo directories; both :mod:`llm4cov.tasks.loaders`).

Two readers over the same sources:

- strict, for a benchmark (:func:`load_any_tasks`, :func:`read_file`): one format for
  the whole file (detected from its first record); an invalid record is an error that
  names its line; a record the format leaves out by design (:class:`NotATask`: raw
  CVDP's categories other than cid012) is skipped;
- lenient, for training repos (:func:`read_record`, used by
  :mod:`llm4cov.synth.sources`): each record's format detected (or given); a record
  that yields no task is a :class:`RecordSkip` with a machine-readable reason.
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llm4cov.tasks.model import Task, TaskError
from llm4cov.util.jsonl import bounded_lines, iter_json_objects

log = logging.getLogger(__name__)

AUTO = "auto"
"""The format name that detects each file's (or record's) format."""


class RecordSkip(TaskError):
    """A record that yields no task, with a short machine-readable ``reason``
    (``invalid_record``, ``not_cid012``, ``no_rtl``, ``no_module``, ``ambiguous_top``,
    ``invalid_repo``, ...), its ``detail`` and, when known, the id its repo would have
    had."""

    def __init__(self, reason: str, detail: str, repo_id: str = "") -> None:
        super().__init__(reason, detail, repo_id)
        self.reason = reason
        self.detail = detail
        self.repo_id = repo_id

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


class NotATask(RecordSkip):
    """A record its format leaves out by design (raw CVDP: a category other than
    cid012): the strict reader skips it, the lenient one reports its reason."""


class UnknownTaskFormat(ValueError):
    """No task source is registered under a format name (bad input: exit 2)."""


@dataclass(frozen=True)
class TaskSource:
    """One task format.

    ``detect(record)``: whether a record is in this format (a JSON object, or with
    ``directory`` a repo directory's path); only tried on records of its layout.
    ``read(record)``: the record's task; raises :class:`RecordSkip` (or
    :class:`NotATask`) with a reason, or ``TaskError`` / pydantic ``ValidationError``
    for an invalid record. ``invalid``: what the strict reader puts before the problem
    of an invalid record (``"not a valid task: "``).
    """

    name: str
    detect: Callable[[Any], bool]
    read: Callable[[Any], Task]
    directory: bool = False
    invalid: str = ""


@dataclass(frozen=True)
class Entry:
    """One record of a path: ``where`` (``PATH:LINE`` or the repo directory, in a
    strict reader's errors), ``label`` (``FILE:LINE`` or ``dir/NAME``), ``record`` (a
    JSON object, a repo directory, or None with ``why`` for a line that is not a JSON
    object) and ``repo_id``: a repo directory's id whatever its task's (``dir/NAME``),
    None for a JSONL record."""

    where: str
    label: str
    record: Any
    why: str = ""
    repo_id: str | None = None


_SOURCES: dict[str, TaskSource | str] = {}


def register_source(name: str, source: TaskSource | str) -> None:
    """Register ``source`` as format ``name``: a :class:`TaskSource`, or
    ``"module:ATTRIBUTE"`` naming one (imported on first use). A new name is tried last
    by detection; a later call with the same name replaces the source in its place."""
    _SOURCES[name] = source


def format_names() -> tuple[str, ...]:
    """``auto`` and the registered formats, in detection order (``--repos-format``'s
    choices)."""
    return (AUTO, *_SOURCES)


def check_format(name: str) -> str:
    """``name`` when it is ``auto`` or a registered format.

    Raises:
        UnknownTaskFormat: naming the valid ones.
    """
    if name != AUTO and name not in _SOURCES:
        raise UnknownTaskFormat(f"unknown format {name!r}; valid: {', '.join(format_names())}")
    return name


def get_source(name: str) -> TaskSource:
    """The source registered as format ``name`` (imported on first use).

    Raises:
        UnknownTaskFormat: not a registered format (``auto`` is none).
    """
    entry = _SOURCES.get(name)
    if entry is None:
        raise UnknownTaskFormat(f"unknown format {name!r}; valid: {', '.join(_SOURCES)}")
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        entry = getattr(importlib.import_module(module), attribute)
        assert isinstance(entry, TaskSource) and entry.name == name, (name, entry)
        _SOURCES[name] = entry
    return entry


def detect(record: Any, directory: bool = False) -> TaskSource:
    """The first registered source (detection order) whose ``detect`` takes ``record``
    (a JSON object; with ``directory``, a repo directory).

    Raises:
        TaskError: no source takes it (for a JSON object: ``unknown task format``
            with its keys).
    """
    for name in list(_SOURCES):
        source = get_source(name)
        if source.directory == directory and source.detect(record):
            return source
    if isinstance(record, Mapping):
        raise TaskError(f"unknown task format (keys: {', '.join(sorted(record))})")
    raise TaskError(f"{record}: no task source reads it")


def dir_repo_id(directory: Path) -> str:
    """The repo id of a repo directory of a folder: ``dir/NAME``."""
    return f"dir/{directory.name}"


def repo_dirs(root: Path | str) -> Iterator[Path]:
    """Subdirectories of ``root`` with at least one HDL file, sorted: the records of a
    directory source."""
    from llm4cov.tasks.hdl import HDL_SUFFIXES  # pyslang: only where a folder is read

    for sub in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        if any(f.suffix.lower() in HDL_SUFFIXES for f in sub.rglob("*") if f.is_file()):
            yield sub


def entries(path: Path | str, directory: bool | None = None) -> Iterator[Entry]:
    """The records of ``path``: the JSON objects of a JSONL file, one per non-blank
    line, or (``directory``; None: ``path`` is a directory) its repo directories.

    Raises:
        OSError: ``path`` cannot be read.
    """
    path = Path(path)
    if path.is_dir() if directory is None else directory:
        for sub in repo_dirs(path):
            yield Entry(str(sub), dir_repo_id(sub), sub, repo_id=dir_repo_id(sub))
        return
    for n, record, why in iter_json_objects(path):
        yield Entry(f"{path}:{n}", f"{path.name}:{n}", record, why)


def count_records(path: Path | str) -> int:
    """How many records :func:`entries` yields for ``path`` (one per non-blank JSONL
    line, one per repo directory), counted without parsing one.

    Raises:
        OSError: ``path`` cannot be read.
    """
    path = Path(path)
    if path.is_dir():
        return sum(1 for _ in repo_dirs(path))
    with path.open(encoding="utf-8") as fh:
        return sum(1 for _, line in bounded_lines(fh) if line is None or line.strip())


def check_layout(path: Path, fmt: str) -> None:
    """Refuse a directory format for a file and a JSONL format for a directory.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        UnknownTaskFormat: ``fmt`` is not registered.
        ValueError: ``fmt`` does not fit ``path``.
    """
    check_format(fmt)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if fmt != AUTO and get_source(fmt).directory != path.is_dir():
        kind = "directory" if path.is_dir() else "file"
        raise ValueError(f"{path}: format {fmt} does not fit a {kind}")


def read_file(path: Path | str, source: TaskSource) -> Iterator[Task]:
    """Every task of ``path`` in format ``source``, strictly: records the format leaves
    out by design (:class:`NotATask`) are skipped (counted in a log message).

    Raises:
        TaskError: a record that is not valid (``PATH:LINE: problem``, or the repo
            directory).
        OSError: ``path`` cannot be read.
    """
    path = Path(path)
    skipped: Counter[str] = Counter()
    for entry in entries(path, source.directory):
        try:
            if entry.record is None:
                raise TaskError(entry.why)
            task = source.read(entry.record)
        except NotATask as exc:
            skipped[exc.reason] += 1
            continue
        except (TaskError, ValidationError) as exc:
            raise TaskError(f"{entry.where}: {source.invalid}{exc}") from exc
        yield task
    for reason, count in sorted(skipped.items()):
        log.info("%s: skipped %d records (%s)", path, count, reason)


def load_any_tasks(path: Path | str) -> list[Task]:
    """All tasks of ``path`` in any registered format, detected from its first record
    (a directory: from its first repo directory), read strictly (:func:`read_file`).

    Raises:
        TaskError: no records, an unknown format or an invalid record.
        OSError: ``path`` cannot be read.
    """
    path = Path(path)
    first = next(entries(path), None)
    if first is None:
        raise TaskError(f"{path}: no records")
    if first.record is None:
        raise TaskError(f"{first.where}: {first.why}")
    return list(read_file(path, detect(first.record, path.is_dir())))


def read_record(record: Any, fmt: str = AUTO, directory: bool = False) -> Task:
    """The task of one record in format ``fmt`` (``auto``: detected; ``directory``:
    ``record`` is a repo directory), leniently: every failure is a
    :class:`RecordSkip`.

    Raises:
        RecordSkip: ``invalid_record`` (no format takes it, or it is invalid: the first
            line of the problem) or the source's own reason.
        UnknownTaskFormat: ``fmt`` is not registered.
    """
    try:
        source = detect(record, directory) if fmt == AUTO else get_source(fmt)
    except TaskError as exc:
        raise RecordSkip("invalid_record", str(exc)) from exc
    try:
        return source.read(record)
    except RecordSkip:
        raise
    except (TaskError, ValidationError) as exc:
        raise RecordSkip("invalid_record", str(exc).splitlines()[0]) from exc


register_source("codev", "llm4cov.tasks.codev:SOURCE")
register_source("cvdp_raw", "llm4cov.tasks.cvdp:RAW_SOURCE")
register_source("tasks", "llm4cov.tasks.loaders:TASKS_SOURCE")
register_source("cvdp_ecov", "llm4cov.tasks.cvdp:ECOV_SOURCE")
register_source("dirs", "llm4cov.tasks.loaders:DIRS_SOURCE")

__all__ = ["AUTO", "Entry", "NotATask", "RecordSkip", "TaskSource", "UnknownTaskFormat",
           "check_format", "check_layout", "count_records", "detect", "dir_repo_id", "entries",
           "format_names", "get_source", "load_any_tasks", "read_file", "read_record",
           "register_source", "repo_dirs"]
