"""Loading tasks: a directory of RTL/spec files, or a task JSONL file.

Directory layout: every ``*.v``/``*.sv``/``*.vh``/``*.svh`` file (recursively) is RTL,
every ``*.md``/``*.txt``/``*.rst`` file is spec. The DUT is the single module that no
other module instantiates (pyslang); ask with ``top=`` when there are several.
Files that are not valid UTF-8 are decoded as Latin-1 (byte-exact) and the task's
``meta["notes"]`` says so. A link to a file outside the directory is not loaded (a
warning and a note say so); links to directories are not followed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from pydantic import ValidationError

from llm4cov.tasks.filelist import parse_filelist, resolve_repo
from llm4cov.tasks.hdl import HDL_SUFFIXES, parse_design, top_modules
from llm4cov.tasks.model import SourceFile, Task, TaskError
from llm4cov.tasks.names import name_errors
from llm4cov.util.jsonl import iter_json_objects

SPEC_SUFFIXES = (".md", ".txt", ".rst")
_SKIP_DIRS = {".git", "obj_dir", "__pycache__", "node_modules"}

log = logging.getLogger(__name__)


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
    *,
    include_dirs: Iterable[Path | str] = (),
    defines: Mapping[str, str] | None = None,
    parameters: Mapping[str, str] | None = None,
    filelist: Path | str | None = None,
) -> Task:
    """Build a task from a directory of RTL and spec files (links to files outside it
    are refused, see :func:`files_below`).

    ``include_dirs`` (absolute, or relative to ``directory``), ``defines`` and
    ``parameters`` become the task's (``Task.include_dirs``...). With ``filelist`` the
    RTL is what the list compiles (``filelist.py``; its files must lie below
    ``directory``) and its options add to these; spec files still come from
    ``directory``. Module structure is read with the include dirs and macros.

    Raises:
        TaskError: the directory is missing or has no RTL, an RTL file name is not
            usable in the work dir (:mod:`llm4cov.tasks.names`), ``top`` is not declared,
            or the top module is ambiguous (the message lists the candidates), an
            include dir lies outside the directory, or the filelist is unusable.
    """
    root = Path(directory)
    if not root.is_dir():
        raise TaskError(f"{root}: not a directory")
    notes: list[str] = []
    rtl: list[SourceFile] = []
    spec: list[SourceFile] = []
    for rel, path in files_below(root, notes, (*HDL_SUFFIXES, *SPEC_SUFFIXES)):
        suffix = path.suffix.lower()
        if suffix in HDL_SUFFIXES:
            rtl.append(SourceFile(name=rel.as_posix(), content=read_text(path, notes, str(rel))))
        elif suffix in SPEC_SUFFIXES:
            spec.append(SourceFile(name=rel.as_posix(), content=read_text(path, notes, str(rel))))
    build = _build_inputs(root, include_dirs, defines, parameters, filelist, notes)
    if filelist is not None:
        rtl = build.pop("rtl")
    if not rtl:
        raise TaskError(f"{root}: no RTL files ({', '.join(HDL_SUFFIXES)}) found")
    if errors := name_errors("rtl file", [f.name for f in rtl]):
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise TaskError(f"{root}: {errors[0]}{more}")
    design = parse_design(rtl, build["include_dirs"], build["defines"], build["compile_files"])
    decls = design.decls()
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
    _check_overrides(root, design, dut, build["parameters"])
    return Task(
        id=task_id or f"local/{root.resolve().name}",
        source="local",
        rtl_files=rtl,
        spec_files=spec,
        dut_module_name=dut,
        dut_instance_name=instance,
        meta={"notes": notes, "path": str(root)},
        **build,
    )


def _check_overrides(root: Path, design, dut: str, parameters: Mapping[str, str]) -> None:
    """Refuse parameter overrides (``--param``, a filelist's ``-G``/``-pvalue+``) that
    name no overridable parameter of the DUT: a simulator would ignore them silently.

    Raises:
        TaskError: the message names the unknown overrides and the valid parameters.
    """
    if not parameters:
        return
    valid = design.parameters(dut)
    unknown = [name for name in parameters if name not in valid]
    if unknown:
        raise TaskError(f"{root}: parameter override {', '.join(unknown)}: not a parameter "
                        f"of module {dut!r} (overridable: {', '.join(valid) or 'none'})")


def filelist_root(filelist: Path | str) -> Path:
    """The repository root when no RTL directory is given: the filelist's own directory
    (every file it names must lie below it, ``filelist.resolve_repo``)."""
    return Path(filelist).parent.resolve()


def _build_inputs(
    root: Path,
    include_dirs: Iterable[Path | str],
    defines: Mapping[str, str] | None,
    parameters: Mapping[str, str] | None,
    filelist: Path | str | None,
    notes: list[str],
) -> dict:
    """The task's build fields from the loader's options (and the RTL, with a list)."""
    build: dict = {"include_dirs": [], "defines": {}, "parameters": {}, "compile_files": []}
    if filelist is not None:
        fl = parse_filelist(filelist, root=root)
        repo = resolve_repo(fl, lambda p: read_text(p, notes), root)
        build.update(rtl=repo.rtl, include_dirs=repo.include_dirs, defines=fl.defines,
                     parameters=fl.parameters, compile_files=repo.compile_files)
        if fl.ignored:
            notes.append(f"filelist options ignored: {' '.join(fl.ignored)}")
    for d in include_dirs:
        path = (root / d).resolve()
        try:
            build["include_dirs"].append(path.relative_to(root.resolve()).as_posix())
        except ValueError:
            raise TaskError(f"include dir {d} lies outside {root}") from None
    build["defines"] = {**build["defines"], **(defines or {})}
    build["parameters"] = {**build["parameters"], **(parameters or {})}
    return build


def files_below(
    root: Path, notes: list[str], suffixes: tuple[str, ...] | None = None
) -> list[tuple[Path, Path]]:
    """``(name relative to root, path)`` of every regular file below ``root``, sorted,
    without :data:`_SKIP_DIRS` and without following links to directories. A link to a
    file is read as that file when the file lies inside ``root`` too; a file loaded
    (one of ``suffixes``, lower case; None: every file) that links outside is refused
    (its text would reach compile logs, prompts or a simulation): left out, with a
    warning and a note in ``notes``.
    """
    real_root = root.resolve()
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if _SKIP_DIRS & set(rel.parts[:-1]) or not path.is_file():
            continue
        loaded = suffixes is None or path.suffix.lower() in suffixes
        if loaded and not path.resolve().is_relative_to(real_root):
            why = (f"{rel.as_posix()} is a symbolic link to a file outside {root}: not "
                   "loaded (links out of the repository are refused; copy the file in)")
            log.warning("%s", why)
            notes.append(why)
            continue
        found.append((rel, path))
    return sorted(found)


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
