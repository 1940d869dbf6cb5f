"""File names that reach the simulator's work dir, and the rule they must follow.

A repository, task or aux file name becomes a path in the work dir's sources folder
and an argument of Verilator; Verilator records it in files make could read, logs and
coverage records carry it. So every such name (``Task.rtl_files``, a reference
testbench's ``aux_files``, ``--aux``, the testbench's own) is refused at load time
unless it is a relative path whose components use only :data:`SAFE_CHARS` and are not
``.``, ``..`` or empty. Names that would collide in one work dir (twice the same name,
a file where another name needs a folder) are refused too. No other name is reserved:
the sources folder holds nothing of the evaluator's but the testbench, which is
renamed (:data:`RESERVED_PREFIX`) when its name is taken, so ``obj/x.d`` or
``llm4cov_pch/llm4cov_pch.h`` are ordinary files there. The static check applies the
same character rule to the file names of `` `line`` directives (:func:`unsafe_chars`).

The set excludes everything make, a shell or a SystemVerilog string gives a meaning to
(``$ ( ) % : ; # * ? [ ] ~ ' " \\`` white space, control characters) and non-ASCII
letters; it keeps what real repositories use, names that look like tool options
(``-o.sv``, ``+define+X=1.sv``) included.

Output paths built from a task id follow one rule too, :func:`task_path_part`: a task id
keeps ``/``, ``.``, ``:``, ``%`` and case (:func:`llm4cov.tasks.model.safe_task_id`), so
it is never a path component itself.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

#: The characters a work-dir file name may use (besides ``/`` between components).
SAFE_CHARS = "A-Z a-z 0-9 _ . - + = , @"
_SAFE = re.compile(r"[A-Za-z0-9_.+=,@-]+")
#: The prefix of the name a testbench is renamed to when its own is taken.
RESERVED_PREFIX = "llm4cov_"


def unsafe_chars(name: str) -> str | None:
    """Why ``name`` holds characters outside :data:`SAFE_CHARS` and ``/`` (the first
    one, shown escaped), or None when it holds none."""
    bad = next((c for c in name if c != "/" and not _SAFE.fullmatch(c)), None)
    if bad is None:
        return None
    return f"holds {bad!r}: only {SAFE_CHARS} and / are allowed in file names"


def work_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a file of the work dir's sources folder (see the module
    docstring), or None when it can."""
    if not name:
        return "is empty"
    if why := unsafe_chars(name):
        return why
    if name.startswith("/") or any(p in ("", ".", "..") for p in name.split("/")):
        return "must be a relative path without empty, '.' or '..' components"
    return length_problem(name)


#: The longest name (bytes), path component and folder depth a work-dir name may have:
#: a component past the file system's 255 bytes (less the renamed testbench's prefix)
#: or a path past a few KiB failed every use of its task (a twenty-seventh red team:
#: ``File name too long``, a bench stopped before its first task).
MAX_NAME, MAX_PART, MAX_DEPTH = 1024, 200, 32


def length_problem(name: str) -> str | None:
    """Why ``name`` (a relative path) is too long or too deep (:data:`MAX_NAME`,
    :data:`MAX_PART`, :data:`MAX_DEPTH`), or None."""
    parts = name.split("/")
    if len(name) > MAX_NAME or len(parts) > MAX_DEPTH:
        return f"is longer than {MAX_NAME} characters or {MAX_DEPTH} folders deep"
    if any(len(p) > MAX_PART for p in parts):
        return f"has a part longer than {MAX_PART} characters"
    return None


def source_arg(name: str) -> str:
    """A work-dir file name as a positional argument of any tool (Verilator, Yosys'
    ``read_slang``/``read_verilog``): ``./-o.sv`` for a name that would read as an
    option (``-``, ``+``), the name itself otherwise. Every command line and script
    that names a task's file goes through it (a twenty-ninth red team: an empty RTL file
    named ``-DEASY=.sv`` defined a macro for the formal tools only, so reachable points
    were "proven unreachable")."""
    return f"./{name}" if name.startswith(("-", "+")) else name


def collisions(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that collide in one folder: one given twice, or a
    file name that another name needs as a folder (``a.sv`` and ``a.sv/b.sv``)."""
    seen: set[str] = set()
    clashes: list[str] = []
    for name in names:
        if name in seen:
            clashes.append(name)
        seen.add(name)
    folders = {str(p) for n in seen for p in PurePosixPath(n).parents if str(p) != "."}
    clashes += sorted(seen & folders)
    return list(dict.fromkeys(clashes))


def name_errors(what: str, names: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """One message per unusable name in ``names`` (``what``: the kind of file, for the
    message), then one per name that collides with another of ``names`` or with the
    names already ``taken`` (checked before); empty when all can join them in one work
    dir."""
    names, taken = list(names), list(taken)
    errors = [f"{what} name {n[:120]!r} {why}" for n in names if (why := work_name_problem(n))]
    mine = set(names)
    errors += [f"{what} name {n!r} collides with another file of the same work dir"
               for n in collisions([*taken, *names])
               if n in mine or any(m.startswith(n + "/") for m in mine)]
    return errors



#: The longest readable part of a :func:`task_path_part` name (the id's hash follows).
TASK_SLUG_CHARS = 64
#: Hex digits of the id's SHA-256 that end every :func:`task_path_part` name.
TASK_HASH_CHARS = 16
_NOT_IN_SLUG = re.compile(r"[^A-Za-z0-9_-]+")


def task_path_part(task_id: str) -> str:
    """The one file or folder name an output written for ``task_id`` gets (today: the
    task's folder of ``bench --coverage-html``, ``RUN/coverage/<name>/``).

    ``<slug>-<hash>``: the slug is the id with every run of characters outside
    ``A-Z a-z 0-9 _ -`` made one ``_``, cut to :data:`TASK_SLUG_CHARS` characters,
    without leading ``-`` (not an option to a tool), ``_`` when nothing is left (to
    read; ``local/mux2`` -> ``local_mux2``, ``..`` -> ``_``); the hash is the first
    :data:`TASK_HASH_CHARS` hex digits of the SHA-256 of the exact id (UTF-8), so
    distinct ids give distinct names (64 bits: ids that differ only by ``/`` vs ``_``,
    by case, or past the slug's cut, as well), also on a case-insensitive file system
    (the hash is lowercase and differs). The name is never empty, ``.`` or ``..``, has
    no ``/``, ``.`` or ``%`` (nothing for a shell, a URL or make to read), is at most 81
    characters, and always ends in ``-`` + 16 hex digits, which no name the tool writes
    itself has (``links.json``, ``index.html``, ...): it cannot take one's place.
    """
    slug = _NOT_IN_SLUG.sub("_", task_id)[:TASK_SLUG_CHARS].lstrip("-") or "_"
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{slug}-{digest[:TASK_HASH_CHARS]}"
