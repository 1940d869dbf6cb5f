"""The simulator-backend interface: what the evaluator asks of a simulator.

The :class:`~llm4cov.sim.evaluator.Evaluator` owns every step that is the same for
any simulator (result cache, static safety check, structure checks, pyslang pre-check,
source rewrites, DUT coverage and feedback, the observation). A backend owns the
simulator's own part: its build command, its run environment, the end record its
driver leaves, its coverage file, and a pure classification of a run into
``(Status, EndReason, notes)``.

A backend must run every build and run step in the OS sandbox
(:mod:`llm4cov.sim.safety.isolation`) when ``SimConfig.sandbox`` is on, and its
:meth:`SimBackend.preprocess_command` must preprocess exactly as its build does (the
static check runs it). The repo's, aux and testbench files are in the work dir's
sources folder (:func:`llm4cov.sim.safety.workdirs.sources`), the compiler's and the
simulation's working directory; the backend's own files go beside it, where no repo
file name can reach.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from llm4cov.sim.analysis.structure import TestbenchPlan
from llm4cov.sim.model.coverage import Point
from llm4cov.sim.model.observation import EndReason, Status
from llm4cov.sim.safety.process import ProcessResult, Sandbox
from llm4cov.sim.safety.shape import ElaboratedShape
from llm4cov.sim.safety.static_check import PreprocessMessages
from llm4cov.tasks.model import SourceFile, Task


@dataclass(frozen=True)
class Capabilities:
    """What a backend can measure or write besides line, branch, expression and toggle
    coverage. The evaluator asks for nothing a backend lacks: an option that needs a
    missing capability is refused (:func:`llm4cov.sim.backends.check_supported`)."""

    native_per_instance: bool = False
    """The simulator keeps every instance's coverage apart by itself; otherwise the
    evaluator elaborates one module copy per instance (``sim/analysis/instances.py``)."""
    functional_coverage: bool = False
    """Testbench covergroups are counted (points of metric ``covergroup``)."""
    fsm_coverage: bool = False
    """FSM state and arc coverage on request (``SimConfig.fsm_coverage``)."""
    waveforms: frozenset[str] = frozenset()
    """Waveform formats it can dump (``vcd``, ``fst``)."""
    initial_nba: bool = False
    """``<=`` in ``initial`` blocks and tasks is scheduled in the NBA region (IEEE 1800
    10.4.2); otherwise the evaluator compiles it as ``<= #0`` (``hints.testbench_workarounds``)."""
    fork_disable: bool = False
    """``disable`` of a fork from one of its branches kills every branch, started or not
    (IEEE 1800 9.6.2); otherwise the evaluator compiles it as ``#0 disable``."""


@dataclass(frozen=True)
class CoverageFormat:
    """A backend's coverage file as the reports read it, with no toolchain needed
    (``report/capture.py``, ``report/lcov.py``): a kept work dir's file or an
    observation's :class:`~llm4cov.sim.model.observation.CoverageData`. Registered with the
    backend (:func:`llm4cov.sim.backends.register_backend`)."""

    kept_name: str
    """The run's own coverage file in a kept work dir (``Evaluator.evaluate_kept``)."""
    max_bytes: int
    """The largest coverage file read, bytes (a larger one is not read; a note says so)."""
    read: Callable[[Path], list[Point]]
    """The file's coverage points (the neutral model,
    :class:`~llm4cov.sim.model.coverage.Point`)."""
    ucis_format: str | None = None
    """The pyucis format (``FormatRgy``) that reads the file for the UCIS XML export;
    None: the backend has no UCIS export."""


@dataclass
class RunOutcome:
    """What one run of a built simulation left, before classification.

    ``end`` is the backend's checked end record (empty: none, or not trusted, then
    ``problem`` says why); ``output`` the run's output with work-dir paths scrubbed;
    ``notes`` the backend's notes on that output; ``coverage_file`` the work-dir name of
    the coverage file the run was told to write; ``tb_errors`` the testbench's
    ``$error`` count; ``sim_seconds`` the simulated time reached (seconds; None when
    unknown), ``sim_time_ps`` the same in whole picoseconds (exact integer arithmetic).
    """

    process: ProcessResult
    end: dict[str, Any]
    problem: str | None
    output: str
    notes: list[str] = field(default_factory=list)
    coverage_file: str | None = None
    tb_errors: int = 0
    sim_seconds: float | None = None
    sim_time_ps: int | None = None


class SourcesRefused(Exception):
    """The simulator's own elaboration refuses the sources (an error in them, not a
    tool failure or a bound): its build will fail the same way."""


