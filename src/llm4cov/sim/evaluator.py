"""The deterministic evaluator ``Sim(repo, testbench) -> Observation``.

One call (a :class:`~llm4cov.sim.model.call.SimCall`): result-cache lookup (``cache.py``) ->
static safety checks -> structure checks (testbench top, DUT instance; on Verilator's
own preprocessed view of the sources, :class:`~llm4cov.sim.safety.static_check.Preprocessed`) ->
in a fresh temporary work dir (the repo's, aux and testbench files in its sources
folder, :mod:`~llm4cov.sim.safety.workdirs`): the pyslang pre-check (``precheck.py``) ->
source rewrites, checked again when they changed the testbench or the RTL -> the
simulator backend's build (``sim/backends/``; Verilator by default: ``--cc --exe
--timing`` with our driver main, then make; bounded in CPU, memory and processes per
call) -> its run with a fixed seed, resource limits and a simulated-time limit ->
coverage of the DUT subtree. The evaluator owns the steps that are the same for
every simulator; the backend owns the build command, the run environment, the end
record and the classification of a run. Nothing is ever written into the user's
repository; the work dir is removed after. The speed levers (pre-check, caches, build
options) never change an observation except its timing
(``tests/test_speed_equivalence.py``).

Sim Pass policy (documented in docs/evaluator.md): ``success`` when the run ended by
``$finish``, by ``$stop`` (treated as the end, like Icarus ``vvp -n``) or because no
events were left. ``$error`` and failed assertions never stop the run (counted in
``tb_error_count``). ``$fatal`` and simulator runtime errors give ``runtime_error``;
a testbench that never ends is stopped by the simulated-time limit (``timeout``). In
both cases the coverage collected so far is kept in the observation for feedback,
but it scores 0 (:meth:`Observation.cov`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from llm4cov.sim.analysis import fidelity, hints, rtl_check
from llm4cov.sim.analysis.instances import PerInstancePlan, plan_per_instance
from llm4cov.sim.analysis.structure import StructureError, TestbenchPlan, plan_testbench
from llm4cov.sim.backends import (
    CoverageFormat,
    SimBackend,
    SourcesRefused,
    check_supported,
    coverage_format,
    open_backend,
    preprocessor,
)
from llm4cov.sim.cache import ResultCache, cache_root, cacheable, result_key
from llm4cov.sim.config import SimConfig
from llm4cov.sim.logs import bound, clean_build_log, scrub_paths
from llm4cov.sim.model import coverage as cov
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.exclusions import excluded_note, parse_rules, split_points
from llm4cov.sim.model.feedback_terms import sim_time_text
from llm4cov.sim.model.functional import functional_coverage
from llm4cov.sim.model.metrics import METRICS
from llm4cov.sim.model.observation import (
    CoverageData,
    EndReason,
    MetricCoverage,
    Observation,
    Status,
    overall_percent,
)
from llm4cov.sim.safety import isolation, precheck, shape, stimulus_only, wall_clock, workdirs
from llm4cov.sim.safety.forked import BoundExceeded, bounded_call
from llm4cov.sim.safety.process import BOUND_NAMES, ProcessResult
from llm4cov.sim.safety.static_check import (
    Inspection,
    Preprocessed,
    inspect_testbench,
    new_findings,
)
from llm4cov.sim.safety.vlex import SourceMap
from llm4cov.tasks.hdl import (
    COMPILED_SUFFIXES,
    ElaborationLimitError,
    ParseLimitError,
    search_dirs,
)
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.tasks.names import RESERVED_PREFIX, name_errors, unsafe_chars

log = logging.getLogger(__name__)

NO_SANDBOX_NOTE = (
    "built and run WITHOUT the OS sandbox (--no-sandbox): only the static check stood "
    "between this testbench and the host"
)
STIMULUS_ONLY_NOTE = (
    "rejected: the testbench writes into the DUT (force, hierarchical assignment, a "
    "DUT subroutine call, a bound output) or changes its parameters; drive the DUT "
    "through its ports and with the task's parameters (docs/stimulus.md)"
)
#: Generated code for a call: SystemVerilog to append to the testbench as compiled,
#: made from the call's structure plan (a waveform dumper, say; ``report/capture.py``).
Extend = Callable[[TestbenchPlan], str]


@dataclass
class KeptRun:
    """One evaluator call whose work dir was kept (:meth:`Evaluator.evaluate_kept`):
    its ``observation``, the evaluator's structure ``plan`` of it (None: rejected before
    planning) and the kept ``workdir`` (None: none was made, the call ended before)."""

    observation: Observation
    plan: TestbenchPlan | None = None
    workdir: Path | None = None


@dataclass(frozen=True)
class _Staged:
    """A call's sources in its work dir, checked and rewritten: what its build, the
    judgement of the build and its run read."""

    task: Task
    tb: SourceFile
    plan: TestbenchPlan
    workdir: Path
    findings: list[precheck.Finding] | None
    """The pyslang pre-check's findings (None: the pre-check is off)."""
    rewrite: hints.Rewrite
    aux: list[SourceFile] = dataclasses.field(default_factory=list)
    """The testbench's data and include files."""
    view: Preprocessed | None = None
    """The static check's view of the sources as given (None: the check is off)."""
    generated: str = ""
    """Code appended to the testbench as compiled (``extend``: a trace module)."""


@dataclass(frozen=True)
class _Build:
    """The build step's outcome: the backend's ``result``, the tool failure it shows
    (``why``, None: none), the coverage flags dropped to get past one, its seconds and
    its ``log`` (the output as an observation shows it: work dir paths scrubbed)."""

    result: ProcessResult
    why: str | None
    dropped: tuple[str, ...]
    seconds: float
    log: str
    unmeasured: dict[str, int] = dataclasses.field(default_factory=dict)
    """Dropped metrics counted 0 % covered over the DUT's points (:meth:`Evaluator._unmeasured`)."""
    refused: str | None = None
    """Why the testbench is refused after all (:meth:`Evaluator._build_as_given`)."""


