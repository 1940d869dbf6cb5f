"""One evaluator call that keeps what the reports need: ``coverage.dat``, and on request
the work dir (build and all) and a waveform dump.

The Observation carries summaries only, so the annotated reports re-read
``coverage.dat``. This runs the ordinary evaluator with ``keep_workdir`` into a fresh
folder (and no result cache, so the simulation really runs), copies ``coverage.dat``
out, and removes the work dir unless asked to keep it. The evaluator is deterministic,
so ``llm4cov gen`` can re-run its best testbench this way and get the same coverage it
scored.

Waveforms (``trace="vcd"`` or ``"fst"``): the build adds Verilator's ``--trace`` or
``--trace-fst`` (through ``SimConfig.extra_verilator_args``; the driver turns tracing on
when built with it). A testbench that calls ``$dumpfile`` keeps its own dump (the
sandbox only lets it write inside the work dir); otherwise a bound module
(``bind <tb top> llm4cov_trace``) dumps the whole design to ``llm4cov_trace.<ext>``.
The dump is kept when it is at most ``trace_max_bytes``; the run's file-size limit
(``SimConfig.run_file_bytes``) bounds it during the run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from llm4cov.sim.config import SimConfig
from llm4cov.sim.coverage import Point, parse_coverage_dat
from llm4cov.sim.observation import EndReason, Observation
from llm4cov.sim.structure import StructureError, TestbenchPlan, plan_testbench
from llm4cov.tasks.model import SourceFile, Task

TRACE_FORMATS = ("vcd", "fst")
TRACE_MAX_BYTES = 100 * 1024**2
TRACE_MODULE = "llm4cov_trace"
_DUMPFILE = re.compile(r'\$dumpfile\s*\(\s*"([^"]+)"')


@dataclass
class Capture:
    """An observation with its raw points and the files kept for the user."""

    observation: Observation
    points: list[Point]
    dut_hier: str = ""
    coverage_dat: Path | None = None
    workdir: Path | None = None
    trace: Path | None = None
    notes: list[str] = field(default_factory=list)


def trace_module(tb_top: str, ext: str) -> SourceFile:
    """The bound module that dumps every signal when the testbench dumps nothing."""
    return SourceFile(
        name=f"{TRACE_MODULE}.sv",
        content=(
            f"module {TRACE_MODULE};\n"
            f'  initial begin $dumpfile("{TRACE_MODULE}.{ext}"); $dumpvars; end\n'
            f"endmodule\n"
            f"bind {tb_top} {TRACE_MODULE} {TRACE_MODULE}_u();\n"
        ),
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


def _plan(task: Task, testbench: str, tb_name: str) -> TestbenchPlan | None:
    try:
        return plan_testbench(task.rtl_files, SourceFile(name=tb_name, content=testbench),
                              task.dut_module_name, None)
    except StructureError:
        return None  # the evaluator reports it as a compile error


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
) -> Capture:
    """Simulate ``testbench`` and keep ``out_dir/coverage.dat`` and the waveform dump
    (nothing is copied when ``out_dir`` is None) and, with ``keep_workdir``, the work dir.

    Raises:
        ValueError: ``trace`` is not None, ``"vcd"`` or ``"fst"``.
        ToolchainError: the simulator toolchain is missing.
    """
    from llm4cov.sim.evaluator import Evaluator

    if trace is not None and trace not in TRACE_FORMATS:
        raise ValueError(f"trace must be one of {', '.join(TRACE_FORMATS)}, got {trace!r}")
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="llm4cov-keep-", dir=config.workdir_root))
    aux: list[SourceFile] = []
    extra = list(config.extra_verilator_args)
    own_dump = _DUMPFILE.search(testbench)
    plan = _plan(task, testbench, tb_name)
    if trace:
        extra.append("--trace" if trace == "vcd" else "--trace-fst")
        if own_dump is None and plan is not None:
            aux.append(trace_module(plan.tb_top, trace))
            extra.append(aux[0].name)
    cfg = replace(config, keep_workdir=True, workdir_root=str(root), result_cache=False,
                  extra_verilator_args=tuple(extra))
    obs = Evaluator(cfg).evaluate(task, testbench, tb_name=tb_name, aux_files=aux,
                                  any_instance=any_instance)
    work = next(root.glob("llm4cov-*"), None)
    result = Capture(observation=obs, points=[], dut_hier=(
        obs.coverage.dut_hier if obs.coverage else plan.dut_hier if plan else ""))
    if work is not None:
        dat = next(work.glob("cov_*.dat"), None)
        if dat is not None:
            result.points = parse_coverage_dat(dat)
            result.coverage_dat = out_dir / "coverage.dat" if out_dir else dat
            if out_dir:
                shutil.copyfile(dat, result.coverage_dat)
        if trace and out_dir and obs.end_reason is not EndReason.NOT_RUN:
            dump_name = own_dump.group(1) if own_dump else f"{TRACE_MODULE}.{trace}"
            _keep_dump(work / dump_name, out_dir, trace_max_bytes, result)
    if keep_workdir and work is not None:
        result.workdir = work
    else:
        shutil.rmtree(root, ignore_errors=True)
    return result


def _keep_dump(dump: Path, out_dir: Path, cap: int, result: Capture) -> None:
    if not dump.is_file() or dump.stat().st_size == 0:
        result.notes.append(f"no waveform dump was written ({dump.name})")
        return
    size = dump.stat().st_size
    if size > cap:
        result.notes.append(
            f"waveform dump {dump.name} is {size / 1024**2:.1f} MiB, over the "
            f"{cap / 1024**2:.0f} MiB cap: not copied (use --keep-workdir to keep it)"
        )
        return
    result.trace = out_dir / dump.name
    shutil.copyfile(dump, result.trace)
