"""Loading tasks: a directory of RTL/spec files, or a task JSONL file.

Directory layout: every ``*.v``/``*.sv``/``*.vh``/``*.svh`` file (recursively) is RTL,
every ``*.md``/``*.txt``/``*.rst`` file is spec. The DUT is the single module that no
other module instantiates (pyslang); ask with ``top=`` when there are several.
Files that are not valid UTF-8 are decoded as Latin-1 (byte-exact) and the task's
``meta["notes"]`` says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from llm4cov.tasks.hdl import HDL_SUFFIXES, module_decls, top_modules
from llm4cov.tasks.model import SourceFile, Task, TaskError
from llm4cov.util.jsonl import iter_json_objects

SPEC_SUFFIXES = (".md", ".txt", ".rst")
_SKIP_DIRS = {".git", "obj_dir", "__pycache__", "node_modules"}


def read_text(path: Path, notes: list[str] | None = None, label: str | None = None) -> str:
    """A file's text: UTF-8, or Latin-1 with a note appended to ``notes``."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if notes is not None:
            notes.append(
                f"{label or path.name} is not valid UTF-8 (byte {exc.start}); read as Latin-1"
            )
        return data.decode("latin-1")


def task_from_dir(
    directory: Path | str,
    top: str | None = None,
    instance: str = "dut",
    task_id: str | None = None,
) -> Task:
    """Build a task from a directory of RTL and spec files.

    Raises:
        TaskError: the directory is missing or has no RTL, ``top`` is not declared,
            or the top module is ambiguous (the message lists the candidates).
    """
    root = Path(directory)
    if not root.is_dir():
        raise TaskError(f"{root}: not a directory")
    notes: list[str] = []
    rtl: list[SourceFile] = []
    spec: list[SourceFile] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if _SKIP_DIRS & set(rel.parts[:-1]):
            continue
        suffix = path.suffix.lower()
        if suffix in HDL_SUFFIXES:
            rtl.append(SourceFile(name=rel.as_posix(), content=read_text(path, notes, str(rel))))
        elif suffix in SPEC_SUFFIXES:
            spec.append(SourceFile(name=rel.as_posix(), content=read_text(path, notes, str(rel))))
    if not rtl:
        raise TaskError(f"{root}: no RTL files ({', '.join(HDL_SUFFIXES)}) found")
    decls = module_decls(rtl)
    declared = [d.name for d in decls]
    if top is not None:
        if top not in declared:
            raise TaskError(
                f"{root}: module {top!r} is not declared (found: {', '.join(declared)})"
            )
        dut = top
    else:
        tops = top_modules(decls)
        if not tops:
            raise TaskError(f"{root}: no module declarations found in the RTL files")
        if len(tops) > 1:
            raise TaskError(
                f"{root}: several top-level modules ({', '.join(tops)}); choose one with --top"
            )
        dut = tops[0]
    return Task(
        id=task_id or f"local/{root.resolve().name}",
        source="local",
        rtl_files=rtl,
        spec_files=spec,
        dut_module_name=dut,
        dut_instance_name=instance,
        meta={"notes": notes, "path": str(root)},
    )


def iter_tasks(path: Path | str) -> Iterator[Task]:
    """Tasks of a JSONL file in the schema of ``../shared/benchmarks/README.md``.

    Raises:
        TaskError: a line is not valid JSON or not a valid task (names the line).
    """
    for n, record, why in iter_json_objects(path):
        try:
            if record is None:
                raise ValueError(why)
            yield Task.model_validate(record)
        except (ValueError, ValidationError) as exc:
            raise TaskError(f"{path}:{n}: not a valid task: {exc}") from exc


def load_tasks(path: Path | str, ids: list[str] | None = None) -> list[Task]:
    """All tasks of a JSONL file, or only ``ids`` (in file order).

    Raises:
        TaskError: an id is not in the file.
    """
    tasks = list(iter_tasks(path))
    if not ids:
        return tasks
    known = {t.id for t in tasks}
    missing = [i for i in ids if i not in known]
    if missing:
        raise TaskError(f"{path}: no task with id {', '.join(missing)}")
    wanted = set(ids)
    return [t for t in tasks if t.id in wanted]