class Evaluator:
    """``Sim(repo, testbench)`` on a simulator backend (thread- and process-safe).

    ``backend``: the simulator (default: ``open_backend(config)``, the one
    ``config.backend`` names; the
    pinned Verilator unless ``--simulator`` names another).

    Raises:
        UnknownBackend: at construction, ``config.backend`` names no backend.
        UnsupportedOption: at construction, the config asks for something the backend
            cannot do (FSM coverage, a waveform format).
        ToolchainError: at construction, when the simulator toolchain is missing.
        SandboxUnavailable: at construction, when ``config.sandbox`` is on and the OS
            sandbox cannot run here (the message names the fix, or ``--no-sandbox``).
    """

    def __init__(self, config: SimConfig | None = None, backend: SimBackend | None = None):
        self.config = config or SimConfig()
        self.backend = backend or open_backend(self.config)
        check_supported(self.config, self.backend)
        if self.config.sandbox:
            isolation.require()
        self._results = (
            ResultCache(cache_root(self.config) / "results.sqlite3", self.config.cache_max_bytes)
            if self.config.result_cache else None
        )
        self._rtl_verdicts: dict[str, list[str]] = {}

    def evaluate(
        self,
        task: Task,
        testbench: str,
        tb_name: str = "tb.sv",
        aux_files: tuple[SourceFile, ...] | list[SourceFile] = (),
        any_instance: bool = False,
    ) -> Observation:
        """``evaluate_call(SimCall(task, testbench, tb_name, aux_files, any_instance))``."""
        return self.evaluate_call(SimCall(task, testbench, tb_name, tuple(aux_files),
                                          any_instance))

    def evaluate_call(self, call: SimCall, *, extend: Extend | None = None) -> Observation:
        """Simulate ``call.testbench`` against ``call.task``'s RTL and measure DUT
        coverage (failures are observations). Served from the result cache when an
        identical call was made before (``Observation.cached``).

        ``extend``: generated code appended to the testbench as compiled (never cached;
        checked like the testbench before the build, :func:`new_findings`).

        Raises:
            ValueError: an aux file name is not usable in the work dir or collides with
                an RTL file (:mod:`llm4cov.tasks.names`; loaders refuse those first).
        """
        if call.keep_coverage:
            return self._with_coverage_data(call)
        tb = self._testbench(call)
        if self._results is None or extend is not None:
            return self._finished(call, self._evaluate(call, tb, extend).observation)
        key = result_key(
            call.task, tb, call.aux_files, call.instance, self.config,
            f"{self.backend.name} {self.backend.version}", self.backend.has_solver,
            self.backend.compiler_version(),
        )
        hit = self._results.get(key)
        if hit is not None:
            return hit
        stops = wall_clock.count()
        obs = self._finished(call, self._evaluate(call, tb).observation)
        if cacheable(obs) and wall_clock.count() == stops:  # not the host's speed's verdict
            self._results.put(key, obs)
        return obs

    def evaluate_kept(self, call: SimCall, keep_in: Path, *, extend: Extend | None = None
                      ) -> KeptRun:
        """:meth:`evaluate_call` without the result cache, its work dir made in
        ``keep_in`` and kept (the caller removes it), with the evaluator's structure plan:
        what the reports need of a run (``report/capture.py``).

        Raises:
            ValueError: as :meth:`evaluate_call`.
        """
        kept = self._evaluate(call, self._testbench(call), extend, keep_in=keep_in)
        kept.observation = self._finished(call, kept.observation)
        return kept

    def _with_coverage_data(self, call: SimCall) -> Observation:
        """The observation of ``call`` (simulated, no result cache) with the run's
        coverage data (``Observation.coverage_data``; None when the run left no trusted
        coverage file, or one over the cap, then a note says so); the work dir is
        removed."""
        root = workdirs.create(self.config.workdir_root, prefix="llm4cov-keep-")
        try:
            kept = self.evaluate_kept(replace(call, keep_coverage=False), root)
            obs, plan = kept.observation, kept.plan
            notes: list[str] = []
            fmt = coverage_format(self.config.backend)
            dat = kept_coverage(kept.workdir, fmt, notes) if kept.workdir is not None else None
            if dat is None:
                return obs.model_copy(update={"notes": [*obs.notes, *notes]}) if notes else obs
            modules = plan.modules if plan else None
            data = CoverageData(
                dat_zlib=zlib.compress(dat.read_bytes()),
                dut_hier=obs.coverage.dut_hier if obs.coverage else plan.dut_hier if plan else "",
                rtl_modules=tuple(sorted(modules.rtl)) if modules else (),
                tb_modules=tuple(sorted(modules.testbench)) if modules else ())
            return obs.model_copy(update={"coverage_data": data})
        finally:
            workdirs.release(root, keep=False)

    def _testbench(self, call: SimCall) -> SourceFile:
        """The call's testbench under the name it is compiled as (renamed when it
        clashes with an RTL, aux or backend file).

        Raises:
            ValueError: an aux file name is not usable or collides with an RTL file.
        """
        rtl_names = [f.name for f in call.task.rtl_files]
        aux_names = [f.name for f in call.aux_files]
        if errors := name_errors("aux file", aux_names, rtl_names):
            raise ValueError("; ".join(errors))
        name = _tb_name(call.tb_name, [*rtl_names, *aux_names], self.backend.reserved_names)
        return SourceFile(name=name, content=call.testbench)

    def inspect(self, task: Task, tb: SourceFile,
                aux: tuple[SourceFile, ...] | list[SourceFile] = (), guard: bool = True
                ) -> Inspection:
        """The static check of ``tb`` (reasons; empty when ``SimConfig.static_check`` is
        off) and Verilator's view of the sources, as :meth:`evaluate_call` runs it
        (``guard``: :func:`~llm4cov.sim.safety.static_check.inspect_testbench`'s)."""
        inspection = inspect_testbench(
            tb.content, tb.name, task, preprocessor=preprocessor(self.backend, task, tb),
            aux_files=list(aux), workdir_root=self.config.workdir_root,
            sandbox=self.backend.check_sandbox() if self.config.sandbox else None,
            guard=guard,
        )
        return inspection if self.config.static_check else Inspection([], inspection.view)

    def _finished(self, call: SimCall, obs: Observation) -> Observation:
        """``obs`` as the call returns it: with a note when it was produced without the
        OS sandbox, and blamed on the RTL when that is at fault (:meth:`_blamed`)."""
        if not self.config.sandbox:
            obs = obs.model_copy(update={"notes": [*obs.notes, NO_SANDBOX_NOTE]})
        return self._blamed(call, obs)

    def _blamed(self, call: SimCall, obs: Observation) -> Observation:
        """``obs``, marked ``rtl_error`` when the RTL does not compile on its own
        (:func:`rtl_check.blame`; the check is one more call, once per RTL)."""
        if call.testbench == rtl_check.instantiation_testbench(call.task):
            return obs  # the check itself
        return rtl_check.blame(obs, call.task, self._rtl_alone)

    def _rtl_alone(self, task: Task) -> list[str]:
        """The RTL error lines of the task's RTL compiled alone (remembered per RTL)."""
        key = hashlib.sha256(task.model_dump_json(include={
            "rtl_files", "include_dirs", "defines", "parameters", "compile_files",
            "dut_module_name", "dut_instance_name"}).encode()).hexdigest()
        if key not in self._rtl_verdicts:
            alone = self.evaluate(task, rtl_check.instantiation_testbench(task))
            self._rtl_verdicts[key] = rtl_check.rtl_error_lines(alone, task)
        return self._rtl_verdicts[key]

    def _evaluate(self, call: SimCall, tb: SourceFile, extend: Extend | None = None,
                  keep_in: Path | None = None) -> KeptRun:
        """The call's steps up to its observation (no cache, no notes of the call as a
        whole); the work dir is made in ``keep_in`` and kept when given, else made in
        ``SimConfig.workdir_root`` and kept only with ``SimConfig.keep_workdir``."""
        task, aux = call.task, list(call.aux_files)
        base = self._base_fields()
        self._phase("static check")
        try:
            inspection = self.inspect(task, tb, aux)
        except OSError as exc:  # Verilator cannot be started (an argument list too long)
            return KeptRun(_infrastructure_error(exc, base))
        if inspection.reasons:
            return KeptRun(Observation(
                status=Status.REJECTED,
                log="Rejected before compiling (unsafe testbench):\n"
                    + "\n".join(inspection.reasons),
                **base,
            ))
        try:
            plan = plan_testbench(task.rtl_files, tb, task.dut_module_name, call.instance,
                                  view=inspection.view)
        except StructureError as exc:
            return KeptRun(Observation(status=Status.COMPILE_ERROR, log=str(exc), **base))
        judged = self._stimulus_check(task, tb, plan, inspection.view)
        forged = judged.reasons
        if forged:
            return KeptRun(Observation(
                status=Status.REJECTED,
                log="Rejected before compiling: only the stimulus may reach the DUT's "
                    "coverage (drive its ports, read its signals), and the testbench "
                    "writes into the DUT or changes its parameters:\n" + "\n".join(forged),
                notes=[STIMULUS_ONLY_NOTE],
                **base,
            ), plan)
        workdir = workdirs.create(str(keep_in) if keep_in else self.config.workdir_root)
        try:
            obs = self._simulate(task, tb, aux, plan, workdir, base, inspection.view,
                                 extend(plan) if extend else "", judged.unelaborated)
            obs = self._fidelity_noted(obs, task, tb, plan, inspection.view)
        except OSError as exc:  # fork/exec failure, disk full: infrastructure, not the TB
            obs = _infrastructure_error(exc, base)
        finally:
            workdirs.release(workdir, keep=keep_in is not None or self.config.keep_workdir)
        return KeptRun(obs, plan, workdir)

    def _dut_writes(self, task: Task, tb: SourceFile, plan: TestbenchPlan,
                    view: Preprocessed | None) -> list[str]:
        """Why the testbench's coverage would not be its stimulus's own, before any build
        (:meth:`_stimulus_check`'s reasons); empty when it is."""
        return list(self._stimulus_check(task, tb, plan, view).reasons)

    def _stimulus_check(self, task: Task, tb: SourceFile, plan: TestbenchPlan,
                        view: Preprocessed | None) -> stimulus_only.CheckResult:
        """Why the testbench's coverage would not be its stimulus's own
        (:func:`~llm4cov.sim.safety.stimulus_only.judge`, on Verilator's view of the
        sources; a DUT parameter value pyslang may evaluate otherwise settled by the
        simulator), and the testbench code pyslang could not elaborate (refused after a
        build that passes); nothing when ``SimConfig.stimulus_only`` is off."""
        if not self.config.stimulus_only:
            return stimulus_only.CheckResult([])
        if plan.redeclared:
            return stimulus_only.CheckResult([
                f"{tb.name}: the testbench declares `{m}`, a name of the RTL's (a module, "
                "a package, or Verilator's name for a copy of a module): the compiled "
                "design could be the testbench's, not the RTL's" for m in plan.redeclared])
        tb_text, rtl_text = (view.tb_part(), view.rtl_part()) if view else (
            tb.content, "\n".join(f.content for f in task.rtl_files))
        rtl = plan.modules.rtl if plan.modules else frozenset()
        try:  # elaborated in a bounded child (sim/safety/forked.py)
            found = stimulus_only.CheckResult(*bounded_call(
                stimulus_only.judge, tb_text, tb.name, rtl_text, sorted(rtl),
                task.dut_module_name, plan.elaborated_hier, dict(task.parameters),
                plan.top_overrides(task.parameters, tb),
                raises=(ParseLimitError, ElaborationLimitError)))
        except ParseLimitError as exc:
            return stimulus_only.CheckResult([str(exc)])
        except BoundExceeded as exc:
            return stimulus_only.CheckResult([
                f"{tb.name}: elaborating the testbench with the RTL {exc}, more than "
                "llm4cov spends to check it: what it writes cannot be checked"])
        if found.reasons or not (found.dut_values or found.elsewhere):
            return found
        reasons: list[str] = []
        try:
            if found.elsewhere:
                reasons = self._simulator_shape(task, tb, plan, view, found) \
                    if view is not None else list(found.elsewhere)
            if found.dut_values and not reasons:
                reasons = self._simulator_parameters(task, tb, plan, view,
                                                     list(found.dut_values)) \
                    if view is not None else list(found.dut_values)
        except SourcesRefused:  # the build fails the same way (its error is the answer);
            # one that passes is refused after it, unsettled
            return stimulus_only.CheckResult([], (), [*found.unelaborated, *found.elsewhere,
                                                      *found.dut_values])
        return stimulus_only.CheckResult(reasons, (), found.unelaborated)

    def _simulator_shape(self, task: Task, tb: SourceFile, plan: TestbenchPlan,
                         view: Preprocessed, found: stimulus_only.CheckResult) -> list[str]:
        """Reasons when the simulator's own elaboration of the view differs from the
        check's in the testbench's text (:func:`~llm4cov.sim.safety.shape.disagreements`:
        generate blocks built, instances, their parameter values): a value pyslang may
        evaluate otherwise outside the DUT instance (``found.elsewhere``) stands when
        both tools build the same; ``found.elsewhere`` itself when the simulator cannot
        say."""
        text = shape.blank_line_directives(view.text, view.markers)
        mine = found.shape
        overrides = plan.top_overrides(task.parameters, tb)
        theirs = None if "`line" in text or mine is None else \
            self.backend.elaborated_shape(text, plan.tb_top, overrides)
        if mine is None or theirs is None:
            return list(found.elsewhere)
        differ = shape.disagreements(mine, theirs, text, view.tb_offset, tb.name)
        return [*found.elsewhere[:1], *differ] if differ else []

    def _simulator_parameters(self, task: Task, tb: SourceFile, plan: TestbenchPlan,
                              view: Preprocessed, unsure: list[str]) -> list[str]:
        """Reasons when the simulator's own elaboration of the view gives the DUT
        instance other parameter values than the DUT module alone with the task's
        (:meth:`~llm4cov.sim.backends.base.SimBackend.elaborated_parameters`): a value
        pyslang may evaluate otherwise (``unsure``: a user function, an ``x``) is settled
        by the tool that runs it; ``unsure`` itself when the simulator cannot say."""
        actual = self.backend.elaborated_parameters(view.text, plan.tb_top, plan.dut_hier,
                                                    plan.top_overrides(task.parameters, tb))
        overrides = ", ".join(f".{k}({v})" for k, v in task.parameters.items())
        top = "llm4cov_parameter_reference"
        reference = self.backend.elaborated_parameters(
            f"{view.rtl_part()}\nmodule {top};\n  {task.dut_module_name} "
            f"{'#(' + overrides + ') ' if overrides else ''}u ();\nendmodule\n",
            top, f"{top}.u", {})
        if actual is None or reference is None:
            return unsure
        changed = [f"{name} = {value} (the task's: {reference[name]})"
                   for name, value in actual.items()
                   if name in reference and value != reference[name]]
        return [f"{tb.name}: the simulator elaborates the DUT `{plan.dut_hier}` with "
                f"parameters other than the task's: {'; '.join(changed)}; instantiate it "
                "with the task's parameters"] if changed else []

    # -- fidelity notes (issue 45; sim/analysis/fidelity.py, docs/fidelity.md) ------------------

    def _fidelity_noted(self, obs: Observation, task: Task, tb: SourceFile,
                        plan: TestbenchPlan, view: Preprocessed | None) -> Observation:
        """``obs`` of a run, with a note per DUT input whose time-0 edge Verilator's
        two-state start removes (:func:`~llm4cov.sim.analysis.fidelity.time0_edge_notes`, on the
        view the other checks read); the run itself is unchanged. Best effort: a parse
        problem never breaks a call."""
        if obs.end_reason is EndReason.NOT_RUN:
            return obs
        top, _, inst = plan.dut_hier.partition(".")
        if top != plan.tb_top or not inst or "." in inst:
            return obs  # only a DUT instance directly in the testbench's top
        if view is not None:
            tb_text, rtl_text = view.tb_part(), view.rtl_part()
            smap = SourceMap(view.text, view.markers, view.name)
            def where(offset: int) -> str:
                return smap.where(view.tb_offset + offset)
        else:
            tb_text, rtl_text = tb.content, "\n".join(f.content for f in task.rtl_files)
            def where(offset: int) -> str:
                return f"{tb.name}:{tb_text.count(chr(10), 0, offset) + 1}"
        try:
            notes = fidelity.time0_edge_notes(rtl_text, tb_text, task.dut_module_name,
                                              plan.tb_top, inst, where, tb.name)
        except Exception as exc:  # a refinement: it never breaks a call
            log.warning("time-0 edge check failed (%s: %s)", type(exc).__name__, exc)
            return obs
        return obs.model_copy(update={"notes": [*obs.notes, *notes]}) if notes else obs

    def _phase(self, step: str) -> None:
        """Tell a live display which step runs (``SimConfig.progress_file``); best effort."""
        if self.config.progress_file:
            with contextlib.suppress(OSError):
                Path(self.config.progress_file).write_text(step)

    def _base_fields(self) -> dict:
        return {
            "simulator": self.backend.simulator,
            "backend": self.backend.name,
            "coverage_options": self.backend.coverage_options(),
            "seed": self.config.seed,
        }

    # -- one simulation ----------------------------------------------------------------

    def _pyslang(self, task: Task, tb: SourceFile, plan: TestbenchPlan,
                 workdir: Path) -> list[precheck.Finding]:
        """Every error pyslang reports for ``tb`` with the RTL
        (:func:`~llm4cov.sim.safety.precheck.diagnose`); none if pyslang itself fails."""
        src = workdirs.sources(workdir)
        dirs = [src / d for d in search_dirs(task.rtl_files, task.include_dirs)]
        try:  # elaborated in a bounded child (sim/safety/forked.py)
            found = bounded_call(_diagnosed, task.rtl_files, tb, plan.tb_top, dirs,
                                 task.defines, task.compile_files)
            return [precheck.Finding(**f) for f in found]
        except Exception as exc:  # pyslang must never break a call
            log.warning("pyslang check failed (%s: %s); leaving the verdict to Verilator",
                        type(exc).__name__, exc)
            return []

    def _findings(self, staged: _Staged) -> list[precheck.Finding]:
        """pyslang's findings of the staged sources: the pre-check's, or (pre-check
        off) a pyslang run now, on the same sources."""
        if staged.findings is not None:
            return staged.findings
        return self._pyslang(staged.task, staged.tb, staged.plan, staged.workdir)

    def _simulate(self, task: Task, tb: SourceFile, aux: list[SourceFile],
                  plan: TestbenchPlan, workdir: Path, base: dict,
                  view: Preprocessed | None, generated: str,
                  unelaborated: Sequence[str] = ()) -> Observation:
        """The steps in the work dir: sources, pre-check, rewrites, then
        :meth:`_build`, :meth:`_judge_build` and :meth:`_run`; ``unelaborated``: the
        testbench code the stimulus check could not elaborate (``rejected`` once
        Verilator builds it: a compile error keeps its own feedback)."""
        src = workdirs.sources(workdir)
        for f in [*task.rtl_files, *aux, tb]:
            _write(src / f.name, f.content)
        self.backend.stage(workdir)
        findings = self._pyslang(task, tb, plan, workdir) if self.config.precheck else None
        found = precheck.sure_errors(findings or [], tb.name)
        if found:
            codes = ", ".join(sorted({f.code for f in found}))
            return Observation(
                status=Status.COMPILE_ERROR,
                log=bound(precheck.render(found), self.config.log_limit_chars),
                notes=[f"rejected by the pyslang pre-check before Verilator ran ({codes})"],
                **base,
            )

        rewrite = self._rewrite_sources(task, tb, plan, workdir, generated)
        if rewrite.refused:
            return Observation(status=Status.REJECTED, log="\n".join(rewrite.refused),
                               **base)
        if rewrite.rewritten and (refused := self._recheck(task, tb, aux, rewrite, view)):
            return Observation(
                status=Status.REJECTED,
                log="Rejected before compiling: the sources as the evaluator rewrote or "
                    "extended them hold what the static check refuses:\n" + "\n".join(refused),
                **base,
            )
        notes = [*rewrite.notes,
                 *hints.missing_data_notes(tb, {f.name for f in [*task.rtl_files, *aux]})]
        staged = _Staged(task, tb, plan, workdir, findings, rewrite, aux, view, generated)
        build = self._build(staged, base, notes)
        if build.refused:
            return Observation(status=Status.REJECTED, log=build.refused, notes=[build.refused],
                               build_s=build.seconds, **base)
        base = {**base, "coverage_options": [o for o in base["coverage_options"]
                                             if o not in build.dropped]}
        judged = self._judge_build(staged, build, base, notes)
        if judged is not None:
            return judged
        if unelaborated:
            return Observation(
                status=Status.REJECTED,
                log="Rejected after building: Verilator builds testbench code that pyslang "
                    "cannot elaborate, so what it writes into the DUT cannot be checked "
                    "(rewrite it as plain SystemVerilog):\n" + "\n".join(unelaborated),
                notes=[STIMULUS_ONLY_NOTE], **base)
        return _count_unmeasured(self._run(staged, build, base, notes), build.unmeasured)

    def _build(self, staged: _Staged, base: dict, notes: list[str]) -> _Build:
        """Build with the retries: once without each coverage type whose option makes
        the simulator fail (``backend.retry_without``), then once from the sources as
        given when the evaluator's rewrite caused the compile errors. Appends a note per
        retry to ``notes``."""
        task, tb, plan, workdir, rewrite = (staged.task, staged.tb, staged.plan,
                                            staged.workdir, staged.rewrite)
        t0 = time.monotonic()
        drop: tuple[str, ...] = ()
        self._phase("build")
        build = self.backend.build(task, tb, plan, workdir, drop)
        sources = [*task.rtl_files, tb]
        expanded = staged.view.text if staged.view is not None else ""
        why = self.backend.tool_failure(build, sources, expanded)
        for flag, label in self.backend.retry_without:  # each coverage type is dropped once
            if why is None or flag not in base["coverage_options"]:
                continue
            drop = (*drop, flag)
            build = self.backend.build(task, tb, plan, workdir, drop)
            fixed = self.backend.tool_failure(build, sources, expanded) is None
            notes.append(f"Verilator failed ({why}); rebuilt once without {label} coverage "
                         f"({flag}): " + ("that worked, so its points are not measured"
                                          if fixed else "the failure persists"))
            why = None if fixed else why
        unmeasured = self._unmeasured(task, base["coverage_options"], drop, notes) \
            if drop and why is None else {}
        sites = self.backend.error_sites(build.output) if build.returncode != 0 else []
        refused = None
        if why is None and rewrite.caused(sites):
            build, refused = self._build_as_given(staged, drop, notes, build)
        seconds = time.monotonic() - t0
        log_text = clean_build_log(scrub_paths(build.output, str(workdirs.sources(workdir))),
                                   str(workdir), (str(cache_root(self.config)),))
        return _Build(build, why, drop, seconds, log_text, unmeasured, refused)

    def _build_as_given(self, staged: _Staged, drop: tuple[str, ...], notes: list[str],
                        failed: ProcessResult) -> tuple[ProcessResult, str | None]:
        """The build when the evaluator's rewrite broke it: without the testbench's
        optional workarounds (``<= #0``, ``#0 disable``; their notes removed), never
        without the rest: every ``$stop`` still compiled as ``$finish``, the
        per-instance copies (made anew) where the design has them and the generated
        code (a trace module). A thirty-first red
        team steered the rewrite's ``#0`` into an identifier: the build failed on a line
        the rewrite changed, the sources were built as given and the DUT's two lanes
        shared one counter set (88.54 -> 93.55 %); a thirty-second made ``cb.x <= #0 1``
        fail (a clocking drive) and the RTL's ``$stop`` was an error report again, the
        run going on past it (56.13 -> 100 %). Returns the build and, when even that
        does not compile on a line it changed (or holds what the static check refuses)
        and the DUT alone gets copies, why the testbench is refused (with the ``failed``
        build, when the copies cannot even be planned)."""
        task, tb, workdir, rewrite = staged.task, staged.tb, staged.workdir, staged.rewrite
        caps = self.backend.capabilities
        full = hints.testbench_workarounds(tb, nba=not caps.initial_nba,
                                           disable=not caps.fork_disable)
        stops = hints.testbench_workarounds(tb, nba=False, disable=False)
        notes[:] = [n for n in notes if n not in set(full.notes) - set(stops.notes)]
        rtl, _ = hints.rtl_workarounds(task.rtl_files)
        sources = {**rtl, **({tb.name: stops.text} if stops.notes else {})}
        copies: dict[str, str] = {}
        if not caps.native_per_instance:
            copies, _, refusal = _per_instance_copies(_with_rtl(task, rtl), tb.name,
                                                      stops.text, staged.plan)
            if refusal:
                return failed, refusal[0]
        given = {f.name: f.content for f in [*task.rtl_files, tb]}

        def extended(files: dict[str, str]) -> dict[str, str]:  # the generated code kept
            if not staged.generated:
                return files
            return {**files, tb.name: f"{files.get(tb.name, tb.content)}\n{staged.generated}"}

        final = extended({**sources, **copies})
        for name, text in {**rewrite.originals, **final}.items():
            _write(workdirs.sources(workdir) / name, text)
        kept = hints.Rewrite([], frozenset(), {n: given[n] for n in final}, final)
        build = self.backend.build(task, tb, staged.plan, workdir, drop)
        sites = self.backend.error_sites(build.output) if build.returncode != 0 else []
        broken = kept.caused(sites) or (bool(kept.rewritten) and bool(
            self._recheck(task, tb, staged.aux, kept, staged.view)))
        if broken and copies:
            if _dut_alone_plan(task).copies:
                return build, (
                    f"Rejected while building: the evaluator's per-instance copies of the "
                    f"DUT's repeated modules do not compile with {tb.name}, and built "
                    "without them their instances would share one counter set. Keep the "
                    "testbench's own design small and plain.")
            merged = extended({name: sources.get(name, given[name]) for name in copies})
            for name, text in merged.items():  # (repeated modules outside the DUT's: fair)
                _write(workdirs.sources(workdir) / name, text)
            build = self.backend.build(task, tb, staged.plan, workdir, drop)
        notes.append("the evaluator's testbench workarounds (`<= #0`, `#0 disable`) did "
                     "not compile; built the testbench without them" +
                     (", with its per-instance copies" if copies and not broken else ""))
        return build, None

    def _unmeasured(self, task: Task, options: list[str], drop: tuple[str, ...],
                    notes: list[str]) -> dict[str, int]:
        """The metrics of ``drop`` that must not leave ``overall`` (a retry that drops
        a metric must never raise the score: the testbench could crash Verilator on
        purpose to drop its weakest metric), with the DUT's point count. Each dropped
        option is tried on the RTL alone (``backend.rtl_alone``, with the options still
        on when it was dropped): a tool failure there is the task's own defect, and
        the metric is left out as before; otherwise the crash needed the testbench,
        and the metric counts 0 % covered over the points the RTL alone declares (one
        point when it did not build; a metric without points changes nothing). Appends
        a note per dropped metric it judged."""
        probe = getattr(self.backend, "rtl_alone", None)
        if probe is None:
            return {}
        unmeasured: dict[str, int] = {}
        for i, flag in enumerate(drop):
            metric = next((m.name for m in METRICS if m.verilator_flag == flag),
                          flag.removeprefix("--coverage-"))
            failure, points = probe(task, [o for o in options if o not in drop[:i]])
            if failure is not None:
                notes.append(f"the RTL alone fails the same way with {flag} ({failure}): "
                             f"a defect of the task, so its {metric} coverage is left out "
                             "of overall")
            elif points is None or points.get(metric, 0):
                unmeasured[metric] = 1 if points is None else points[metric]
                size = "count unknown" if points is None else f"{points[metric]} points"
                notes.append(
                    f"the RTL alone builds with {flag}: the crash needs the testbench, so "
                    f"the DUT's {metric} coverage counts as 0 % covered ({size}) in "
                    "overall; a dropped metric never raises the score")
        return unmeasured

    def _judge_build(self, staged: _Staged, build: _Build, base: dict, notes: list[str]
                     ) -> Observation | None:
        """The observation of a build that ends the call (past a bound, a compile error,
        a simulator failure, a timeout), or None when the simulation can run."""
        result, why, build_s, build_log = build.result, build.why, build.seconds, build.log
        tb = staged.tb
        if result.exceeded:
            return self._over_bound(result.exceeded, build_log, round(build_s, 3), base)
        notes.extend(self.backend.build_notes(build_log, tb, staged.rewrite.nba_lines))
        invalid = [] if why is None or result.timed_out else precheck.testbench_errors(
            self._findings(staged), tb.name)  # the verdict when Verilator crashes
        if invalid:  # Verilator crashed on a testbench that is not valid SystemVerilog
            codes = ", ".join(sorted({f.code for f in invalid}))
            notes.append(f"Verilator failed ({why}) on a testbench that pyslang finds "
                         f"invalid ({codes}): a compile error of the testbench")
            log_text = precheck.render(invalid, "found by pyslang; Verilator crashed on "
                                       "this testbench") + "\n" + build_log
            return Observation(status=Status.COMPILE_ERROR, notes=notes,
                               log=bound(log_text, self.config.log_limit_chars),
                               build_s=round(build_s, 3), **base)
        if not result.timed_out and result.returncode == 0:
            return None
        tool_error = why is not None
        from_tb = tool_error and not result.timed_out and \
            not self._rtl_alone_fails(staged.task, base["coverage_options"])
        if from_tb:
            notes.append(f"simulator failure ({why}): a limitation of "
                         f"{self.backend.simulator}, not the testbench's error, but the RTL "
                         "alone does not fail so with the same options: this testbench brings "
                         "it out, and a benchmark counts it as a failed sample (rewrite the "
                         "construct the log names)")
        elif tool_error:
            notes.append(f"simulator failure ({why}): a limitation of "
                         f"{self.backend.simulator}, not the testbench; not counted "
                         "against the model")
        status = (Status.TIMEOUT if result.timed_out
                  else Status.TOOL_ERROR if tool_error else Status.COMPILE_ERROR)
        if result.timed_out:
            notes.append(f"compile exceeded {self.config.compile_timeout_s:g} s")
        return Observation(
            status=status,
            log=bound(build_log, self.config.log_limit_chars),
            notes=notes,
            tool_error=tool_error,
            tool_error_testbench=from_tb,
            build_s=round(build_s, 3),
            **base,
        )

    def _rtl_alone_fails(self, task: Task, options: list[str]) -> bool:
        """Whether the task's RTL alone fails in the simulator too with the coverage
        ``options`` (``backend.rtl_alone``: a tool failure, the task's own defect). Not
        when it builds, fails otherwise (a DUT with an interface port cannot be a top) or
        the backend cannot say: a testbench must not leave a task's denominators by a
        failure nobody shows to be the task's (a twenty-fourth red team)."""
        probe = getattr(self.backend, "rtl_alone", None)
        return probe is not None and probe(task, options)[0] is not None

    def _rewrite_sources(self, task: Task, tb: SourceFile, plan: TestbenchPlan,
                         workdir: Path, generated: str = "") -> hints.Rewrite:
        """Write the sources as compiled: the RTL's bare ``$stop`` as ``$finish``
        (``hints.rtl_workarounds``), the testbench with the workarounds of the
        backend's known divergences from IEEE 1800 (``hints.testbench_workarounds``,
        :class:`~llm4cov.sim.backends.base.Capabilities`) and the ``generated`` code
        after it and, when a module related to the DUT is instantiated more than once,
        one module copy per instance (``instances.py``), unless the backend counts
        instances apart by itself. Line numbers never change."""
        notes = plan.notes(task.dut_module_name)
        caps = self.backend.capabilities
        fix = hints.testbench_workarounds(tb, nba=not caps.initial_nba,
                                          disable=not caps.fork_disable)
        if fix.notes and not same_lines(tb.content, fix.text):  # never: its lines stay
            log.warning("testbench workaround moved lines; not used")
            fix = hints.Workaround(tb.content)
        rtl, rtl_notes = hints.rtl_workarounds(task.rtl_files)
        new = {**rtl, **({tb.name: fix.text} if fix.notes else {})}
        notes.extend([*rtl_notes, *fix.notes])
        refused: tuple[str, ...] = ()
        if not caps.native_per_instance:
            copies, copy_notes, refused = _per_instance_copies(_with_rtl(task, rtl), tb.name,
                                                               fix.text, plan)
            new.update(copies)
            notes.extend(copy_notes)
        if generated:
            new[tb.name] = new.get(tb.name, tb.content) + "\n" + generated
        for name, text in new.items():
            _write(workdirs.sources(workdir) / name, text)
        given = {f.name: f.content for f in [*task.rtl_files, tb]}
        return hints.Rewrite(notes, fix.nba_lines, {n: given[n] for n in new}, new, refused)

    def _recheck(self, task: Task, tb: SourceFile, aux: list[SourceFile],
                 rewrite: hints.Rewrite, view: Preprocessed | None) -> list[str]:
        """What the static check refuses in the sources as rewritten (run on them like
        on the testbench) that it did not find in the sources it checked; empty when
        the check is off."""
        if not self.config.static_check:
            return []
        final = rewrite.rewritten
        task = _with_rtl(task, final)
        after = self.inspect(task, SourceFile(name=tb.name, content=final.get(tb.name, tb.content)),
                             aux, guard=False)
        if after.reasons or view is None or after.view is None:
            return after.reasons
        return new_findings(view, after.view)

    def _over_bound(self, which: str, build_log: str, build_s: float, base: dict
                    ) -> Observation:
        """The ``rejected`` observation of a build past a per-call bound."""
        cfg = self.config
        limit = {"cpu": f"{cfg.build_cpu_limit_s:g} s of CPU",
                 "memory": f"{cfg.build_memory_bytes >> 20} MiB of memory",
                 "processes": f"{cfg.build_processes} processes",
                 "dir": f"{cfg.build_dir_bytes >> 10} KiB written"}.get(which, which)
        why = (f"the build passed its {BOUND_NAMES.get(which, which)} bound ({limit}, all "
               "its processes together; kept by polling the process tree with per-process "
               "rlimits behind it, no cgroup) and was stopped")
        return Observation(
            status=Status.REJECTED,
            log=bound(f"Rejected while building: {why}.\n{build_log}", cfg.log_limit_chars),
            notes=[why],
            build_s=build_s,
            **base,
        )

    def _run(self, staged: _Staged, build: _Build, base: dict, notes: list[str]
             ) -> Observation:
        """Run the built simulation and measure the DUT's coverage."""
        task, tb, plan, workdir = staged.task, staged.tb, staged.plan, staged.workdir
        build_log, build_s = build.log, build.seconds
        cfg = self.config
        self._phase("run")
        outcome = self.backend.run(task, tb, workdir)
        notes.extend(outcome.notes)
        self._phase("coverage")
        points, coverage_notes = self.backend.coverage(workdir, outcome)
        notes.extend(coverage_notes)
        rtl_names = {f.name for f in task.rtl_files}
        points, excluded = split_points(points, parse_rules(cfg.exclusions))
        if note := excluded_note(cov.dut_points(excluded, plan.dut_hier, rtl_names, plan.modules)):
            notes.append(note)
        if plan.modules and (why := _not_the_dut(points, plan, task.dut_module_name)):
            return Observation(status=Status.REJECTED, log=f"Rejected after the run: {why}.",
                               notes=[*notes, why], build_s=round(build_s, 3),
                               run_s=round(outcome.process.wall_s, 3), **base)
        sources = {f.name: f.content for f in task.rtl_files}
        report = cov.summarize(points, plan.dut_hier, sources, plan.modules) if points else None
        functional = (functional_coverage(points)
                      if self.backend.capabilities.functional_coverage else None)
        if report is not None and report.merged:
            notes.append("instances merged by Verilator (one counter set, counted once): "
                         + ", ".join(report.merged))
        status, reason, end_notes = self.backend.classify(outcome, report is not None)
        notes.extend(end_notes)
        uncovered, more = (
            cov.uncovered_items(points, plan.dut_hier, sources, cfg.feedback_limit,
                                plan.modules)
            if report else ([], 0)
        )
        if more:
            notes.append(f"{more} more uncovered items not listed")
        if outcome.sim_time_ps == 0:  # issue 45: a run that simulated nothing says so
            notes.append(fidelity.TIME0_NOTE)
        log_text = "\n".join(
            part for part in (
                "== build ==\n" + build_log if build_log.strip() else "",
                "== simulation output ==\n" + outcome.output,
            ) if part
        )
        return Observation(
            status=status,
            end_reason=reason,
            coverage=report,
            functional=functional,
            log=bound(log_text, cfg.log_limit_chars),
            uncovered=uncovered,
            notes=notes,
            tb_error_count=outcome.tb_errors,
            tb_error_prints=fidelity.error_prints(outcome.output),
            build_s=round(build_s, 3),
            run_s=round(outcome.process.wall_s, 3),
            sim_time=("" if outcome.sim_seconds is None
                      else sim_time_text(outcome.sim_seconds, tb.content)),
            sim_time_ps=outcome.sim_time_ps,
            **base,
        )


