"""Evaluator calls that keep what the reports need: ``coverage.dat``, and on request
the work dir (build and all) and a waveform dump.

The Observation carries summaries only, so the annotated reports re-read
``coverage.dat``. :func:`capture` runs the ordinary evaluator with its work dir kept
in a fresh folder (:meth:`~llm4cov.sim.evaluator.Evaluator.evaluate_kept`: no result
cache, so the simulation really runs, and the evaluator's own structure plan), copies
``coverage.dat`` out, and removes the work dir unless asked to keep it (``llm4cov
sim``). A :class:`~llm4cov.sim.model.call.SimCall` with ``keep_coverage`` does the same in
the evaluator of an executor's worker: the observation comes back with the run's own
``coverage.dat`` (:class:`~llm4cov.sim.model.observation.CoverageData`, compressed, at most
``COVERAGE_MAX_BYTES`` before compression), so ``llm4cov gen`` builds its reports from
the round that produced the result, with no second simulation
(:func:`from_observation`).

Waveforms (``trace="vcd"`` or ``"fst"``, ``SimConfig.trace``): the backend builds with
its dump on (Verilator: ``--trace`` or ``--trace-fst``; the driver turns tracing on
when built with it). A testbench that calls ``$dumpfile`` keeps its own dump (the
sandbox only lets it write inside the work dir); otherwise a bound module
(``bind <tb top> llm4cov_trace``) dumps the whole design to ``llm4cov_trace.<ext>``.
That module is generated code: the evaluator appends it to the testbench as compiled
(``Evaluator.evaluate_kept(extend=...)``) and checks the result like the testbench;
the top's name comes from the evaluator's own structure plan (Verilator's view) and is
written as an escaped identifier (:func:`sv_identifier`), so no name the testbench
chose becomes code. The dump is kept when it is at most ``trace_max_bytes``; the run's
file-size limit (``SimConfig.run_file_bytes``) bounds it during the run.

What the testbench wrote is never trusted for a path or a name: the coverage read is
the evaluator's own (renamed to ``coverage.dat`` in the kept work dir, at most
``COVERAGE_MAX_BYTES``), and the dump copied is a regular file (no link) that the run
left inside the work dir, found by walking it without following links. Which modules
are RTL (``Capture.modules``, for the reports) is the evaluator's plan of the run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from llm4cov.sim.analysis.structure import TestbenchPlan
from llm4cov.sim.backends import CoverageFormat, coverage_format
from llm4cov.sim.config import DEFAULT_BACKEND, SimConfig
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.coverage import DesignModules, Point
from llm4cov.sim.model.observation import EndReason, Observation
from llm4cov.sim.safety import workdirs
from llm4cov.tasks.model import Task, is_identifier

TRACE_FORMATS = ("vcd", "fst")
TRACE_MAX_BYTES = 100 * 1024**2
TRACE_MODULE = "llm4cov_trace"
_DUMPFILE = re.compile(r'\$dumpfile\s*\(\s*"([^"\n]+)"')  # a string literal: one line


@dataclass
class Capture:
    """An observation with its raw points and the files kept for the user."""

    observation: Observation
    points: list[Point]
    dut_hier: str = ""
    modules: DesignModules | None = None  # which modules are RTL (forged points never count)
    coverage_dat: Path | None = None
    coverage_format: CoverageFormat | None = None  # how coverage_dat reads (the backend's)
    workdir: Path | None = None
    trace: Path | None = None
    notes: list[str] = field(default_factory=list)


def sv_identifier(name: str) -> str | None:
    """``name`` as SystemVerilog source: itself when a simple identifier, else as an
    escaped identifier (``\\name`` and a space, IEEE 1800 5.6.1), which ends at white
    space, so none of its characters can become code; None when it holds white space
    or a character outside printable ASCII (no identifier can be written for it)."""
    if is_identifier(name):
        return name
    if name and all(33 <= ord(c) <= 126 for c in name):
        return f"\\{name} "
    return None


def trace_module(tb_top: str, ext: str) -> str | None:
    """The module, bound into the testbench top, that dumps every signal when the
    testbench dumps nothing (generated code: a `` `line`` names it
    ``llm4cov_trace.sv``); None when no identifier can name ``tb_top``."""
    target = sv_identifier(tb_top)
    if target is None:
        return None
    return (
        f'`line 1 "{TRACE_MODULE}.sv" 0\n'
        f"module {TRACE_MODULE};\n"
        f'  initial begin $dumpfile("{TRACE_MODULE}.{ext}"); $dumpvars; end\n'
        f"endmodule\n"
        f"bind {target} {TRACE_MODULE} {TRACE_MODULE}_u();\n"
    )


