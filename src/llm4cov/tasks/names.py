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
"""

from __future__ import annotations

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
    return None


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
    errors = [f"{what} name {n!r} {why}" for n in names if (why := work_name_problem(n))]
    mine = set(names)
    errors += [f"{what} name {n!r} collides with another file of the same work dir"
               for n in collisions([*taken, *names])
               if n in mine or any(m.startswith(n + "/") for m in mine)]
    return errors

