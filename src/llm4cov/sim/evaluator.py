"""The deterministic evaluator ``Sim(repo, testbench) -> Observation`` on Verilator.

One call: result-cache lookup (``cache.py``) -> static safety checks -> structure
checks (testbench top, DUT instance) -> in a fresh temporary work dir: the pyslang
pre-check (``precheck.py``) -> Verilator build (``--cc --exe --timing`` with our driver
main, ``driver_main.cpp``, then make; ``build.py``) -> run with a fixed seed, resource
limits and a simulated-time limit -> coverage of the DUT subtree. Nothing is ever
written into the user's repository; the work dir is removed after. The speed levers
(pre-check, caches, build options) never change an observation except its timing
(``tests/test_speed_equivalence.py``).

Sim Pass policy (documented in the README): ``success`` when the run ended by
``$finish``, by ``$stop`` (treated as the end, like Icarus ``vvp -n``) or because no
events were left. ``$error`` and failed assertions never stop the run (counted in
``tb_error_count``). ``$fatal`` and simulator runtime errors give ``runtime_error``;
a testbench that never ends is stopped by the simulated-time limit (``timeout``). In
both cases the coverage collected so far is kept in the observation for feedback,
but it scores 0 (:meth:`Observation.cov`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import time
from pathlib import Path, PurePosixPath

from llm4cov.sim import coverage as cov
from llm4cov.sim import hints, isolation, precheck, workdirs
from llm4cov.sim.artifacts import ArtifactStore
from llm4cov.sim.build import (
    DRIVER,
    DRIVER_HOOKS,
    TOP_PREFIX,
    build_sandbox,
    cflags,
    run_build,
    run_sandbox,
)
from llm4cov.sim.cache import (
    BUILD_DIR,
    ResultCache,
    cache_root,
    cacheable,
    evict_build_store,
    result_key,
)
from llm4cov.sim.config import SimConfig
from llm4cov.sim.exclusions import excluded_note, parse_rules, split_points
from llm4cov.sim.feedback_terms import sim_time_text
from llm4cov.sim.instances import plan_per_instance
from llm4cov.sim.logs import bound, clean_build_log, scrub_paths
from llm4cov.sim.observation import EndReason, Observation, Status
from llm4cov.sim.process import Limits, ProcessResult, run_limited
from llm4cov.sim.sandbox import check_testbench, source_arg
from llm4cov.sim.structure import (
    StructureError,
    TestbenchPlan,
    always_without_timing,
    plan_testbench,
    stop_sites,
)
from llm4cov.sim.toolchain import Toolchain, find_toolchain
from llm4cov.tasks.hdl import (
    COMPILED_SUFFIXES,
    compile_order,
    define_args,
    module_parameters,
    search_dirs,
)
from llm4cov.tasks.model import SourceFile, Task

log = logging.getLogger(__name__)

#: The driver's end record (``driver_main.cpp``): one line, fixed fields in fixed order.
_END_RECORD = re.compile(
    rb"llm4cov-end/1 end=(?P<end>[a-z_]+) time=(?P<time>\d{1,20}) "
    rb"precision=(?P<precision>-?\d{1,3}) errors=(?P<errors>\d{1,10}) "
    rb"line=(?P<line>-?\d{1,10}) coverage=(?P<coverage>-?\d{1,20}) "
    rb"file=(?P<file>(?:[0-9a-f]{2}){0,1024})\n"
)
_END_REASONS = frozenset({"finish", "stop", "no_events", "fatal", "sim_time_limit",
                          "wall_timeout"})
END_FD_ENV = "LLM4COV_END_FD"
#: The largest coverage file the evaluator (and ``report/capture.py``) parses, bytes.
COVERAGE_MAX_BYTES = 64 * 1024**2
#: The run's coverage file in a kept work dir (``SimConfig.keep_workdir``).
KEPT_COVERAGE = "coverage.dat"
NO_SANDBOX_NOTE = (
    "built and run WITHOUT the OS sandbox (--no-sandbox): only the static check stood "
    "between this testbench and the host"
)


class Evaluator:
    """``Sim(repo, testbench)`` with the real Verilator (thread- and process-safe).

    Raises:
        ToolchainError: at construction, when the simulator toolchain is missing.
        SandboxUnavailable: at construction, when ``config.sandbox`` is on and the OS
            sandbox cannot run here (the message names the fix, or ``--no-sandbox``).
    """

    def __init__(self, config: SimConfig | None = None, toolchain: Toolchain | None = None):
        self.config = config or SimConfig()
        self.toolchain = toolchain or find_toolchain()
        if self.config.sandbox:
            isolation.require()
        root = cache_root(self.config)
        self._results = (
            ResultCache(root / "results.sqlite3", self.config.cache_max_bytes)
            if self.config.result_cache else None
        )
        self._artifacts = ArtifactStore(
            root / BUILD_DIR, self.toolchain.verilator_root, self.toolchain.version
        )
        evict_build_store(root / BUILD_DIR)

    def evaluate(
        self,
        task: Task,
        testbench: str,
        tb_name: str = "tb.sv",
        aux_files: tuple[SourceFile, ...] | list[SourceFile] = (),
        any_instance: bool = False,
    ) -> Observation:
        """Simulate ``testbench`` against ``task``'s RTL and measure DUT coverage.

        The testbench must instantiate ``task.dut_module_name`` as
        ``task.dut_instance_name``; ``any_instance=True`` accepts any instance name
        (for third-party testbenches such as the LLM corpus). Served from the result
        cache when an identical call was made before (``Observation.cached``).
        """
        tb = SourceFile(name=_tb_name(tb_name, task), content=testbench)
        aux = list(aux_files)
        instance = None if any_instance else task.dut_instance_name
        if self._results is None:
            return self._noted(self._evaluate(task, tb, aux, instance))
        key = result_key(
            task, tb, aux, instance, self.config, self.toolchain.version,
            self.toolchain.z3 is not None,
        )
        hit = self._results.get(key)
        if hit is not None:
            return hit
        obs = self._noted(self._evaluate(task, tb, aux, instance))
        if cacheable(obs):
            self._results.put(key, obs)
        return obs

    def _noted(self, obs: Observation) -> Observation:
        """``obs``, with a note when it was produced without the OS sandbox."""
        if self.config.sandbox:
            return obs
        return obs.model_copy(update={"notes": [*obs.notes, NO_SANDBOX_NOTE]})

    def _evaluate(
        self, task: Task, tb: SourceFile, aux: list[SourceFile], instance: str | None
    ) -> Observation:
        base = self._base_fields()
        self._phase("static check")
        reasons = check_testbench(
            tb.content, tb.name, task, command=self.preprocess_command(task, tb),
            aux_files=aux, env=self.toolchain.env(), workdir_root=self.config.workdir_root,
            sandbox=build_sandbox(self.toolchain) if self.config.sandbox else None,
        ) if self.config.static_check else []
        if reasons:
            return Observation(
                status=Status.REJECTED,
                log="Rejected before compiling (unsafe testbench):\n" + "\n".join(reasons),
                **base,
            )
        try:
            plan = plan_testbench(task.rtl_files, tb, task.dut_module_name, instance)
        except StructureError as exc:
            return Observation(status=Status.COMPILE_ERROR, log=str(exc), **base)
        workdir = workdirs.create(self.config.workdir_root)
        try:
            return self._simulate(task, tb, aux, plan, workdir, base)
        except OSError as exc:  # fork/exec failure, disk full: infrastructure, not the TB
            log.warning("evaluator infrastructure error: %s", exc)
            return Observation(
                status=Status.RUNTIME_ERROR,
                tool_error=True,
                log=f"evaluator infrastructure error (not the testbench): {exc}",
                **base,
            )
        finally:
            workdirs.release(workdir, keep=self.config.keep_workdir)

    def _phase(self, step: str) -> None:
        """Tell a live display which step runs (``SimConfig.progress_file``); best effort."""
        if self.config.progress_file:
            with contextlib.suppress(OSError):
                Path(self.config.progress_file).write_text(step)

    def _base_fields(self) -> dict:
        return {
            "simulator": f"verilator {self.toolchain.version}",
            "coverage_options": self.config.coverage_options(),
            "seed": self.config.seed,
        }

    # -- build -----------------------------------------------------------------------

    def verilate_command(
        self, task: Task, tb: SourceFile, plan: TestbenchPlan, fsm: bool = False,
        drop: tuple[str, ...] = (),
    ) -> list[str]:
        """The Verilator step of the build (run in the work dir; make follows);
        ``drop``: coverage options left out (after a tool failure)."""
        cfg = self.config
        flags = [f for f in cfg.coverage_options()
                 if (fsm or f != "--coverage-fsm") and f not in drop]
        sources = [source_arg(f.name)
                   for f in compile_order(task.rtl_files, task.compile_files)]
        return [
            str(self.toolchain.verilator),
            "--cc", "--exe", "--timing",
            "-Wno-fatal",
            "--prefix", TOP_PREFIX,
            "--top-module", plan.tb_top,
            "-Mdir", "obj",
            "-o", "sim",
            *flags,
            "-CFLAGS", cflags(cfg),
            *repo_args(task, tb, plan.tb_top),
            *cfg.extra_verilator_args,
            *sources,
            source_arg(tb.name),
            DRIVER.name,
        ]

    def preprocess_command(self, task: Task, tb: SourceFile) -> list[str]:
        """The build's Verilator command as the safety check runs it (``-E`` appended
        there): the same flags, macros, include dirs and files by construction. The top
        module and ``-G`` overrides do not change preprocessing; they are stand-ins here,
        so nothing parses the unchecked testbench first."""
        plain = task.model_copy(update={"parameters": {}})
        stand_in = TestbenchPlan(tb_top=task.dut_module_name, dut_hier="")
        return self.verilate_command(plain, tb, stand_in, self.config.fsm_coverage)

    def _build(self, task, tb, plan, workdir: Path, drop: tuple[str, ...]) -> ProcessResult:
        return run_build(
            self.verilate_command(task, tb, plan, self.config.fsm_coverage, drop),
            workdir,
            self.toolchain.env(),
            self.config,
            self._artifacts,
            self.toolchain if self.config.sandbox else None,
        )

    def _precheck(self, task, tb, plan, workdir: Path) -> list[precheck.Finding]:
        """The pre-check's sure errors; none if pyslang itself fails (Verilator decides)."""
        dirs = [workdir / d for d in search_dirs(task.rtl_files, task.include_dirs)]
        try:
            return precheck.precheck(task.rtl_files, tb, plan.tb_top, dirs,
                                     defines=task.defines, compile_files=task.compile_files)
        except Exception as exc:  # an optimization must never break a call
            log.warning("pre-check failed (%s: %s); leaving the verdict to Verilator",
                        type(exc).__name__, exc)
            return []

    # -- one simulation ----------------------------------------------------------------

    def _simulate(self, task, tb, aux, plan, workdir: Path, base: dict) -> Observation:
        notes: list[str] = []
        for f in [*task.rtl_files, *aux, tb]:
            _write(workdir / f.name, f.content)
        for driver_file in (DRIVER, DRIVER_HOOKS):
            shutil.copy(driver_file, workdir / driver_file.name)
        found = self._precheck(task, tb, plan, workdir) if self.config.precheck else []
        if found:
            codes = ", ".join(sorted({f.code for f in found}))
            return Observation(
                status=Status.COMPILE_ERROR,
                log=bound(precheck.render(found), self.config.log_limit_chars),
                notes=[f"rejected by the pyslang pre-check before Verilator ran ({codes})"],
                **base,
            )

        rewrite = self._rewrite_sources(task, tb, plan, workdir)
        notes.extend(rewrite.notes)
        notes.extend(hints.missing_data_notes(tb, {f.name for f in [*task.rtl_files, *aux]}))
        t0 = time.monotonic()
        drop: tuple[str, ...] = ()
        self._phase("build")
        build = self._build(task, tb, plan, workdir, drop)
        why = _tool_failure(build, [*task.rtl_files, tb])
        for flag, label in hints.RETRY_WITHOUT:  # each coverage type is dropped once
            if why is None or flag not in base["coverage_options"]:
                continue
            drop = (*drop, flag)
            build = self._build(task, tb, plan, workdir, drop)
            fixed = _tool_failure(build, [*task.rtl_files, tb]) is None
            notes.append(f"Verilator failed ({why}); rebuilt once without {label} coverage "
                         f"({flag}): " + ("that worked, so its points are not measured"
                                          if fixed else "the failure persists"))
            why = None if fixed else why
        if why is None and build.returncode != 0 and rewrite.caused(build.output):
            for name, text in rewrite.originals.items():  # build the sources as given
                _write(workdir / name, text)
            build = self._build(task, tb, plan, workdir, drop)
            notes.append("the evaluator's rewrite of the sources (per-instance coverage, "
                         "testbench workarounds) did not compile; built them as given")
        base = {**base, "coverage_options": [o for o in base["coverage_options"]
                                             if o not in drop]}
        build_s = time.monotonic() - t0
        build_log = clean_build_log(build.output, str(workdir))
        notes.extend(hints.build_notes(build_log, tb, rewrite.nba_lines))
        if build.timed_out or build.returncode != 0:
            tool_error = why is not None
            if tool_error:
                notes.append(f"simulator failure ({why}): a limitation of the pinned "
                             "Verilator, not the testbench; not counted against the model")
            status = (Status.TIMEOUT if build.timed_out
                      else Status.TOOL_ERROR if tool_error else Status.COMPILE_ERROR)
            if build.timed_out:
                notes.append(f"compile exceeded {self.config.compile_timeout_s:g} s")
            return Observation(
                status=status,
                log=bound(build_log, self.config.log_limit_chars),
                notes=notes,
                tool_error=tool_error,
                build_s=round(build_s, 3),
                **base,
            )
        return self._run(task, tb, plan, workdir, base, notes, build_log, build_s)

    def _rewrite_sources(self, task, tb, plan, workdir: Path) -> hints.Rewrite:
        """Write the sources as compiled: the testbench with known-bug workarounds
        (``hints.testbench_workarounds``) and, when a module related to the DUT is
        instantiated more than once, one module copy per instance (``instances.py``).
        Line numbers never change."""
        notes = plan.notes(task.dut_module_name)
        fix = hints.testbench_workarounds(tb)
        new = {tb.name: fix.text} if fix.notes else {}
        notes.extend(fix.notes)
        try:
            per = plan_per_instance(task.rtl_files, SourceFile(name=tb.name, content=fix.text),
                                    plan.tb_top, plan.dut_hier)
            new.update(per.sources)
            notes.extend(per.notes)
        except Exception as exc:  # the rewrite is a refinement: never break a call
            log.warning("per-instance rewrite failed (%s: %s)", type(exc).__name__, exc)
            notes.append("per-instance coverage unavailable for this design; repeated "
                         "modules are merged per module")
        for name, text in new.items():
            _write(workdir / name, text)
        given = {f.name: f.content for f in [*task.rtl_files, tb]}
        return hints.Rewrite(notes, fix.nba_lines, {n: given[n] for n in new}, new)

    def _run(self, task, tb, plan, workdir, base, notes, build_log, build_s) -> Observation:
        cfg = self.config
        cov_file = f"cov_{secrets.token_hex(16)}.dat"
        env = {
            "PATH": self.toolchain.env().get("PATH", ""),
            "LLM4COV_COVERAGE_FILE": cov_file,
            "LLM4COV_STOP_SITES": ";".join(stop_sites([*task.rtl_files, tb])),
            "LLM4COV_SIM_TIME_LIMIT": repr(cfg.sim_time_limit_s),
            "LLM4COV_MAX_TIME_SLOTS": str(cfg.max_time_slots),
        }
        if self.toolchain.z3:
            env["VERILATOR_SOLVER"] = f"{self.toolchain.z3} --in"
        self._phase("run")
        run = run_limited(
            ["./obj/sim", f"+verilator+seed+{cfg.seed}", "+verilator+rand+reset+0"],
            cwd=str(workdir),
            env=env,
            timeout_s=cfg.run_timeout_s,
            limits=Limits(cfg.run_cpu_limit_s, cfg.run_memory_bytes, cfg.run_file_bytes,
                          dir_bytes=cfg.run_dir_bytes),
            output_cap=cfg.output_cap_bytes,
            sandbox=run_sandbox(self.toolchain) if cfg.sandbox else None,
            record_env=END_FD_ENV,
        )
        end, problem = _read_end(run, workdir / cov_file)
        sim_out = scrub_paths(run.output, str(workdir))
        notes.extend(_run_notes(sim_out, tb, self.toolchain.z3 is not None))
        size = end.get("coverage", -1)
        if size > COVERAGE_MAX_BYTES:
            notes.append(f"the coverage file is {size / 1024**2:.0f} MiB, over the "
                         f"{COVERAGE_MAX_BYTES >> 20} MiB cap: not read")
        trusted = 0 <= size <= COVERAGE_MAX_BYTES
        self._phase("coverage")
        points = cov.parse_coverage_dat(workdir / cov_file) if trusted else []
        if cfg.keep_workdir:
            _keep_coverage(workdir, cov_file if trusted else None)
        rtl_names = {f.name for f in task.rtl_files}
        points, excluded = split_points(points, parse_rules(cfg.exclusions))
        if note := excluded_note(cov.dut_points(excluded, plan.dut_hier, rtl_names, plan.modules)):
            notes.append(note)
        report = cov.summarize(points, plan.dut_hier, rtl_names, plan.modules) if points else None
        if report is not None and report.merged:
            notes.append("instances merged by Verilator (one counter set, counted once): "
                         + ", ".join(report.merged))
        status, reason = _classify(run, end, problem, report is not None, cfg, notes)
        sources = {f.name: f.content for f in task.rtl_files}
        uncovered, more = (
            cov.uncovered_items(points, plan.dut_hier, sources, cfg.feedback_limit,
                                plan.modules)
            if report else ([], 0)
        )
        if more:
            notes.append(f"{more} more uncovered items not listed")
        log_text = "\n".join(
            part for part in (
                "== build ==\n" + build_log if build_log.strip() else "",
                "== simulation output ==\n" + sim_out,
            ) if part
        )
        return Observation(
            status=status,
            end_reason=reason,
            coverage=report,
            log=bound(log_text, cfg.log_limit_chars),
            uncovered=uncovered,
            notes=notes,
            tb_error_count=int(end.get("errors", 0) or 0),
            build_s=round(build_s, 3),
            run_s=round(run.wall_s, 3),
            sim_time=_sim_time(end, tb.content),
            **base,
        )


