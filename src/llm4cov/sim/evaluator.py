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

import logging
import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath

from llm4cov.sim import coverage as cov
from llm4cov.sim import precheck
from llm4cov.sim.artifacts import ArtifactStore
from llm4cov.sim.build import DRIVER, DRIVER_HOOKS, TOP_PREFIX, cflags, run_build
from llm4cov.sim.cache import ResultCache, cache_root, cacheable, result_key
from llm4cov.sim.config import SimConfig
from llm4cov.sim.logs import bound, clean_build_log, scrub_paths
from llm4cov.sim.observation import EndReason, Observation, Status
from llm4cov.sim.process import Limits, ProcessResult, run_limited
from llm4cov.sim.sandbox import check_testbench
from llm4cov.sim.structure import (
    StructureError,
    TestbenchPlan,
    always_without_timing,
    plan_testbench,
    stop_sites,
)
from llm4cov.sim.toolchain import Toolchain, find_toolchain
from llm4cov.tasks.hdl import COMPILED_SUFFIXES
from llm4cov.tasks.model import SourceFile, Task

log = logging.getLogger(__name__)

_END_LINE = re.compile(r"(\w+)=(\S*)")


class Evaluator:
    """``Sim(repo, testbench)`` with the real Verilator (thread- and process-safe).

    Raises:
        ToolchainError: at construction, when the simulator toolchain is missing.
    """

    def __init__(self, config: SimConfig | None = None, toolchain: Toolchain | None = None):
        self.config = config or SimConfig()
        self.toolchain = toolchain or find_toolchain()
        root = cache_root(self.config)
        self._results = (
            ResultCache(root / "results.sqlite3", self.config.cache_max_bytes)
            if self.config.result_cache else None
        )
        self._artifacts = ArtifactStore(
            root / "build", self.toolchain.verilator_root, self.toolchain.version
        )

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
            return self._evaluate(task, tb, aux, instance)
        key = result_key(
            task, tb, aux, instance, self.config, self.toolchain.version,
            self.toolchain.z3 is not None,
        )
        hit = self._results.get(key)
        if hit is not None:
            return hit
        obs = self._evaluate(task, tb, aux, instance)
        if cacheable(obs):
            self._results.put(key, obs)
        return obs

    def _evaluate(
        self, task: Task, tb: SourceFile, aux: list[SourceFile], instance: str | None
    ) -> Observation:
        base = self._base_fields()
        reasons = check_testbench(tb.content, tb.name)
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
        workdir = Path(tempfile.mkdtemp(prefix="llm4cov-", dir=self.config.workdir_root))
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
            if self.config.keep_workdir:
                log.info("kept work dir %s", workdir)
            else:
                shutil.rmtree(workdir, ignore_errors=True)

    def _base_fields(self) -> dict:
        return {
            "simulator": f"verilator {self.toolchain.version}",
            "coverage_options": self.config.coverage_options(),
            "seed": self.config.seed,
        }

    # -- build -----------------------------------------------------------------------

    def verilate_command(
        self, task: Task, tb: SourceFile, plan: TestbenchPlan, fsm: bool = False
    ) -> list[str]:
        """The Verilator step of the build (run in the work dir; make follows)."""
        cfg = self.config
        flags = [f for f in cfg.coverage_options() if fsm or f != "--coverage-fsm"]
        sources = [f.name for f in task.rtl_files if f.name.endswith(COMPILED_SUFFIXES)]
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
            *(f"-I{d}" for d in [".", *_rtl_dirs(task)]),
            *cfg.extra_verilator_args,
            *sources,
            tb.name,
            DRIVER.name,
        ]

    def _build(self, task, tb, plan, workdir: Path, fsm: bool) -> ProcessResult:
        return run_build(
            self.verilate_command(task, tb, plan, fsm),
            workdir,
            self.toolchain.env(),
            self.config,
            self._artifacts,
        )

    def _precheck(self, task, tb, plan, workdir: Path) -> list[precheck.Finding]:
        """The pre-check's sure errors; none if pyslang itself fails (Verilator decides)."""
        dirs = [workdir, *(workdir / d for d in _rtl_dirs(task))]
        try:
            return precheck.precheck(task.rtl_files, tb, plan.tb_top, dirs)
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

        fsm = self.config.fsm_coverage
        t0 = time.monotonic()
        build = self._build(task, tb, plan, workdir, fsm)
        if fsm and build.returncode != 0 and "Internal Error" in build.output:
            notes.append("FSM coverage crashed Verilator (internal error); rebuilt without it")
            fsm = False
            build = self._build(task, tb, plan, workdir, fsm)
            base = {**base, "coverage_options": [
                o for o in base["coverage_options"] if o != "--coverage-fsm"
            ]}
        build_s = time.monotonic() - t0
        build_log = clean_build_log(build.output, str(workdir))
        notes.extend(_build_notes(build_log))
        if build.timed_out or build.returncode != 0:
            tool_error = "Internal Error" in build.output
            if tool_error:
                notes.append("simulator internal error: a tool problem, not the testbench")
            status = Status.TIMEOUT if build.timed_out else Status.COMPILE_ERROR
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

    def _run(self, task, tb, plan, workdir, base, notes, build_log, build_s) -> Observation:
        cfg = self.config
        token = secrets.token_hex(8)
        cov_file, end_file = f"cov_{token}.dat", f"end_{token}.txt"
        env = {
            "PATH": self.toolchain.env().get("PATH", ""),
            "LLM4COV_COVERAGE_FILE": cov_file,
            "LLM4COV_END_FILE": end_file,
            "LLM4COV_STOP_SITES": ";".join(stop_sites([*task.rtl_files, tb])),
            "LLM4COV_SIM_TIME_LIMIT": repr(cfg.sim_time_limit_s),
            "LLM4COV_MAX_TIME_SLOTS": str(cfg.max_time_slots),
        }
        if self.toolchain.z3:
            env["VERILATOR_SOLVER"] = f"{self.toolchain.z3} --in"
        run = run_limited(
            ["./obj/sim", f"+verilator+seed+{cfg.seed}", "+verilator+rand+reset+0"],
            cwd=str(workdir),
            env=env,
            timeout_s=cfg.run_timeout_s,
            limits=Limits(cfg.run_cpu_limit_s, cfg.run_memory_bytes, cfg.run_file_bytes),
            output_cap=cfg.output_cap_bytes,
        )
        end = _read_end(workdir / end_file)
        sim_out = scrub_paths(run.output, str(workdir))
        notes.extend(_run_notes(sim_out, tb, self.toolchain.z3 is not None))
        points = cov.parse_coverage_dat(workdir / cov_file) if (workdir / cov_file).exists() else []
        report = cov.summarize(points, plan.dut_hier) if points else None
        status, reason = _classify(run, end, report is not None, cfg, notes)
        sources = {f.name: f.content for f in task.rtl_files}
        uncovered, more = (
            cov.uncovered_items(points, plan.dut_hier, sources, cfg.feedback_limit)
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
            sim_time=_sim_time(end),
            **base,
        )


def _rtl_dirs(task: Task) -> list[str]:
    """Sub-directories of the RTL files (Verilator's ``-I`` list besides ``.``)."""
    return sorted({str(PurePosixPath(f.name).parent) for f in task.rtl_files} - {"."})


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


def _read_end(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return dict(_END_LINE.findall(path.read_text(errors="replace")))


def _sim_time(end: dict[str, str]) -> str:
    if "time" not in end:
        return ""
    seconds = int(end["time"]) * 10.0 ** int(end.get("precision", "-12"))
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("ps", 1e-12)):
        if seconds >= scale or unit == "ps":
            return f"{seconds / scale:g}{unit}"
    return ""  # pragma: no cover


def _classify(run: ProcessResult, end: dict, has_cov: bool, cfg: SimConfig, notes: list[str]):
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


def _build_notes(build_log: str) -> list[str]:
    notes = []
    if "COVERIGN" in build_log:
        notes.append(
            "Verilator ignores covergroups/coverpoints (COVERIGN): functional coverage the "
            "testbench prints is not measured; code coverage is reported normally"
        )
    if "TIMESCALEMOD" in build_log:
        notes.append("timescale only in some files (TIMESCALEMOD warning); simulation runs")
    return notes


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
