"""The evaluator's pyslang parses of an untrusted testbench, run first in a limited child.

The evaluator parses the raw testbench in its own process: alone and without macros
(:func:`llm4cov.tasks.hdl.parse_tree`: structure checks, hints) and with the RTL and
Verilator's macros (:func:`llm4cov.sim.precheck.diagnose`). Macro expansion has no
bound there, and pyslang takes branches Verilator skips (no ``VERILATOR`` macro in the
first view). :mod:`llm4cov.sim.static_check` runs this module under memory and CPU limits
first; when it finishes, the same parses in the evaluator are known to be bounded.

Usage (cwd: a dir laid out like the work dir)::

    python -m llm4cov.sim.ppguard '{"tb": "tb.sv", "rtl": [...], "include_dirs": [...],
                                    "defines": {...}, "compile_files": [...], "top": "dut"}'

Prints one JSON line: the files outside the cwd that the macro-free parse included.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from llm4cov.sim import precheck
from llm4cov.tasks.hdl import VIRTUAL_ROOT, parse_tree
from llm4cov.tasks.model import SourceFile


def outside_files(spec: dict, root: Path) -> list[str]:
    """Run both parses; the files outside ``root`` that the parse without macros read."""
    def read(name: str) -> SourceFile:
        text = (root / name).read_text(encoding="utf-8", errors="surrogateescape")
        return SourceFile(name=name, content=text)

    tb = read(spec["tb"])
    tree = parse_tree(tb.content, tb.name)
    real_root = os.path.realpath(root)
    outside = []
    for buffer in tree.sourceManager.getAllBuffers():
        path = str(tree.sourceManager.getFullPath(buffer))
        if path.startswith(VIRTUAL_ROOT + "/"):  # the testbench text itself
            continue
        if path and os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
            outside.append(path)
    rtl = [read(n) for n in spec["rtl"]]
    precheck.diagnose(rtl, tb, spec["top"], [root / d for d in spec["include_dirs"]],
                      spec["defines"], spec["compile_files"])
    return sorted(set(outside))


if __name__ == "__main__":
    print(json.dumps(outside_files(json.loads(sys.argv[1]), Path.cwd())))