def repo_args(task: Task, tb: SourceFile, tb_top: str) -> list[str]:
    """Verilator's ``-I`` list (:func:`search_dirs`), the task's macros (``-D``) and its
    parameter overrides (``-G``) for those the testbench top declares (Verilator
    rejects a ``-G`` that names no parameter of the top)."""
    declared = module_parameters(tb, tb_top) if task.parameters else set()
    return [
        *(f"-I{d}" for d in search_dirs(task.rtl_files, task.include_dirs)),
        *(f"-D{d}" for d in define_args(task.defines)),
        *(f"-G{k}={v}" for k, v in task.parameters.items() if k in declared),
    ]


def _tb_name(name: str, task: Task) -> str:
    """The testbench file name, renamed if it would overwrite an RTL file."""
    name = PurePosixPath(name).name or "tb.sv"
    if not name.endswith(COMPILED_SUFFIXES):
        name += ".sv"
    taken = {f.name for f in task.rtl_files} | {DRIVER.name, DRIVER_HOOKS.name}
    return name if name not in taken else f"llm4cov_{name}"


def _write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8", errors="surrogateescape")


def _keep_coverage(workdir: Path, cov_file: str | None) -> None:
    """Rename the run's coverage file ``cov_file`` (random name, checked against the end
    record) to :data:`KEPT_COVERAGE`, replacing whatever the testbench wrote under that
    name; with ``cov_file`` None (no trusted coverage), remove such a file."""
    kept = workdir / KEPT_COVERAGE
    if kept.is_dir() and not kept.is_symlink():
        shutil.rmtree(kept)
    if cov_file is not None:
        os.replace(workdir / cov_file, kept)
    else:
        kept.unlink(missing_ok=True)


