"""Which files of a repository folder are the design (issue 23, "real repo layouts").

Real IP repositories keep their testbenches beside the RTL: ``test/``, ``tb/``,
``sim/``, ``verification/`` folders, or a ``*_tb.sv`` next to the design. Read as RTL,
such a file becomes the top module and the run stops. So a folder walk leaves out, by
default:

- every folder named like :data:`TEST_DIRS` (case-insensitive, at any depth);
- every file whose modules are all *testbenches of their own*: a module without ports
  that instantiates a module declared in the RTL (a design top always has ports), except
  the module ``--top`` names.

``--exclude-dir GLOB`` leaves out more (a folder's name or relative path, or a file's
relative path, matched with :func:`fnmatch.fnmatch`); ``--no-default-excludes`` turns
the defaults off. Files named explicitly (``gen a.sv b.sv``, a filelist, a Bender
manifest) are never left out. What was left out is said in one note (:func:`note`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import PurePosixPath

from llm4cov.tasks.hdl import ModuleDecl

TEST_DIRS = frozenset({"test", "tests", "tb", "tbs", "testbench", "testbenches", "sim",
                       "simulation", "verif", "verification", "dv"})
"""Folder names left out of a folder walk by default (verification code, not design)."""


@dataclass(frozen=True)
class Exclusions:
    """What a folder walk leaves out: ``patterns`` (``--exclude-dir``, globs) and, with
    ``defaults``, the :data:`TEST_DIRS` folders and testbench-looking files."""

    patterns: tuple[str, ...] = ()
    defaults: bool = True

    def excluded(self, rel: PurePosixPath) -> str | None:
        """Why the file at ``rel`` (relative to the walked folder) is left out: the
        shallowest excluded folder as ``dir/``, or the file itself when a pattern names
        it; None when it is kept."""
        parts = rel.parts
        for depth in range(1, len(parts)):
            folder = PurePosixPath(*parts[:depth])
            name = parts[depth - 1]
            if (self.defaults and name.lower() in TEST_DIRS) or self._matches(folder, name):
                return f"{folder.as_posix()}/"
        return rel.as_posix() if self._matches(rel, rel.name) else None

    def _matches(self, path: PurePosixPath, name: str) -> bool:
        return any(fnmatch(name, p) or fnmatch(path.as_posix(), p.rstrip("/"))
                   for p in self.patterns)


def testbench_files(decls: Sequence[ModuleDecl], keep: str | None = None) -> dict[str, str]:
    """``file -> module`` for the files whose every module is a testbench of its own: no
    ports, and it instantiates another module declared in ``decls``. ``keep`` (the
    ``--top`` module) is never one."""
    declared = {d.name for d in decls}
    by_file: dict[str, list[ModuleDecl]] = {}
    for d in decls:
        by_file.setdefault(d.file, []).append(d)
    found = {}
    for file, modules in by_file.items():
        benches = [d for d in modules if not d.has_ports and d.name != keep
                   and any(m in declared and m != d.name for m, _ in d.instances)]
        if benches and len(benches) == len(modules):
            found[file] = benches[0].name
    return found


def note(left_out: Iterable[str], benches: dict[str, str]) -> str | None:
    """The one-line note naming what a folder walk left out (folders with their file
    counts, files, testbench files with their module); None when nothing was."""
    counts: dict[str, int] = {}
    for why in left_out:
        counts[why] = counts.get(why, 0) + 1
    items = [f"{w} ({n} file{'s' * (n > 1)})" if w.endswith("/") else w
             for w, n in counts.items()]
    items += [f"{f} (module {m}: no ports, instantiates the design)" for f, m in benches.items()]
    if not items:
        return None
    return ("left out as verification code, not RTL: " + ", ".join(items)
            + " (--exclude-dir GLOB leaves out more; --no-default-excludes keeps them)")
