"""Whether pyslang's elaboration of the testbench's text is Verilator's: the generate
blocks it builds and the parameter values of the instances it makes, compared with
Verilator's own elaboration of the same view (``docs/stimulus.md``, "A parameter
change").

A value pyslang and Verilator may evaluate differently (a user function, an ``x``, a
select: :func:`~llm4cov.sim.safety.stimulus_only.unsure_overrides`) given to a wrapper,
an interface or in a testbench generate condition was refused outright, even where both
tools agree (a bit select of a parameter in a generate condition). Every other check
reads pyslang's elaboration, so the value may stand when that elaboration is the one
Verilator runs: the same generate branches built in the testbench's text and the same
parameter values in every instance the testbench's text makes (what the DUT's own
elaboration depends on; the RTL's own text is elaborated alike by both).

A generate block is placed by where it lies, not by its name: the branches of one ``if``
share a name (``genblk1``), so Verilator building the ``if`` branch where pyslang builds
the ``else`` one is seen only by place. Places are byte offsets of the view; Verilator's
column after a block comment on its line is not the byte's, so there only the line is
used, and a place that could be two blocks of one name settles nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyslang import ast

if TYPE_CHECKING:
    from llm4cov.sim.safety.drivers import Elaboration

#: pyslang's side, a JSON value (it crosses from the bounded child that elaborates):
#: ``{"blocks": [[path, start, end, built], ...], "arrays": [[path, start, end], ...],
#: "instances": {path: {parameter: value}}}``, offsets in bytes of the testbench's text.
TbShape = dict[str, Any]

_INDEX = re.compile(r"\[-?\d+\]$")


@dataclass(frozen=True)
class ElaboratedShape:
    """What a simulator's own elaboration built under its top: ``blocks``, each generate
    block as ``(path, line, column)`` (a dotted path from the top, ``tb.g[1]``; the
    1-based line and column the simulator places it at in the text it was given), and
    ``instances``, each module or interface instance as ``(path, line, column,
    {parameter: value})`` (values in the simulator's notation, ``32'h4``)."""

    blocks: tuple[tuple[str, int, int], ...]
    instances: tuple[tuple[str, int, int, dict[str, str]], ...]


def tb_shape(elab: Elaboration, value: Callable[[Any], str]) -> TbShape:
    """The generate blocks (built or not) and generate loops whose syntax lies in the
    testbench's text, and the instances it makes (an instance array as one, by the
    array's path) with ``{parameter: value(parameter symbol)}``."""
    origin = elab.sources.getFullyOriginalLoc
    blocks: list[list[Any]] = []
    loops: list[list[Any]] = []
    arrays: set[str] = set()
    instances: dict[str, dict[str, str]] = {}

    def span(sym: Any) -> list[int] | None:
        syn = sym.syntax
        if syn is None or not elab.in_tb(syn.sourceRange.start):
            return None
        return [origin(syn.sourceRange.start).offset, origin(syn.sourceRange.end).offset]

    for sym in elab.symbols():
        if isinstance(sym, ast.GenerateBlockSymbol) and (at := span(sym)):
            blocks.append([sym.hierarchicalPath, *at, not sym.isUninstantiated])
        elif isinstance(sym, ast.GenerateBlockArraySymbol) and (at := span(sym)):
            loops.append([sym.hierarchicalPath, *at])
        elif isinstance(sym, ast.InstanceArraySymbol):
            arrays.add(sym.hierarchicalPath)
        elif isinstance(sym, ast.InstanceSymbol) and "." in sym.hierarchicalPath \
                and elab.in_tb(sym.location):
            path = sym.hierarchicalPath
            while (outer := _INDEX.sub("", path)) != path and outer in arrays:
                path = outer
            instances.setdefault(path, {p.name: value(p) for p in sym.body.parameters})
    return {"blocks": blocks, "arrays": loops, "instances": instances}