def _read_end(run: ProcessResult, cov_path: Path) -> tuple[dict, str | None]:
    """The driver's end record from the run's record pipe, checked strictly.

    Returns ``(record, None)`` for exactly one well-formed record that agrees with how
    the process ended (exit 0, or 1 after ``$fatal``; no wall-clock kill unless the
    record says so) and with the coverage file's size; ``({}, None)`` when there is no
    record (a crash); ``({}, problem)`` for anything else, which then counts as a crash.
    """
    if run.record_bytes == 0:
        return {}, None
    match = _END_RECORD.fullmatch(run.record) if run.record_bytes == len(run.record) else None
    if match is None or match["end"].decode() not in _END_REASONS:
        return {}, "the simulation's end record is malformed or repeated (not trusted)"
    end: dict = {k: v.decode() for k, v in match.groupdict().items()}
    end["file"] = bytes.fromhex(end["file"]).decode("utf-8", errors="replace")
    end["coverage"] = int(end["coverage"])
    expected = 1 if end["end"] == "fatal" else 0
    if run.returncode != expected or run.timed_out != (end["end"] == "wall_timeout"):
        return {}, (f"the end record ({end['end']}) contradicts how the simulation ended "
                    f"(exit status {run.returncode}{', wall-clock kill' if run.timed_out else ''})")
    size = cov_path.stat().st_size if cov_path.is_file() else -1
    if end["coverage"] != size:
        return {}, "the coverage file does not match the end record (not trusted)"
    return end, None


