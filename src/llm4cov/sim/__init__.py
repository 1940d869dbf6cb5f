"""The evaluator ``Sim(repo, testbench) -> Observation`` and everything it stands on, in
layers: ``model/``, ``safety/``, ``analysis/``, ``cache``, ``backends/``, ``evaluator``
(docs/architecture.md, "Layers"; ``tests/test_import_layers.py``).

The modules moved into the layer folders (issue 43) keep their old import paths as
aliases, so a script written against ``llm4cov.sim.observation`` (or any name of
:data:`MOVED`) still runs; it gets a ``DeprecationWarning`` naming the new path. The
alias is the same module object, not a copy.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

#: Old module name -> the layer folder it moved to.
MOVED = {name: layer for layer, names in {
    "model": ("observation", "call", "metrics", "construct", "coverage", "functional",
              "feedback_terms", "wording", "exclusions"),
    "safety": ("static_check", "vlex", "ppguard", "bounded", "precheck", "stimulus_only",
               "isolation", "host", "process", "workdirs"),
    "analysis": ("structure", "instances", "hints", "fidelity", "rtl_check"),
}.items() for name in names}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``llm4cov.sim.<old name>`` and gives the module at its new path."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        package, _, leaf = fullname.rpartition(".")
        if package != __name__ or leaf not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        leaf = spec.name.rpartition(".")[2]
        new = f"{__name__}.{MOVED[leaf]}.{leaf}"
        warnings.warn(f"{spec.name} moved to {new}", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new path is already executed."""


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())
