"""Shared fixtures: the shared data folder, the evaluator, the example tasks."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from llm4cov.models.store import MODELS_ENV, models_root
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.tasks.model import Task
from llm4cov.toolchains.store import TOOLCHAINS_ENV, toolchains_root

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EXAMPLES = REPO / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Fetched models (`llm4cov model get`, read-only here) stay visible to the slow
# real-model tests; tests of the model store point LLM4COV_MODELS_DIR elsewhere.
os.environ.setdefault(MODELS_ENV, str(models_root()))
# Likewise fetched simulators (`llm4cov toolchain get`): the Verilator 5.052 tests run
# where it is fetched and skip, naming the command, where it is not.
os.environ.setdefault(TOOLCHAINS_ENV, str(toolchains_root()))
# The suite never reads or writes a user's result cache or build artifacts: one fresh
# cache dir per test session (its reusable build files are made once per session). A
# test passes its own `cache_dir` only when a fresh build store is what it tests: each
# one precompiles the Verilator runtime again (~10 s on 2 cores); `result_cache=False`
# is how a test avoids another test's stored result. The folder is removed when the
# session ends (a full run leaves ~180 MB of builds: they would pile up in /tmp).
_SESSION_CACHE: str | None = None
if "LLM4COV_CACHE_DIR" not in os.environ:
    _SESSION_CACHE = tempfile.mkdtemp(prefix="llm4cov-test-cache-")
    os.environ["LLM4COV_CACHE_DIR"] = _SESSION_CACHE


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


EXTRA_MODULES = {
    "requires_train": ("train", ("torch", "transformers", "trl", "peft", "gguf")),
    "requires_ray": ("ray", ("ray",)),
}
"""Marker -> (extra, modules it needs): a marked test is skipped, with the reason, when
one of the modules is not installed (README's test command installs no torch)."""


def pytest_collection_modifyitems(config, items):
    solver = [item for item in items if "requires_solver" in item.keywords]
    if solver and not formal_tools_ready():
        skip = pytest.mark.skip(reason="formal tools or their WebAssembly cache missing "
                                       "(llm4cov formal warmup)")
        for item in solver:
            item.add_marker(skip)
    for marker, (extra, modules) in EXTRA_MODULES.items():
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if not missing:
            continue
        skip = pytest.mark.skip(reason=f"needs the [{extra}] extra ({', '.join(missing)} "
                                       "not installed)")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


def shared_path(*parts: str) -> Path:
    """A path under ../shared, skipping the test when the folder is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} (the ../shared folder is absent)")
    return path


@pytest.fixture(scope="session")
def evaluator():
    from llm4cov.sim.evaluator import Evaluator

    return Evaluator()


@pytest.fixture(scope="session")
def evaluator_5052():
    """An evaluator on Verilator 5.052 (``--simulator verilator-5.052``); skips when it
    is not fetched. Without the runtime PCH (a speed lever only): the few 5.052 builds
    of a test run cost less than precompiling its headers once more."""
    from llm4cov.sim.config import SimConfig
    from llm4cov.sim.evaluator import Evaluator
    from llm4cov.toolchains import is_fetched

    if not is_fetched("verilator-5.052"):
        pytest.skip("Verilator 5.052 is not fetched: run `llm4cov toolchain get "
                    "verilator-5.052` once")
    return Evaluator(SimConfig(backend="verilator-5.052", runtime_pch=False))


def example_task(name: str, **kwargs) -> Task:
    """A bundled example design (examples/<name>) as a task."""
    return task_from_dir(EXAMPLES / name, **kwargs)


def fixture_task(name: str, **kwargs) -> Task:
    """A test fixture design (tests/fixtures/<name>) as a task."""
    return task_from_dir(FIXTURES / name, **kwargs)


def formal_tools_ready() -> bool:
    """Whether the formal tools are installed and their WebAssembly is compiled
    (``llm4cov formal warmup``); the solver tests skip otherwise."""
    from llm4cov.formal.tools import FormalToolError, find_tools, yowasp_cache_dir

    try:
        find_tools()
    except FormalToolError:
        return False
    return yowasp_cache_dir().is_dir() and any(yowasp_cache_dir().iterdir())