def kept_coverage(work: Path, fmt: CoverageFormat | None, notes: list[str]) -> Path | None:
    """The run's own coverage file in the kept work dir ``work`` (the backend's
    ``fmt.kept_name``, which replaced whatever the testbench wrote under that name; never
    another file), or None when the backend has no coverage format, or the file is not
    a regular file or is over ``fmt.max_bytes`` (a note in ``notes`` says so)."""
    if fmt is None:
        return None
    dat = work / fmt.kept_name
    size = workdirs.regular_size(dat)
    if size > fmt.max_bytes:
        notes.append(f"{fmt.kept_name} is {size / 1024**2:.0f} MiB, over the "
                     f"{fmt.max_bytes >> 20} MiB cap: not read")
        return None
    return dat if size >= 0 else None


def _with_rtl(task: Task, texts: dict[str, str]) -> Task:
    """``task`` with its RTL files' texts replaced by ``texts`` (name -> text, only those
    changed: the sources as compiled, ``hints.rtl_workarounds``)."""
    if not texts:
        return task
    return task.model_copy(update={"rtl_files": [
        SourceFile(name=f.name, content=texts.get(f.name, f.content)) for f in task.rtl_files]})


def _per_instance_copies(task: Task, tb_name: str, tb_text: str, plan: TestbenchPlan
                         ) -> tuple[dict[str, str], list[str], tuple[str, ...]]:
    """The sources rewritten with one module copy per instance (``instances.py``),
    notes, and why the testbench is refused: the plan is not used (a bound its own
    design passed, a rewrite that would move a line, a failure) where the DUT alone gets
    copies (:func:`_dut_alone_plan`), so the DUT's repeated modules would share one
    counter set, a point covered in one instance counting for all (10,001 empty
    testbench instances: 84.65 -> 97.44 %; a split instance statement whose string held
    a line break: 64.63 -> 86.25 %; the twenty-first and twenty-second red teams).
    Otherwise none, with a note, when the plan is not used (it is a refinement: it never
    breaks a call)."""
    unavailable = ["per-instance coverage unavailable for this design; repeated "
                   "modules are merged per module"]
    try:
        per = plan_per_instance(task.rtl_files, SourceFile(name=tb_name, content=tb_text),
                                plan.tb_top, plan.elaborated_hier)
    except Exception as exc:
        log.warning("per-instance rewrite failed (%s: %s)", type(exc).__name__, exc)
        return _merged(task, tb_name, unavailable, "the per-instance rewrite failed")
    if per.skipped:
        return _merged(task, tb_name, list(per.notes), "; ".join(per.notes))
    given = {f.name: f.content for f in task.rtl_files} | {tb_name: tb_text}
    moved = [n for n, text in per.sources.items() if not same_lines(given[n], text)]
    if moved:  # every coverage point and message names a line: never compile a shift
        log.warning("per-instance rewrite moved lines of %s; not used", ", ".join(moved))
        return _merged(task, tb_name, unavailable,
                       f"the per-instance rewrite would move lines of {', '.join(moved)}")
    return dict(per.sources), list(per.notes), ()


