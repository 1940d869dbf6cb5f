"""Loading tasks: a directory of RTL/spec files, RTL files, or a task JSONL file.

Directory layout: every ``*.v``/``*.sv``/``*.vh``/``*.svh`` file (recursively) is RTL,
every ``*.md``/``*.txt``/``*.rst`` file is spec, except test and testbench code
(:mod:`llm4cov.tasks.layout`). The DUT is the single module that no other module
instantiates (pyslang); ask with ``top=`` when there are several. Files that are not
valid UTF-8 are decoded as Latin-1 (byte-exact) and the task's ``meta["notes"]`` says
so. A link to a file outside the directory is not loaded (a warning and a note say
so); links to directories are not followed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from llm4cov.tasks.bender import is_manifest, parse_manifest
from llm4cov.tasks.filelist import FileList, included, parse_filelist, resolve_repo
from llm4cov.tasks.hdl import (
    COMPILED_SUFFIXES,
    HDL_SUFFIXES,
    Design,
    UnsafeIncludeError,
    parse_design,
    top_modules,
)
from llm4cov.tasks.layout import Exclusions, note, testbench_files
from llm4cov.tasks.model import SourceFile, Task, TaskError, safe_task_id
from llm4cov.tasks.names import name_errors
from llm4cov.tasks.reading import bounded_bytes, check_total
from llm4cov.tasks.sources import RecordSkip, TaskSource, dir_repo_id, read_file

SPEC_SUFFIXES = (".md", ".txt", ".rst")
_SKIP_DIRS = {".git", "obj_dir", "__pycache__", "node_modules"}

log = logging.getLogger(__name__)


def read_text(path: Path, notes: list[str] | None = None, label: str | None = None) -> str:
    """A file's text: UTF-8, or Latin-1 with a note appended to ``notes``.

    Raises:
        TaskError: the file is over :data:`~llm4cov.tasks.reading.MAX_FILE_BYTES`.
    """
    data = bounded_bytes(path)
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
    **options,
) -> Task:
    """:func:`task_from_paths` of one directory.

    Raises:
        TaskError: ``directory`` is not a directory, or see :func:`task_from_paths`.
    """
    if not Path(directory).is_dir():
        raise TaskError(f"{directory}: not a directory")
    return task_from_paths([directory], top, instance, task_id, **options)


def task_from_paths(
    paths: Sequence[Path | str],
    top: str | None = None,
    instance: str = "dut",
    task_id: str | None = None,
    *,
    include_dirs: Iterable[Path | str] = (),
    defines: Mapping[str, str] | None = None,
    parameters: Mapping[str, str] | None = None,
    filelist: Path | str | None = None,
    exclude: Exclusions | None = None,
    targets: Iterable[str] = (),
) -> Task:
    """Build a task from RTL paths: one directory (every RTL and spec file below it but
    what ``exclude`` leaves out, by default the test folders and testbench files of
    :mod:`llm4cov.tasks.layout`; a note names them), or RTL
    files (compiled in the given order, with the files they `` `include``; no spec).
    Links to files outside are refused (:func:`files_below`).

    The *RTL directory* is the directory given, or the folder holding every file given.
    ``include_dirs`` are relative to it (or absolute) and must exist; one outside it is
    allowed, its files are read only when included (never compiled, no link out of it
    followed), and every file is then named relative to the folder holding both
    (``src/x.sv``, ``include/y.svh``). ``defines`` and ``parameters`` become the
    task's. With ``filelist`` (a Verilator/VCS filelist, :mod:`llm4cov.tasks.filelist`,
    or a Bender manifest, :mod:`llm4cov.tasks.bender`, with ``targets`` active) the RTL
    is what it compiles (every file below the RTL directory or a named include dir)
    and its options come before these; spec files still come from the RTL directory.
    Module structure is read with the include dirs and macros. The
    task id is ``task_id``, else ``local/<DUT module>`` (the design's name, not the
    folder's: every repo keeps its RTL in a folder named ``rtl`` or ``src``).

    Raises:
        TaskError: a path is missing or has no RTL, an RTL file name is not usable in
            the work dir (:mod:`llm4cov.tasks.names`), ``top`` is not declared, the top
            module is ambiguous (the message lists the candidates), an include dir is
            missing, or the filelist is unusable.
    """
    given = [Path(p) for p in paths]
    files = _named_files(given)
    exclude = exclude or Exclusions()
    base = given[0] if not files else Path(os.path.commonpath(
        [str(p.resolve().parent) for p in files]))
    if targets and (filelist is None or not is_manifest(filelist)):
        raise TaskError("--target applies to a Bender manifest (-f Bender.yml) only")
    rtl_dir = _RtlDir(base, include_dirs)
    notes: list[str] = []
    found = rtl_dir.collect(files, filelist, targets, exclude, notes)
    rtl, build = found.rtl, found.build
    if not rtl:
        raise TaskError(f"{base}: no RTL files ({', '.join(HDL_SUFFIXES)}) found")
    if errors := name_errors("rtl file", [f.name for f in rtl]):
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise TaskError(f"{base}: {errors[0]}{more}")
    build["include_dirs"] = list(dict.fromkeys([*build["include_dirs"],
                                                *rtl_dir.include_names()]))
    build["defines"] = {**build["defines"], **(defines or {})}
    build["parameters"] = {**build["parameters"], **(parameters or {})}
    design = _design(base, rtl, build)
    benches = ({f: m for f, m in testbench_files(design.decls(), top).items()
                if f in found.walked} if exclude.defaults else {})
    if benches:
        rtl = [f for f in rtl if f.name not in benches]
        build["compile_files"] = [n for n in build["compile_files"] if n not in benches]
        design = _design(base, rtl, build)
    if text := note(found.left_out, benches):
        notes.insert(0, text)
    dut = _dut(base, design.decls(), top)
    _check_overrides(base, design, dut, build["parameters"])
    return Task(
        id=task_id or f"local/{dut}",
        source="local",
        rtl_files=rtl,
        spec_files=found.spec,
        dut_module_name=dut,
        dut_instance_name=instance,
        meta={"notes": notes, "path": str(rtl_dir.root)},
        **build,
    ).from_folder(str(rtl_dir.root))


def _design(base: Path, rtl: list[SourceFile], build: dict) -> Design:
    """The RTL parsed with its build fields.

    Raises:
        TaskError: an `` `include`` breaks the include rule (:mod:`llm4cov.tasks.includes`).
    """
    try:
        return parse_design(rtl, build["include_dirs"], build["defines"],
                            build["compile_files"])
    except UnsafeIncludeError as exc:
        raise TaskError(f"{base}: {exc}") from None


def _named_files(given: list[Path]) -> list[Path]:
    """The files among ``given`` (empty for one directory).

    Raises:
        TaskError: nothing given, a path is missing, or directories and files are mixed
            or several directories are given.
    """
    if not given:
        raise TaskError("no RTL path given")
    for path in given:
        if not path.exists():
            raise TaskError(f"{path}: no such file or directory")
    files = [p for p in given if not p.is_dir()]
    if files and len(files) < len(given):
        raise TaskError("give one RTL directory or RTL files, not both")
    if len(given) > 1 and not files:
        raise TaskError("give one RTL directory (for several, use a filelist)")
    for f in files:
        if f.suffix.lower() not in HDL_SUFFIXES:
            raise TaskError(f"{f}: not an RTL file ({', '.join(HDL_SUFFIXES)})")
    return files


def _dut(base: Path, decls: list, top: str | None) -> str:
    """The DUT module: ``top``, else the one top-level module.

    Raises:
        TaskError: ``top`` is not declared, or there is no top or several.
    """
    declared = [d.name for d in decls]
    if top is not None:
        if top not in declared:
            raise TaskError(
                f"{base}: module {top!r} is not declared (found: {', '.join(declared)})"
            )
        return top
    tops = top_modules(decls)
    if not tops:
        raise TaskError(f"{base}: no module declarations found in the RTL files")
    if len(tops) > 1:
        raise TaskError(
            f"{base}: several top-level modules ({', '.join(tops)}); choose one with --top"
        )
    return tops[0]


def _build(**fields) -> dict:
    """The task's build fields (``Task.build_settings``), empty but ``fields``."""
    return {"include_dirs": [], "defines": {}, "parameters": {}, "compile_files": [], **fields}


@dataclass
class _Found:
    """What :meth:`_RtlDir.collect` found: the RTL, the build fields, the spec, the
    walked RTL names and what the walk left out."""

    rtl: list[SourceFile]
    build: dict
    spec: list[SourceFile] = field(default_factory=list)
    walked: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


class _RtlDir:
    """The RTL directory (``base``), the include dirs named for it, and ``root``, the
    folder that names every file: the RTL directory, or the folder holding it and the
    include dirs that lie outside it (``allowed``: the folders files may come from).

    Raises (construction):
        TaskError: an include dir does not exist.
    """

    def __init__(self, base: Path, include_dirs: Iterable[Path | str]):
        self.base = base
        real = base.resolve()
        named = list(include_dirs)
        self.include_dirs = [(base / d).resolve() for d in named]
        for given, d in zip(named, self.include_dirs, strict=True):
            if not d.is_dir():
                raise TaskError(f"include dir {given}: no such directory (relative to {base})")
        self.outside = [d for d in self.include_dirs if not d.is_relative_to(real)]
        self.root = Path(os.path.commonpath([str(real), *map(str, self.outside)]))
        self.prefix = real.relative_to(self.root)
        self.allowed = (real, *self.outside)

    def collect(self, files: list[Path], filelist: Path | str | None, targets: Iterable[str],
                exclude: Exclusions, notes: list[str]) -> _Found:
        """The RTL and spec of the files given by name (``files``), of ``filelist``, or
        of the folder walk (what ``exclude`` left out, and the walked RTL names)."""
        if files:
            rtl, compile_files = self.named_files(files, notes)
            return _Found(rtl, _build(compile_files=compile_files))
        rtl, spec, left_out = self.walk(notes, exclude)
        if filelist is not None:
            rtl, listed = self.listed(filelist, targets, notes)
            return _Found(rtl, _build(**listed), spec)
        walked = [f.name for f in rtl]
        rtl, compile_files = self.with_includes(rtl, notes)
        notes.extend(filter(None, [self.manifest_note()]))
        return _Found(rtl, _build(compile_files=compile_files), spec, walked, left_out)

    def include_names(self) -> list[str]:
        """The include dirs as the task names them (relative to ``root``)."""
        return [d.relative_to(self.root).as_posix() for d in self.include_dirs]

    def walk(self, notes: list[str], exclude: Exclusions
             ) -> tuple[list[SourceFile], list[SourceFile], list[str]]:
        """RTL and spec files below the RTL directory, and what ``exclude`` left out
        (:meth:`~llm4cov.tasks.layout.Exclusions.excluded`, one entry per file)."""
        rtl: list[SourceFile] = []
        spec: list[SourceFile] = []
        left_out: list[str] = []
        taken = []
        for rel, path in files_below(self.base, notes, (*HDL_SUFFIXES, *SPEC_SUFFIXES)):
            if path.suffix.lower() not in (*HDL_SUFFIXES, *SPEC_SUFFIXES):
                continue
            if (why := exclude.excluded(PurePosixPath(rel.as_posix()))) is not None:
                left_out.append(why)
                continue
            taken.append((rel, path))
        check_total([path.stat().st_size for _, path in taken], self.base)
        for rel, path in taken:
            kind = rtl if path.suffix.lower() in HDL_SUFFIXES else spec
            kind.append(SourceFile(name=(self.prefix / rel).as_posix(),
                                   content=read_text(path, notes, str(rel))))
        return rtl, spec, left_out

    def manifest_note(self) -> str | None:
        """A note when the RTL directory has a Bender manifest that was not asked for."""
        manifest = next((self.base / n for n in ("Bender.yml", "Bender.yaml")
                         if (self.base / n).is_file()), None)
        return (None if manifest is None else
                f"{manifest} found, not read (the folder's files are the RTL): -f {manifest} "
                "compiles what it lists")

    def with_includes(self, rtl: list[SourceFile], notes: list[str]
                      ) -> tuple[list[SourceFile], list[str]]:
        """``rtl`` plus the files it `` `include``s from the include dirs outside the RTL
        directory, and the compile list: ``[]`` (every ``.v``/``.sv``), or the walked
        files when files from outside were added (those are only included)."""
        if not self.outside:
            return rtl, []
        texts = {(self.root / f.name).resolve(): f.content for f in rtl}
        added = included(texts, self.outside, lambda p: read_text(p, notes), self.allowed)
        extra = [SourceFile(name=p.relative_to(self.root).as_posix(), content=texts[p])
                 for p in added]
        return [*rtl, *extra], [f.name for f in rtl if f.name.endswith(COMPILED_SUFFIXES)]

    def named_files(self, files: list[Path], notes: list[str]
                    ) -> tuple[list[SourceFile], list[str]]:
        """The RTL of files given by name and its compile list: the files in order, with
        what they include (searched in the include dirs, then next to the files)."""
        fl = FileList(sources=[f.resolve() for f in files], include_dirs=self.include_dirs)
        repo = resolve_repo(fl, lambda p: read_text(p, notes), self.root, self.allowed)
        return repo.rtl, repo.compile_files

    def listed(self, filelist: Path | str, targets: Iterable[str], notes: list[str]
               ) -> tuple[list[SourceFile], dict]:
        """The RTL a filelist or Bender manifest compiles, and its build fields."""
        if is_manifest(filelist):
            fl, more = parse_manifest(filelist, targets)
            notes.extend(more)
        else:
            fl = parse_filelist(filelist, root=self.base.resolve())
        repo = resolve_repo(fl, lambda p: read_text(p, notes), self.root, self.allowed)
        if fl.ignored:
            notes.append(f"filelist options ignored: {' '.join(fl.ignored)}")
        return repo.rtl, {"include_dirs": repo.include_dirs, "defines": fl.defines,
                          "parameters": fl.parameters, "compile_files": repo.compile_files}


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


TASKS_SOURCE = TaskSource("tasks", lambda r: "rtl_files" in r and "source" in r,
                          Task.model_validate, invalid="not a valid task: ")
"""Task JSONL in our schema (``../shared/benchmarks/README.md``): records with
``rtl_files`` and ``source``."""


def dir_task(directory: Path) -> Task:
    """The task of one repo directory of a folder (the ``dirs`` source): every RTL and
    spec file below it (:func:`task_from_dir`), id ``dir/NAME``.

    Raises:
        RecordSkip: ``invalid_repo`` (not a usable repository, or unreadable), with the
            whole problem.
    """
    repo_id = dir_repo_id(directory)
    try:
        return task_from_dir(directory, task_id=repo_id)
    except RecordSkip:
        raise
    except (TaskError, OSError) as exc:
        raise RecordSkip("invalid_repo", str(exc), repo_id) from exc


DIRS_SOURCE = TaskSource("dirs", lambda directory: True, dir_task, directory=True)
"""A directory of repo directories (each a subdirectory with HDL files)."""


def iter_tasks(path: Path | str) -> Iterator[Task]:
    """Tasks of a JSONL file in the schema of ``../shared/benchmarks/README.md``.

    Raises:
        TaskError: a line is not valid JSON or not a valid task (names the line).
    """
    return read_file(path, TASKS_SOURCE)


def load_tasks(path: Path | str, ids: list[str] | None = None) -> list[Task]:
    """All tasks of a JSONL file, or only ``ids`` (in file order; an id matches in the
    spelling of the file or as kept, :func:`~llm4cov.tasks.model.safe_task_id`).

    Raises:
        TaskError: an id is not in the file.
    """
    tasks = list(iter_tasks(path))
    if not ids:
        return tasks
    known = {t.id for t in tasks}
    missing = [i for i in ids if _kept_id(i) not in known]
    if missing:
        raise TaskError(f"{path}: no task with id {', '.join(missing)}")
    wanted = {_kept_id(i) for i in ids}
    return [t for t in tasks if t.id in wanted]


def _kept_id(task_id: str) -> str:
    """``task_id`` as a loaded task keeps it (:func:`safe_task_id`; bad ids match none)."""
    try:
        return safe_task_id(task_id)
    except ValueError:
        return task_id