def fst_headers_missing() -> str | None:
    """Why ``--trace fst`` cannot build here (Verilator's FST writer needs the zlib and
    lz4 C headers, e.g. Debian ``zlib1g-dev liblz4-dev``), or None when it can."""
    try:
        done = subprocess.run(["g++", "-E", "-x", "c++", "-"], input="#include <zlib.h>\n"
                              "#include <lz4.h>\n", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run g++ ({exc})"
    if done.returncode == 0:
        return None
    return ("--trace fst needs the zlib and lz4 C headers (Debian: zlib1g-dev liblz4-dev); "
            "use --trace vcd")


def capture(
    task: Task,
    testbench: str,
    config: SimConfig,
    out_dir: Path | None,
    *,
    tb_name: str = "tb.sv",
    any_instance: bool = False,
    keep_workdir: bool = False,
    trace: str | None = None,
    trace_max_bytes: int = TRACE_MAX_BYTES,
    keep_coverage_dat: bool = True,
) -> Capture:
    """Simulate ``testbench`` and keep ``out_dir/coverage.dat`` (unless
    ``keep_coverage_dat`` is False: ``gen``'s re-run for a waveform keeps the scored
    run's) and the waveform dump (nothing is copied when ``out_dir`` is None) and, with
    ``keep_workdir``, the work dir.

    Raises:
        ValueError: ``trace`` is not None, ``"vcd"`` or ``"fst"``.
        ToolchainError: the simulator toolchain is missing.
    """
    if trace is not None and trace not in TRACE_FORMATS:
        raise ValueError(f"trace must be one of {', '.join(TRACE_FORMATS)}, got {trace!r}")
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    root = workdirs.create(config.workdir_root, prefix="llm4cov-keep-")
    try:
        return _capture_in(root, task, testbench, config, out_dir, tb_name=tb_name,
                           any_instance=any_instance, keep_workdir=keep_workdir,
                           trace=trace, trace_max_bytes=trace_max_bytes,
                           keep_coverage_dat=keep_coverage_dat)
    finally:
        workdirs.release(root, keep=keep_workdir)


def _capture_in(root: Path, task: Task, testbench: str, config: SimConfig,
                out_dir: Path | None, *, tb_name: str, any_instance: bool,
                keep_workdir: bool, trace: str | None, trace_max_bytes: int,
                keep_coverage_dat: bool) -> Capture:
    from llm4cov.sim.evaluator import Evaluator

    own_dump = _DUMPFILE.search(testbench)

    def dumper(plan: TestbenchPlan) -> str:
        return trace_module(plan.tb_top, trace) or "" if trace else ""

    cfg = replace(config, result_cache=False, trace=trace)
    kept = Evaluator(cfg).evaluate_kept(
        SimCall(task, testbench, tb_name, any_instance=any_instance), root,
        extend=dumper if trace and own_dump is None else None)
    obs, plan, work = kept.observation, kept.plan, kept.workdir
    result = Capture(observation=obs, points=[], dut_hier=(
        obs.coverage.dut_hier if obs.coverage else plan.dut_hier if plan else ""),
        modules=plan.modules if plan else None,
        coverage_format=coverage_format(config.backend))
    if work is not None:
        read_coverage(work, out_dir if keep_coverage_dat else None, result)
        if trace and out_dir and obs.end_reason is not EndReason.NOT_RUN:
            wanted = own_dump.group(1) if own_dump else f"{TRACE_MODULE}.{trace}"
            _keep_dump(work, wanted, out_dir, trace_max_bytes, result)
    if keep_workdir and work is not None:
        result.workdir = work
    return result


def read_coverage(work: Path, out_dir: Path | None, result: Capture) -> None:
    """Fill ``result.points`` from the run's own coverage file in the kept work dir
    ``work`` (:func:`~llm4cov.sim.evaluator.kept_coverage`, ``result.coverage_format``)
    and copy it to ``out_dir``."""
    from llm4cov.sim.evaluator import kept_coverage

    fmt = result.coverage_format
    dat = kept_coverage(work, fmt, result.notes)
    if fmt is not None and dat is not None:
        result.points = fmt.read(dat)
        result.coverage_dat = out_dir / "coverage.dat" if out_dir else dat
        if out_dir:
            shutil.copyfile(dat, result.coverage_dat)


def from_observation(obs: Observation, out_dir: Path) -> Capture:
    """The :class:`Capture` of an observation that carries its run's coverage data
    (``keep_coverage``): ``out_dir/coverage.dat`` written from it and its points read
    back. Without coverage data the capture has no points (the reports say so).

    Raises:
        OSError: ``out_dir`` cannot be written.
        zlib.error: the coverage data is corrupt.
    """
    fmt = coverage_format(obs.backend or DEFAULT_BACKEND)
    result = Capture(observation=obs, points=[],
                     dut_hier=obs.coverage.dut_hier if obs.coverage else "",
                     coverage_format=fmt)
    data = obs.coverage_data
    if data is None or fmt is None:
        return result
    out_dir.mkdir(parents=True, exist_ok=True)
    dat = out_dir / fmt.kept_name
    dat.write_bytes(zlib.decompress(data.dat_zlib))
    result.points = fmt.read(dat)
    result.coverage_dat = dat
    result.dut_hier = data.dut_hier
    result.modules = DesignModules(frozenset(data.rtl_modules), frozenset(data.tb_modules))
    return result


def _run_dumps(work: Path) -> list[Path]:
    """The waveform dumps (``*.vcd``, ``*.fst``) a run left in ``work``, sorted: regular
    files found by walking ``work`` without following links (so none lies outside)."""
    return sorted(
        Path(parent, name)
        for parent, _dirs, names in os.walk(work)
        for name in names
        if name.endswith(tuple(f".{ext}" for ext in TRACE_FORMATS))
        and workdirs.regular_size(Path(parent, name)) >= 0
    )


def _keep_dump(work: Path, wanted: str, out_dir: Path, cap: int, result: Capture) -> None:
    """Copy the dump named ``wanted`` (the testbench's ``$dumpfile``, a guess read from
    its text) if the run left it, else the first of :func:`_run_dumps`."""
    dumps = _run_dumps(work)
    if not dumps:
        result.notes.append(f"no waveform dump was written ({Path(wanted).name})")
        return
    dump = next((d for d in dumps if d == workdirs.sources(work) / wanted), dumps[0])
    size = workdirs.regular_size(dump)
    if size == 0:
        result.notes.append(f"no waveform dump was written ({dump.name})")
        return
    if size > cap:
        result.notes.append(
            f"waveform dump {dump.name} is {size / 1024**2:.1f} MiB, over the "
            f"{cap / 1024**2:.0f} MiB cap: not copied (use --keep-workdir to keep it)"
        )
        return
    result.trace = out_dir / dump.name
    shutil.copyfile(dump, result.trace)