def _merged(task: Task, tb_name: str, notes: list[str], why: str
            ) -> tuple[dict[str, str], list[str], tuple[str, ...]]:
    """No copies: ``notes`` where the DUT alone gets none either (its repeated modules
    merge whatever the testbench), else a refusal naming ``why``."""
    alone = _dut_alone_plan(task)
    if not alone.copies or alone.skipped:
        return {}, notes, ()
    return {}, [], (
        f"Rejected before compiling: with {tb_name} the DUT's repeated modules "
        f"({', '.join(alone.copies)}) cannot be counted per instance, which the DUT alone "
        f"allows ({why}): their instances would share one counter set. Keep the "
        "testbench's own design small and plain.",)


def _dut_alone_plan(task: Task) -> PerInstancePlan:
    """:func:`plan_per_instance` of the DUT alone, with the task's parameters, under a
    top of its own (what any testbench's plan is within, unless its own design passes a
    bound)."""
    top = "llm4cov_dut_alone"
    values = ", ".join(f".{k}({v})" for k, v in task.parameters.items())
    stub = SourceFile(name=f"{top}.sv", content=(
        f"module {top};\n  {task.dut_module_name} {'#(' + values + ') ' if values else ''}"
        "dut ();\nendmodule\n"))
    try:
        return plan_per_instance(task.rtl_files, stub, top, f"{top}.dut")
    except Exception as exc:  # the plan never breaks a call: no refusal from it
        log.warning("per-instance plan of the DUT alone failed (%s: %s)",
                    type(exc).__name__, exc)
        return PerInstancePlan(skipped=True)