def _sim_time(end: dict[str, str], testbench: str) -> str:
    if "time" not in end:
        return ""
    seconds = int(end["time"]) * 10.0 ** int(end.get("precision", "-12"))
    return sim_time_text(seconds, testbench)


def _classify(
    run: ProcessResult, end: dict, problem: str | None, has_cov: bool, cfg: SimConfig,
    notes: list[str],
):
    """``(Status, EndReason)`` of a run from its checked end record (``problem``: why
    a record was not trusted; such a run is a crash whatever the record said)."""
    if run.dir_exceeded:
        notes.append(f"the run was killed: the files the testbench wrote passed "
                     f"{cfg.run_dir_bytes >> 20} MiB together")
        return Status.RUNTIME_ERROR, EndReason.CRASHED
    if problem:
        notes.append(problem)
        return Status.RUNTIME_ERROR, EndReason.CRASHED
    reason = end.get("end")
    if reason in ("finish", "stop", "no_events"):
        if reason == "stop":
            notes.append(f"ended by $stop at {end.get('file')}:{end.get('line')} "
                         "(treated as the end of the simulation)")
        if reason == "no_events":
            notes.append("no $finish: the simulation ended because no events were left")
        status = Status.SUCCESS if has_cov else Status.NO_COVERAGE
        if not has_cov:
            notes.append("the DUT instance has no coverage points in coverage.dat")
        return status, EndReason(reason)
    if reason == "fatal":
        notes.append("coverage up to the abort is kept in the report but scores 0")
        return Status.RUNTIME_ERROR, EndReason.FATAL
    if reason == "sim_time_limit":
        notes.append(
            f"no $finish within the simulated-time limit ({cfg.sim_time_limit_s:g} s of "
            f"simulated time or {cfg.max_time_slots} time steps); the run was stopped there "
            "(coverage kept, scores 0)"
        )
        return Status.TIMEOUT, EndReason.SIM_TIME_LIMIT
    if reason == "wall_timeout" or run.timed_out:
        notes.append(f"the run exceeded the wall-clock limit of {cfg.run_timeout_s:g} s")
        return Status.TIMEOUT, EndReason.WALL_TIMEOUT
    sig = run.signal_name
    if sig:
        why = {"SIGXCPU": "CPU-time limit", "SIGXFSZ": "file-size limit",
               "SIGKILL": "killed (memory limit?)", "SIGSEGV": "segmentation fault"}
        notes.append(f"simulation killed by {sig} ({why.get(sig, 'signal')})")
    else:
        notes.append(f"simulation exited with code {run.returncode} without an end record")
    return Status.RUNTIME_ERROR, EndReason.CRASHED


def _tool_failure(build: ProcessResult, files: list[SourceFile]) -> str | None:
    """Why a failed build is the simulator's fault (``hints.tool_failure``), else None."""
    if build.returncode == 0 or build.timed_out:
        return None
    return hints.tool_failure(build.output, files)


def _run_notes(sim_out: str, tb: SourceFile, has_z3: bool) -> list[str]:
    notes = []
    if "DIDNOTCONVERGE" in sim_out:
        lines = always_without_timing(tb)
        where = ", ".join(f"{tb.name}:{n}" for n in lines)
        notes.append(
            "the design did not converge (a zero-delay loop)"
            + (f": `always` without delay or event control at {where}" if where else "")
        )
    if "SAT solver" in sim_out or "Subprocess command" in sim_out:
        notes.append(
            "randomize() could not reach the SMT solver (z3); constrained randomization "
            "failed and stimulus values are not randomized"
            + ("" if has_z3 else " - install the z3-solver package")
        )
    return notes
