"""The allowed import directions inside ``sim/`` (issue 43; docs/architecture.md,
"Layers"): a module imports only from its own layer or a lower one, and no two modules
of the package import each other in a cycle when it runs. Lazy imports inside functions
count too, except the backend registry's one lazy import of each backend (the seam
itself); imports only for the type checker (``if TYPE_CHECKING:``) count for the layers,
not for cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import llm4cov.sim

SIM = Path(llm4cov.sim.__file__).parent
#: Lowest first. A module may import from its own layer and those before it.
LAYERS = (
    ("base", ("llm4cov.sim.config", "llm4cov.sim.logs")),
    ("model", ("llm4cov.sim.model",)),
    ("safety", ("llm4cov.sim.safety",)),
    ("analysis", ("llm4cov.sim.analysis",)),
    ("cache", ("llm4cov.sim.cache",)),
    ("backends", ("llm4cov.sim.backends",)),
    ("evaluator", ("llm4cov.sim.evaluator", "llm4cov.sim.report")),
)
REGISTRY = "llm4cov.sim.backends"


def module_name(path: Path) -> str:
    parts = path.relative_to(SIM.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module`` (None: outside ``llm4cov.sim`` or the
    package itself)."""
    for i, (_name, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(f"{p}.") for p in prefixes):
            return i
    return None


def sim_imports(path: Path, runtime: bool = False) -> set[str]:
    """The ``llm4cov.sim`` modules that ``path`` imports (``from llm4cov.sim.x import
    y`` names ``llm4cov.sim.x``, and ``llm4cov.sim.x.y`` when that is a module); with
    ``runtime``, not those under ``if TYPE_CHECKING:``."""
    found: set[str] = set()
    modules = {module_name(p) for p in SIM.rglob("*.py")}
    tree = ast.parse(path.read_text(), str(path))
    skipped = {id(n) for block in ast.walk(tree) if runtime and isinstance(block, ast.If)
               and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
               for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("llm4cov.sim"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("llm4cov.sim"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            found.update(subs or {node.module})
    return found


def graph(runtime: bool = False) -> dict[str, set[str]]:
    """Module -> the sim modules it imports (:func:`sim_imports`), for every module."""
    return {module_name(p): sim_imports(p, runtime) for p in sorted(SIM.rglob("*.py"))}


def test_every_sim_module_has_a_layer():
    unplaced = [m for m in graph() if m != "llm4cov.sim" and layer_of(m) is None]
    assert unplaced == []


def test_imports_go_down_the_layers_only():
    upward = []
    for module, imports in graph().items():
        here = layer_of(module)
        if here is None:
            continue
        for imported in imports:
            there = layer_of(imported)
            lazy_backend = module == REGISTRY and imported.startswith(f"{REGISTRY}.")
            if there is not None and there > here and not lazy_backend:
                upward.append(f"{module} -> {imported}")
    assert upward == []


def test_no_import_cycle_between_sim_modules():
    edges = graph(runtime=True)
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> list[str]:
        if module in path:
            return [*path[path.index(module):], module]
        if module in done:
            return []
        for nxt in sorted(edges.get(module, ())):
            if nxt in edges and nxt != module and not _parent(nxt, module) \
                    and (cycle := visit(nxt, (*path, module))):
                return cycle
        done.add(module)
        return []

    cycles = [c for m in edges if (c := visit(m, ()))]
    assert cycles == []


def _parent(package: str, module: str) -> bool:
    """``module`` lies inside ``package`` (importing a package's ``__init__`` from one
    of its own modules is not a cycle of modules)."""
    return module.startswith(f"{package}.")


def test_the_layer_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The checks can fail: a model module that imports the evaluator is an upward
    import, and two modules that import each other are a cycle."""
    bad = tmp_path / "llm4cov" / "sim" / "model"
    bad.mkdir(parents=True)
    (tmp_path / "llm4cov" / "sim" / "__init__.py").write_text("")
    (bad / "__init__.py").write_text("")
    (bad / "a.py").write_text("from llm4cov.sim.evaluator import Evaluator\n"
                              "from llm4cov.sim.model import b\n")
    (bad / "b.py").write_text("def f():\n    from llm4cov.sim.model import a\n")
    (tmp_path / "llm4cov" / "sim" / "evaluator.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "SIM", tmp_path / "llm4cov" / "sim")
    with_upward = graph()
    assert with_upward["llm4cov.sim.model.a"] == {"llm4cov.sim.evaluator",
                                                   "llm4cov.sim.model.b"}
    try:
        test_imports_go_down_the_layers_only()
    except AssertionError as exc:
        assert "llm4cov.sim.model.a -> llm4cov.sim.evaluator" in str(exc)
    else:
        raise AssertionError("the upward import was not found")
    try:
        test_no_import_cycle_between_sim_modules()
    except AssertionError as exc:
        assert "llm4cov.sim.model.a" in str(exc) and "llm4cov.sim.model.b" in str(exc)
    else:
        raise AssertionError("the cycle was not found")


def test_a_moved_module_keeps_its_old_import_path_as_an_alias():
    """Scripts written against the flat layout still run: the old path is the same
    module object, with a DeprecationWarning naming the new one; a name that never
    existed is still an ImportError."""
    import importlib
    import sys

    import pytest

    from llm4cov.sim.model import observation

    sys.modules.pop("llm4cov.sim.observation", None)
    with pytest.warns(DeprecationWarning, match=r"llm4cov\.sim\.observation moved to "
                                                r"llm4cov\.sim\.model\.observation"):
        old = importlib.import_module("llm4cov.sim.observation")
    assert old is observation and old.Observation is observation.Observation
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("llm4cov.sim.no_such_module")
    moved = {module_name(p).rpartition(".")[2] for layer in ("model", "safety", "analysis")
             for p in (SIM / layer).glob("*.py") if p.name != "__init__.py"}
    # written after the move: no old path
    added_since = {"subroutines", "drivers", "forked", "handles", "declaration_order", "shape",
                   "wall_clock"}
    assert set(llm4cov.sim.MOVED) == moved - added_since