def _count_unmeasured(obs: Observation, unmeasured: dict[str, int]) -> Observation:
    """``obs`` with each ``unmeasured`` metric counted 0 % covered over its points
    (:meth:`Evaluator._unmeasured`), in the DUT's metrics, its own instance's and
    ``overall``."""
    report = obs.coverage
    if not unmeasured or report is None:
        return obs
    zero = {m: MetricCoverage(covered=0, total=n) for m, n in unmeasured.items()}
    metrics = {**report.metrics, **zero}
    per_instance = {**report.per_instance,
                    report.dut_hier: {**report.per_instance.get(report.dut_hier, {}), **zero}}
    return obs.model_copy(update={"coverage": report.model_copy(update={
        "metrics": dict(sorted(metrics.items())), "per_instance": per_instance,
        "overall": round(overall_percent(metrics), 4)})})


def same_lines(given: str, rewritten: str) -> bool:
    """Whether ``rewritten`` keeps every line of ``given`` at its number (the same
    count of line breaks): the invariant of every source rewrite before a build."""
    return given.count("\n") == rewritten.count("\n")


def _tb_name(name: str, taken: list[str], reserved: frozenset[str]) -> str:
    """The testbench file name: its base name with every character outside the
    file-name rule (:func:`~llm4cov.tasks.names.unsafe_chars`) made ``_``, renamed
    (``llm4cov_``, ``llm4cov_2_``, ... before it) while it would collide with one of the
    ``taken`` names (RTL and aux files) or the backend's ``reserved`` files."""
    base = "".join(c if unsafe_chars(c) is None else "_"
                   for c in PurePosixPath(name).name) or "tb.sv"
    if not base.endswith(COMPILED_SUFFIXES):
        base += ".sv"
    clash = {*taken, *reserved}
    candidates = [base, f"{RESERVED_PREFIX}{base}",
                  *(f"{RESERVED_PREFIX}{k}_{base}" for k in range(2, len(clash) + 2))]
    return next(c for c in candidates  # one of len(clash) + 2 names is free
                if c not in clash and not any(t.startswith(f"{c}/") for t in clash))