class SimBackend(Protocol):
    """One simulator, as the evaluator drives it (one instance per evaluator)."""

    name: str
    """The registry name (:func:`llm4cov.sim.backends.get_backend`)."""
    simulator: str
    """The simulator and its version as observations show it (``Observation.simulator``)."""
    version: str
    """The simulator version in the result-cache key (unique among backends)."""
    has_solver: bool
    """Whether constrained randomization has its solver (part of the cache key)."""
    reserved_names: frozenset[str]
    """File names the backend puts in the work dir, which a testbench cannot take."""
    retry_without: tuple[tuple[str, str], ...]
    """``(coverage option, label)`` pairs to drop, once each, after a tool failure."""
    capabilities: Capabilities
    """What it measures besides code coverage (:class:`Capabilities`)."""
    preprocess_messages: PreprocessMessages
    """How the static check reads its preprocessing run's messages."""

    def env(self) -> dict[str, str]:
        """The environment of the build steps and of the static check's preprocessing."""
        ...

    def coverage_options(self) -> list[str]:
        """The simulator's coverage options for this config, as observations record them
        (``Observation.coverage_options``; an option of ``retry_without`` that a build
        dropped is left out there)."""
        ...

    def compiler_version(self) -> str:
        """The version of the compiler the build runs besides the simulator (e.g. the
        C++ compiler of a simulator that compiles to C++); part of the result-cache key
        (:func:`llm4cov.sim.cache.result_key`). Empty when there is none."""
        ...

    def check_sandbox(self) -> Sandbox:
        """What the static check's preprocessing may read besides its scratch dir."""
        ...

    def preprocess_command(self, task: Task, tb: SourceFile) -> list[str]:
        """The build's compile command as the static check runs it (``-E`` appended)."""
        ...

    def stage(self, workdir: Path) -> None:
        """Put the backend's own files (a driver, say) into ``workdir``."""
        ...

    def elaborated_parameters(self, text: str, top: str, instance: str,
                              overrides: Mapping[str, str]) -> dict[str, str] | None:
        """The parameter values (the simulator's own notation) the simulator elaborates
        the instance ``instance`` (a dotted path from ``top``) with, in ``text`` (one
        preprocessed Verilog text) with ``top`` as its top and the top's ``overrides``;
        None when it cannot say (a tool failure, a bound).

        Raises:
            SourcesRefused: the simulator reports an error in the sources.
        """
        ...

    def elaborated_shape(self, text: str, top: str, overrides: Mapping[str, str]
                         ) -> ElaboratedShape | None:
        """Every generate block and instance the simulator builds from ``text`` (one
        preprocessed Verilog text without `` `line`` directives, so a place is one in
        ``text``) with ``top`` as its top and the top's ``overrides``; None when it
        cannot say.

        Raises:
            SourcesRefused: the simulator reports an error in the sources.
        """
        ...

    def build(self, task: Task, tb: SourceFile, plan: TestbenchPlan, workdir: Path,
              drop: tuple[str, ...] = ()) -> ProcessResult:
        """Build the simulation in ``workdir`` without the coverage options ``drop``.

        Raises:
            OSError: a step could not be started (infrastructure, not the testbench).
        """
        ...

    def tool_failure(self, build: ProcessResult, files: list[SourceFile],
                     expanded: str = "") -> str | None:
        """Why a failed ``build`` of ``files`` is the simulator's fault, else None;
        ``expanded``: the sources as the preprocessor expanded them ("": unknown)."""
        ...

    def build_notes(self, build_log: str, tb: SourceFile,
                    fixed_lines: frozenset[int] = frozenset()) -> list[str]:
        """Notes on a build's log for the testbench ``tb`` (warnings that matter to it);
        ``fixed_lines``: testbench lines the evaluator's workarounds already changed
        (``hints.testbench_workarounds``)."""
        ...

    def error_sites(self, build_output: str) -> list[tuple[str, int]]:
        """``(file, line)`` of every located error in a build's output (the evaluator
        rebuilds the sources as given when one points at a line it rewrote)."""
        ...

    def run(self, task: Task, tb: SourceFile, workdir: Path) -> RunOutcome:
        """Run the built simulation under the configured limits.

        Raises:
            OSError: the run could not be started.
        """
        ...

    def coverage(self, workdir: Path, outcome: RunOutcome) -> tuple[list[Point], list[str]]:
        """The coverage points the run wrote (empty when not trusted) and notes on them."""
        ...

    def classify(self, outcome: RunOutcome, has_coverage: bool
                 ) -> tuple[Status, EndReason, list[str]]:
        """``(status, end reason, notes)`` of a run (pure); ``has_coverage``: the DUT
        has coverage points."""
        ...
