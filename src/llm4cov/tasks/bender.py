"""Bender manifests (``Bender.yml`` of pulp-platform/bender): what a package compiles.

A manifest is plain YAML, read with PyYAML; the schema is Bender's manual ("Sources",
"Targets"). Understood:

- ``sources``: a list whose entries are file paths (relative to the manifest; glob
  patterns such as ``src/*.sv`` expand, sorted) or groups, mappings with ``files`` (a
  nested list of the same form), ``include_dirs``, ``defines`` (``NAME: value``, ``~``
  for a macro without value) and ``target`` (an expression: a name, ``*``,
  ``all(...)``, ``any(...)``, ``not(...)``, case-insensitive);
- ``export_include_dirs`` (top level).

A group whose target does not match the active targets is skipped with everything
below it. The active targets are :data:`DEFAULT_TARGETS` plus those asked for
(``--target``); ``test`` is not among the defaults, so a package's testbenches stay
out. Verilator compiles one unit, so a group's include dirs and defines apply to the
whole compile (Bender scopes them to the group). Not supported, and said in a note:
``dependencies`` (other packages are not fetched: their modules are missing),
VHDL files, target-filtered entries of ``include_dirs``/``defines``
(non-string entries), and any other key (``vendor_package``, ``plugins``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from llm4cov.tasks.filelist import FileList
from llm4cov.tasks.hdl import HDL_SUFFIXES
from llm4cov.tasks.model import TaskError
from llm4cov.tasks.reading import bounded_bytes

MANIFEST_NAMES = ("bender.yml", "bender.yaml")
"""File names (lower case) read as a Bender manifest rather than a filelist."""
DEFAULT_TARGETS = ("simulation", "verilator")
"""Targets active by default (an RTL simulation with Verilator)."""
_KNOWN_KEYS = {"package", "sources", "export_include_dirs", "dependencies"}
_VHDL = (".vhd", ".vhdl")
_TOKEN = re.compile(r"\s*(\*|[A-Za-z0-9_.\-]+|[(),])")


def is_manifest(path: Path | str) -> bool:
    """Whether ``path`` names a Bender manifest (by its file name)."""
    return Path(path).name.lower() in MANIFEST_NAMES


def parse_manifest(path: Path | str, targets: Iterable[str] = ()) -> tuple[FileList, list[str]]:
    """The files, include dirs and defines of the manifest at ``path`` (absolute paths)
    with ``targets`` active besides :data:`DEFAULT_TARGETS`, and notes on what was not
    supported (see the module docstring).

    Raises:
        TaskError: the manifest cannot be read, is not YAML, or an entry has the wrong
            shape (the message names the entry).
    """
    import yaml  # only where a manifest is read

    path = Path(path)
    try:
        data = yaml.safe_load(bounded_bytes(path).decode("utf-8"))
    except OSError as exc:
        raise TaskError(f"{path}: cannot read the Bender manifest ({exc.strerror})") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: not a valid Bender manifest: {exc}") from exc
    if not isinstance(data, dict):
        raise TaskError(f"{path}: not a valid Bender manifest (expected a mapping)")
    reader = _Reader(path, {t.lower() for t in (*DEFAULT_TARGETS, *targets)})
    for d in _strings(data.get("export_include_dirs") or [], path, "export_include_dirs"):
        reader.fl.include_dirs.append((path.parent / d).resolve())
    reader.entries(data.get("sources") or [], "sources")
    if data.get("dependencies"):
        reader.notes.append(f"{path.name}: dependencies not fetched (their modules are "
                            f"missing unless the folder has them): "
                            f"{', '.join(map(str, data['dependencies']))}")
    other = sorted(set(data) - _KNOWN_KEYS)
    if other:
        reader.notes.append(f"{path.name}: keys not supported, ignored: {', '.join(other)}")
    return reader.fl, reader.notes


class _Reader:
    """Walks ``sources`` into a :class:`FileList`, collecting notes."""

    def __init__(self, path: Path, active: set[str]):
        self.path, self.base, self.active = path, path.parent, active
        self.fl = FileList()
        self.notes: list[str] = []

    def entries(self, items: object, where: str) -> None:
        if not isinstance(items, list):
            raise TaskError(f"{self.path}: {where}: expected a list")
        for n, item in enumerate(items):
            if isinstance(item, str):
                self.file(item)
            elif isinstance(item, dict):
                self.group(item, f"{where}[{n}]")
            else:
                raise TaskError(f"{self.path}: {where}[{n}]: expected a file or a group")

    def group(self, group: dict, where: str) -> None:
        target = group.get("target")
        if target is not None and not matches(str(target), self.active):
            return
        for d in group.get("include_dirs") or []:
            if isinstance(d, str):
                self.fl.include_dirs.append((self.base / d).resolve())
            else:
                self.notes.append(f"{self.path.name}: {where}: include_dirs entry {d!r} "
                                  "not supported, ignored")
        defines = group.get("defines") or {}
        if not isinstance(defines, dict):
            raise TaskError(f"{self.path}: {where}: defines: expected a mapping")
        for name, value in defines.items():
            if isinstance(value, dict | list):
                self.notes.append(f"{self.path.name}: {where}: define {name} with a target "
                                  "filter not supported, ignored")
                continue
            self.fl.defines[str(name)] = "" if value is None else _yaml_text(value)
        self.entries(group.get("files") or [], f"{where}.files")

    def file(self, name: str) -> None:
        paths = (sorted(self.base.glob(name)) if any(c in name for c in "*?[")
                 else [self.base / name])
        for p in paths:
            if p.suffix.lower() in HDL_SUFFIXES:
                self.fl.sources.append(p.resolve())
            else:
                kind = "VHDL file" if p.suffix.lower() in _VHDL else "file of another language"
                self.notes.append(f"{self.path.name}: {kind} {name} left out")


def _yaml_text(value: object) -> str:
    """A define's value as written (YAML ``true`` -> ``1``, like Bender's ``+define+``)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _strings(items: object, path: Path, key: str) -> list[str]:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise TaskError(f"{path}: {key}: expected a list of paths")
    return items


def matches(expression: str, active: set[str]) -> bool:
    """Whether the Bender target ``expression`` holds for the ``active`` targets (lower
    case): ``*``, a name, ``all(...)``, ``any(...)``, ``not(...)``, parentheses.

    Raises:
        TaskError: the expression does not parse.
    """
    tokens = _TOKEN.findall(expression)
    if "".join(tokens) != re.sub(r"\s+", "", expression):
        raise TaskError(f"target expression {expression!r}: unexpected character")
    pos = 0

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise TaskError(f"target expression {expression!r}: incomplete")
        pos += 1
        return tokens[pos - 1]

    def expr() -> bool:
        tok = take()
        if tok == "(":
            value = expr()
            if take() != ")":
                raise TaskError(f"target expression {expression!r}: expected ')'")
            return value
        if tok.lower() in ("all", "any", "not") and pos < len(tokens) and tokens[pos] == "(":
            take()
            args = [expr()]
            while (sep := take()) == ",":
                args.append(expr())
            if sep != ")":
                raise TaskError(f"target expression {expression!r}: expected ')'")
            op = tok.lower()
            if op == "not" and len(args) != 1:
                raise TaskError(f"target expression {expression!r}: not() takes one argument")
            return not args[0] if op == "not" else (all(args) if op == "all" else any(args))
        if tok in "(),":
            raise TaskError(f"target expression {expression!r}: unexpected {tok!r}")
        return tok == "*" or tok.lower() in active

    value = expr()
    if pos != len(tokens):
        raise TaskError(f"target expression {expression!r}: unexpected {tokens[pos]!r}")
    return value