def disagreements(mine: TbShape, theirs: ElaboratedShape, text: str, tb_offset: int,
                  tb_name: str) -> list[str]:
    """Where Verilator's elaboration ``theirs`` of ``text`` (the view, `` `line``
    directives blanked; the testbench's part from character ``tb_offset``) differs from
    pyslang's ``mine`` (:func:`tb_shape`) in the testbench's text: a generate block one
    tool builds and the other does not (or one the check cannot place), an instance one
    tool makes and the other does not, a parameter value that differs (integral values
    compared as integers, a negative one as its two's complement at Verilator's width).
    Empty when they agree."""
    data = text.encode("utf-8", "surrogateescape")
    starts = [0] + [m.end() for m in re.finditer(b"\n", data)]
    base = len(text[:tb_offset].encode("utf-8", "surrogateescape"))
    found: list[str] = []

    def place(line: int, col: int) -> tuple[int, int, bool] | None:
        """The tb-relative offsets a place may mean, and whether it is exact."""
        if not 0 < line <= len(starts):
            return None
        start = starts[line - 1]
        end = starts[line] if line < len(starts) else len(data)
        if b"/*" in data[start:end]:  # Verilator's column is not the byte's there
            return start - base, end - base, False
        return start + col - 1 - base, start + col - base, True

    matched: set[int] = set()
    candidates = [(b[0], b[1], b[2], b[3], i) for i, b in enumerate(mine["blocks"])] + \
        [(a[0], a[1], a[2], True, -1) for a in mine["arrays"]]
    for path, line, col in theirs.blocks:
        at = place(line, col)
        if at is None or at[1] <= 0:
            continue  # in the RTL's text
        lo, hi, _ = at
        hits = [c for c in candidates if c[0] == path and c[1] < hi and lo < c[2]]
        if len(hits) != 1:
            found.append(f"{tb_name}: Verilator builds a generate block `{path}` (line "
                         f"{line} of the view) the check "
                         + ("cannot tell from another" if hits else "does not build"))
        elif not hits[0][3]:
            found.append(f"{tb_name}: Verilator builds the generate block `{path}` the "
                         "check's elaboration leaves out")
        elif hits[0][4] >= 0:
            matched.add(hits[0][4])
    found += [f"{tb_name}: the check's elaboration builds the generate block `{b[0]}` "
              "Verilator leaves out" for i, b in enumerate(mine["blocks"])
              if b[3] and i not in matched]
    theirs_made = {path: values for path, line, col, values in theirs.instances
                   if (at := place(line, col)) is not None and at[1] > 0}
    for path in sorted(set(theirs_made) ^ set(mine["instances"])):
        tool = "Verilator" if path in theirs_made else "the check's elaboration"
        found.append(f"{tb_name}: {tool} alone makes the instance `{path}`")
    for path in sorted(set(theirs_made) & set(mine["instances"])):
        ours, sims = mine["instances"][path], theirs_made[path]
        differ = [f"{name} = {sims.get(name, '?')} (the check's: {ours.get(name, '?')})"
                  for name in sorted(set(ours) | set(sims))
                  if not _same(ours.get(name), sims.get(name))]
        if differ:
            found.append(f"{tb_name}: Verilator elaborates `{path}` with other parameter "
                         f"values than the check: {'; '.join(differ)}")
    return found


def _same(ours: str | None, theirs: str | None) -> bool:
    """Whether pyslang's value (``stimulus_only._value``: an integer, a type, or
    pyslang's text) is Verilator's constant (``32'hfffffffe``, ``\\"ab\\"``)."""
    if ours is None or theirs is None:
        return False
    match = re.fullmatch(r"(\d+)'s?([hdbo])([0-9a-fA-F_]+)", theirs)
    if match is None:
        return ours == theirs.replace('\\"', '"')
    width = int(match.group(1))
    value = int(match.group(3).replace("_", ""), {"h": 16, "d": 10, "b": 2, "o": 8}[match.group(2)])
    try:
        mine = int(ours)
    except ValueError:
        return False
    return mine == value or (mine < 0 and mine + (1 << width) == value)


def blank_line_directives(text: str, markers: Sequence[Any]) -> str:
    """``text`` with each `` `line`` directive at ``markers`` (``vlex.LineMarker``: their
    offsets) replaced by spaces, so Verilator places everything in ``text`` itself; line
    count and offsets unchanged."""
    out = list(text)
    for m in markers:
        end = text.find("\n", m.offset)
        end = len(text) if end < 0 else end
        out[m.offset:end] = " " * (end - m.offset)
    return "".join(out)