def _write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8", errors="surrogateescape")


def _not_the_dut(points: list[cov.Point], plan: TestbenchPlan, dut_module: str) -> str | None:
    """Why the run's points in the DUT's subtree are not the DUT's own coverage (None:
    they are): DUT modules merged with the testbench's copies above the DUT
    (:func:`~llm4cov.sim.model.coverage.merged_outside`), or no point of the DUT module
    at all (:func:`~llm4cov.sim.model.coverage.dut_absent`)."""
    assert plan.modules is not None
    if shared := cov.merged_outside(points, plan.dut_hier, plan.modules):
        return ("the DUT's instances share one counter set with instances outside the DUT "
                f"(the testbench's own): {', '.join(shared)}; its coverage cannot be told "
                "apart (instantiate the DUT's modules in the testbench less often, or not "
                "at all)")
    if cov.dut_absent(points, plan.dut_hier, plan.modules, dut_module):
        return (f"no point of `{dut_module}` itself was measured at `{plan.dut_hier}`: what "
                "the run names there is not the DUT")
    return None


def _diagnosed(rtl_files: list[SourceFile], tb: SourceFile, top: str, dirs: list[Path],
               defines: dict[str, str], compile_files: list[str]) -> list[dict]:
    """:func:`~llm4cov.sim.safety.precheck.diagnose`'s findings as JSON values (the
    bounded child's answer)."""
    return [dataclasses.asdict(f) for f in precheck.diagnose(
        rtl_files, tb, top, dirs, defines=defines, compile_files=compile_files)]



def _infrastructure_error(exc: OSError, base: dict) -> Observation:
    """The observation of a call the host could not carry out (fork/exec failure, disk
    full, an argument list past the kernel's limit): a tool error, not the testbench's."""
    log.warning("evaluator infrastructure error: %s", exc)
    return Observation(status=Status.TOOL_ERROR, tool_error=True,
                       log=f"evaluator infrastructure error (not the testbench): {exc}", **base)
