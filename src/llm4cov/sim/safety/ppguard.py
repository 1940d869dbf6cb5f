"""The evaluator's pyslang parses of an untrusted testbench, run first in a limited child.

The evaluator parses the raw testbench in its own process: alone and without macros
(:func:`llm4cov.tasks.hdl.parse_tree`: structure checks, hints), with the RTL and
Verilator's macros (:func:`llm4cov.sim.safety.precheck.diagnose`), and Verilator's view of the
sources, its RTL part and its testbench part (:mod:`llm4cov.sim.analysis.structure`). Macro
expansion has no bound there, and pyslang takes branches Verilator skips (no
``VERILATOR`` macro in the first view, ``__slang__`` in all of them). No parse opens an
include outside the work dir (:mod:`llm4cov.tasks.includes`: the static check refuses
the testbench before this child runs). :mod:`llm4cov.sim.safety.static_check` runs this module
under memory and CPU limits first, in the OS sandbox when the check has one; when it
finishes, the same parses in the evaluator are known to be bounded.

Usage (cwd: a dir laid out like the work dir)::

    python -m llm4cov.sim.safety.ppguard '{"tb": "tb.sv", "rtl": [...], "include_dirs": [...],
                                    "defines": {...}, "compile_files": [...], "top": "dut",
                                    "view": ["../llm4cov_pp.sv", 1234]}'

(``view``: Verilator's output and where its testbench part starts; null: none). Prints
one JSON line: the files outside the cwd that a parse read (none: the include rule
holds for everything parsed here).

The RTL alone is checked the same way, once per process and RTL
(:func:`llm4cov.tasks.hdl.check_bounded` calls :func:`rtl_bounds`): every view this
process parses it in (each file alone, the design with the task's macros, the
pre-check's with Verilator's, as SystemVerilog 2017 and 2023), in one bounded child
for many RTL sets (``python -m llm4cov.sim.safety.ppguard --batch ...``,
:class:`llm4cov.sim.safety.bounded.Batch`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pyslang

from llm4cov.sim.safety import precheck
from llm4cov.sim.safety.bounded import Batch, BatchLimits, serve
from llm4cov.tasks import hdl
from llm4cov.tasks.hdl import VIRTUAL_ROOT, define_args, parse_tree
from llm4cov.tasks.model import SourceFile

#: Bounds of one RTL set's views (the guard's:
#: :class:`llm4cov.sim.safety.static_check.CheckLimits`).
RTL_LIMITS = BatchLimits(cpu_s=10, memory_bytes=512 << 20)


def outside_files(spec: dict, root: Path) -> list[str]:
    """Run every parse; the files outside ``root`` that the parses alone read."""
    def read(name: str) -> SourceFile:
        text = (root / name).read_text(encoding="utf-8", errors="surrogateescape")
        return SourceFile(name=name, content=text)

    tb = read(spec["tb"])
    trees = [parse_tree(tb.content, tb.name)]
    if spec.get("view"):
        file, offset = spec["view"]
        text = (root / file).read_text(encoding="utf-8", errors="surrogateescape")
        trees += [parse_tree(text[:offset], "llm4cov_rtl.sv"), parse_tree(text[offset:], tb.name)]
    real_root = os.path.realpath(root)
    outside = []
    for tree in trees:
        for buffer in tree.sourceManager.getAllBuffers():
            path = str(tree.sourceManager.getFullPath(buffer))
            if path.startswith(VIRTUAL_ROOT + "/"):  # the text itself
                continue
            if path and os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
                outside.append(path)
        outside += hdl.missing_outside(tree)  # built by macros, not there in the sandbox
    rtl = [read(n) for n in spec["rtl"]]
    precheck.diagnose(rtl, tb, spec["top"], [root / d for d in spec["include_dirs"]],
                      spec["defines"], spec["compile_files"])
    return sorted(set(outside))


def rtl_bounds(items: list[dict]) -> list[str | None]:
    """Per RTL set (``{"files": [[name, text]], "dirs", "defines", "compile_files"}``):
    None when every view of it ends within :data:`RTL_LIMITS` in the child and reads
    no file outside its sources (:func:`llm4cov.tasks.hdl.opened_outside`), else why
    not."""
    with Batch(__name__, RTL_LIMITS) as batch:
        for item in items:
            batch.add(item)
        return [_why(result) for result in batch.results()]


_REFUSED = "refused: "


def _why(result: object) -> str | None:
    """A child's result as :func:`rtl_bounds` says it: None for ``ok``, a refusal as
    the child wrote it, anything else (killed, no answer) as the bounds passed."""
    if result == "ok":
        return None
    if isinstance(result, str) and result.startswith(_REFUSED):
        return result.removeprefix(_REFUSED)
    return (f"preprocessing exceeded limits (the pyslang parse went past "
            f"{RTL_LIMITS.cpu_s} s CPU or {RTL_LIMITS.memory_bytes >> 20} MiB)")


def _rtl_views(item: dict) -> str:
    """Parse one RTL set in every view the evaluator's process uses (the child's work)."""
    files = [SourceFile(name=n, content=t) for n, t in item["files"]]
    own = define_args(item["defines"])
    # refused (the include rule, nesting) or bad input: the parent raises it too
    with contextlib.suppress(ValueError):
        for f in files:
            parse_tree(f.content, f.name)
    for version, predefines in ((None, own),
                                (pyslang.LanguageVersion.v1800_2023,
                                 [*precheck.VERILATOR_DEFINES, *own])):
        try:
            hdl.compiled(files, item["dirs"], predefines, item["compile_files"], version)
        except hdl.OutsideFileError as exc:  # the parent never parses it in its process
            return _REFUSED + str(exc)
        except ValueError:
            pass
    return "ok"


if __name__ == "__main__":
    hdl.BOUNDED_PROCESS = True  # this child is bounded: no nested checks
    if sys.argv[1] == "--batch":
        serve(sys.argv[2:], _rtl_views)
    else:
        print(json.dumps(outside_files(json.loads(sys.argv[1]), Path.cwd())))
