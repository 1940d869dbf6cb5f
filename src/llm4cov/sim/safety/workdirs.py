"""Temporary work dirs of simulator calls that a killed run cannot leak.

Each work dir ``<temp dir>/llm4cov-XXXXXXXX`` holds a lock file, :data:`LOCK_NAME`,
locked (``fcntl.flock``) by the process that uses the dir for as long as it does. The
kernel drops the lock when that process dies, however it dies (SIGKILL included). The
first work dir a process creates in a temp dir sweeps it: every ``llm4cov-*`` dir whose
lock file can be locked belongs to a dead process and is removed. A dir without the
lock file (kept with ``SimConfig.keep_workdir``, or made by another program) is never
touched. The lock file is locked before it gets its name, so a sweep never sees a live
dir unlocked.

Layout of a simulator call's work dir: the repository's files, the testbench and its
data files live in their own subfolder :data:`SOURCES` (the working directory of the
compiler and of the simulation, so every name in a log is the repo's own); everything
else (the lock file, the build's ``obj/``, the driver, the precompiled header, the
coverage file) is the evaluator's and lies beside it, where no repo, aux or task file
name can reach.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "llm4cov-"
LOCK_NAME = ".llm4cov-workdir.lock"
#: The subfolder of a work dir that holds the repo's, the task's and the testbench's files.
SOURCES = "src"

_held: dict[Path, int] = {}  # work dir -> fd of its locked lock file
_swept: set[str] = set()
_mutex = threading.Lock()


def create(root: str | None = None, prefix: str = PREFIX) -> Path:
    """A new locked work dir ``<root>/<prefix>XXXXXXXX`` (``root`` default: the temp
    dir; ``prefix`` starts with :data:`PREFIX`), after removing the dirs of dead
    processes there (once per process and ``root``).

    Raises:
        OSError: the dir cannot be created.
    """
    parent = root or tempfile.gettempdir()
    with _mutex:
        first = parent not in _swept
        _swept.add(parent)
    if first:
        sweep(parent)
    workdir = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    staging = workdir / f"{LOCK_NAME}.new"
    fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(staging, workdir / LOCK_NAME)
    with _mutex:
        _held[workdir] = fd
    return workdir


def sources(workdir: Path) -> Path:
    """The folder of ``workdir`` that holds the repository, aux and testbench files
    (:data:`SOURCES`)."""
    return workdir / SOURCES


def release(workdir: Path, keep: bool = False) -> None:
    """Unlock ``workdir`` and remove it; with ``keep``, leave it (without its lock file,
    so no sweep removes it)."""
    with _mutex:
        fd = _held.pop(workdir, None)
    if keep:
        with contextlib.suppress(OSError):
            (workdir / LOCK_NAME).unlink()
        log.info("kept work dir %s", workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    if fd is not None:
        os.close(fd)


def sweep(root: str | Path) -> list[Path]:
    """Remove the work dirs in ``root`` whose owner is dead (their lock file is not
    locked); returns them. Never raises."""
    removed: list[Path] = []
    try:
        candidates = [p for p in Path(root).iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for workdir in candidates:
        try:
            fd = os.open(workdir / LOCK_NAME, os.O_RDWR)
        except OSError:  # no lock file: kept, being created, or not ours
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # locked: its process is alive
            os.close(fd)
            continue
        try:
            shutil.rmtree(workdir, ignore_errors=True)
            removed.append(workdir)
        finally:
            os.close(fd)
    if removed:
        log.info("removed %d work dirs of killed runs in %s", len(removed), root)
    return removed


def regular_size(path: Path) -> int:
    """The size of ``path`` in bytes when it is a regular file with one link (not a
    symlink, so nothing outside the work dir), else -1."""
    try:
        info = path.lstat()
    except OSError:
        return -1
    return info.st_size if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 else -1
