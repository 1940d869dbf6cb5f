"""Verilator/VCS-style filelists (``-f FILE``) and the tool arguments they hold.

Understood (Verilator and VCS/Xcelium spellings): source files in order, ``+incdir+A+B``,
``-I<dir>``, ``-incdir DIR``, ``+define+N=V+M``, ``-D<N>[=V]``, ``-define N=V``,
``-G<N>=<V>`` and ``-pvalue+N=V`` (parameter overrides), ``-y DIR`` with
``+libext+.v+.sv`` (a library directory: a missing module ``m`` is read from
``DIR/m<ext>``), ``-v FILE`` (a library file), nested ``-f``/``-F FILE``, ``//``, ``/*
*/`` and ``#`` comments, quotes, ``$VAR``/``${VAR}``. Every relative path is relative
to the directory of the list that names it (also for ``-f``, unlike Verilator, where
``-f`` paths are relative to the working directory: a list is read the same from
anywhere). Given a repository root, every path (file, nested list, ``-y``/``-v``,
include dir), after resolving links, must lie below it: it is refused before it is read.
Other options are ignored and listed in :attr:`FileList.ignored`; the
options that take a value (``--top-module X``, ``-o X``, ...) skip it.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from llm4cov.tasks.hdl import include_names, module_decls
from llm4cov.tasks.model import SourceFile, TaskError
from llm4cov.tasks.reading import bounded_bytes

MAX_DEPTH = 16
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|^\s*#[^\n]*", re.DOTALL | re.MULTILINE)
_WITH_VALUE = frozenset({
    "--top-module", "-top", "--top", "-o", "-Mdir", "--Mdir", "--prefix", "-CFLAGS",
    "-LDFLAGS", "-timescale", "--timescale", "-j", "--build-jobs", "-l", "-work",
    "-MAKEFLAGS", "--x-assign", "--x-initial", "-covtest", "-seed", "-coverage", "-load",
})


@dataclass
class FileList:
    """What a filelist (or a tool command line) says, with absolute paths."""

    sources: list[Path] = field(default_factory=list)
    include_dirs: list[Path] = field(default_factory=list)
    defines: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)
    library_dirs: list[Path] = field(default_factory=list)
    library_files: list[Path] = field(default_factory=list)
    libext: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def parse_filelist(path: Path | str, into: FileList | None = None, depth: int = 0,
                   root: Path | None = None) -> FileList:
    """Read the filelist at ``path`` (see the module docstring); nested lists must lie
    below ``root`` when given.

    Raises:
        TaskError: the list or a nested list cannot be read, nesting deeper than
            ``MAX_DEPTH``, an option lacks its value, or a nested list lies outside
            ``root``.
    """
    path = Path(path)
    if depth > MAX_DEPTH:
        raise TaskError(f"{path}: filelists nested deeper than {MAX_DEPTH} (a cycle?)")
    try:
        text = bounded_bytes(path).decode("utf-8", errors="replace")
    except OSError as exc:
        raise TaskError(f"{path}: cannot read the filelist ({exc.strerror})") from exc
    try:
        tokens = shlex.split(_COMMENT.sub(" ", text), posix=True)
    except ValueError as exc:
        raise TaskError(f"{path}: {exc}") from exc
    return parse_args(tokens, path.parent.resolve(), into, depth, origin=str(path), root=root)


def parse_args(
    tokens: Iterable[str],
    base: Path,
    into: FileList | None = None,
    depth: int = 0,
    origin: str = "command line",
    root: Path | None = None,
) -> FileList:
    """Interpret tool arguments (filelist tokens or a simulator command line) with
    relative paths taken from ``base`` (nested lists must lie below ``root``, if given).

    Raises:
        TaskError: an option lacks its value, or a nested list fails (see
            :func:`parse_filelist`).
    """
    fl = into if into is not None else FileList()
    items = iter(os.path.expandvars(t) for t in tokens)

    def value(option: str) -> str:
        try:
            return next(items)
        except StopIteration:
            raise TaskError(f"{origin}: {option} needs a value") from None

    def at(p: str) -> Path:
        return (base / p).resolve()

    for tok in items:
        if tok.startswith("+incdir+"):
            fl.include_dirs += [at(d) for d in tok[len("+incdir+"):].split("+") if d]
        elif tok.startswith("+define+"):
            for d in filter(None, tok[len("+define+"):].split("+")):
                _define(fl.defines, d)
        elif tok.startswith("+libext+"):
            fl.libext += [e for e in tok[len("+libext+"):].split("+") if e]
        elif tok.startswith("-pvalue+"):
            _define(fl.parameters, tok[len("-pvalue+"):])
        elif tok.startswith("-I") and len(tok) > 2:
            fl.include_dirs.append(at(tok[2:]))
        elif tok.startswith("-D") and len(tok) > 2:
            _define(fl.defines, tok[2:])
        elif tok.startswith("-G") and len(tok) > 2:
            _define(fl.parameters, tok[2:])
        elif tok in ("-incdir", "-I"):
            fl.include_dirs.append(at(value(tok)))
        elif tok == "-define":
            _define(fl.defines, value(tok))
        elif tok == "-y":
            fl.library_dirs.append(at(value(tok)))
        elif tok == "-v":
            fl.library_files.append(at(value(tok)))
        elif tok in ("-f", "-F"):
            nested = at(value(tok))
            if root is not None:
                inside_root(nested, root.resolve(), f"{origin}: {tok}")
            parse_filelist(nested, fl, depth + 1, root)
        elif tok.startswith(("-", "+")):
            fl.ignored.append(tok)
            if tok in _WITH_VALUE:
                fl.ignored.append(value(tok))
        else:
            fl.sources.append(at(tok))
    return fl


def _define(table: dict[str, str], text: str) -> None:
    name, _, val = text.partition("=")
    table[name] = val


def parse_assignments(items: Iterable[str], what: str) -> dict[str, str]:
    """``NAME[=VALUE]`` strings (``--define``, ``--param``) as a dict.

    Raises:
        TaskError: an item has no name.
    """
    table: dict[str, str] = {}
    for item in items:
        if not item.partition("=")[0].strip():
            raise TaskError(f"{what} {item!r}: expected NAME[=VALUE]")
        _define(table, item.strip())
    return table


@dataclass
class RepoFiles:
    """A filelist resolved into repository files: names relative to ``root``."""

    root: Path
    rtl: list[SourceFile]
    compile_files: list[str]
    include_dirs: list[str]


def inside_root(path: Path, root: Path | tuple[Path, ...], what: str) -> Path:
    """``path`` with its links resolved, checked to lie below ``root`` (resolved), or
    below one of several allowed roots.

    Raises:
        TaskError: it lies outside (its text would reach logs and prompts).
    """
    real = path.resolve()
    roots = root if isinstance(root, tuple) else (root,)
    if not any(real.is_relative_to(r) for r in roots):
        where = " or ".join(str(r) for r in roots)
        raise TaskError(f"{what} {path} lies outside the repository root {where} (a "
                        "filelist may name only files below it; give the root as the RTL "
                        "directory)")
    return real


def resolve_repo(fl: FileList, read: Callable[[Path], str], root: Path,
                 allowed: tuple[Path, ...] = ()) -> RepoFiles:
    """The files a filelist compiles: its sources and ``-v`` files in order, the ``-y``
    library files of the modules instantiated but not declared, and every file reached
    through `` `include`` (searched in the include dirs, then next to the sources).
    Every one of them, the ``-y`` and include dirs must lie below ``root``, or below one
    of the ``allowed`` folders when given (links resolved; checked before reading);
    ``root`` names the files (every allowed folder lies below it).

    Raises:
        TaskError: a listed file is missing, or a path lies outside ``root``.
    """
    root = root.resolve()
    inside = tuple(a.resolve() for a in allowed) or root
    for d in [*fl.include_dirs, *fl.library_dirs]:
        inside_root(d, inside, "filelist directory")
    sources = list(dict.fromkeys(inside_root(p, inside, "filelist file")
                                 for p in [*fl.sources, *fl.library_files]))
    for p in sources:
        if not p.is_file():
            raise TaskError(f"filelist names a missing file: {p}")
    texts = {p: read(p) for p in sources}
    sources += _library_modules(fl, texts, read, inside)
    included(texts, [*fl.include_dirs, *dict.fromkeys(p.parent for p in sources)], read,
             inside)
    every = [*texts]

    def name(p: Path) -> str:
        return p.relative_to(root).as_posix()

    rtl = [SourceFile(name=name(p), content=texts[p]) for p in every]
    return RepoFiles(
        root=root,
        rtl=rtl,
        compile_files=[name(p) for p in sources],
        include_dirs=[name(d) if d != root else "." for d in fl.include_dirs],
    )


def _library_modules(fl: FileList, texts: dict[Path, str], read: Callable[[Path], str],
                     root: Path | tuple[Path, ...]) -> list[Path]:
    """``-y`` files of the modules instantiated but not declared, until none is missing."""
    found: list[Path] = []
    exts = fl.libext or [".v", ".sv"]
    for _ in range(MAX_DEPTH * 4):
        decls = module_decls(  # absolute paths as names below "/", for the include dirs
            [SourceFile(name=str(p).lstrip("/"), content=t) for p, t in texts.items()],
            [str(d).lstrip("/") for d in fl.include_dirs], fl.defines)
        declared = {d.name for d in decls}
        missing = {m for d in decls for m, _ in d.instances} - declared
        new = next((p for m in sorted(missing) for d in fl.library_dirs for e in exts
                    if (p := d / f"{m}{e}").is_file() and p.resolve() not in texts), None)
        if new is None:
            return found
        new = inside_root(new, root, "filelist library file")
        texts[new] = read(new)
        found.append(new)
    return found


def included(texts: dict[Path, str], dirs: list[Path], read: Callable[[Path], str],
             root: Path | tuple[Path, ...]) -> list[Path]:
    """Add to ``texts`` (real path -> text) every file reached by `` `include`` from one
    of them (first match in ``dirs``; it must lie below ``root`` or one of several
    roots, links resolved) and return the added paths.

    Raises:
        TaskError: an included file lies outside ``root``.
    """
    added: list[Path] = []
    queue = list(texts)
    while queue:
        for inc in include_names(texts[queue.pop()]):
            hit = next((d / inc for d in dirs if (d / inc).is_file()), None)
            if hit is not None and hit.resolve() not in texts:
                real = inside_root(hit, root, "included file")
                texts[real] = read(real)
                added.append(real)
                queue.append(real)
    return added
