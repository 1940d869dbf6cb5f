"""One writer per run directory.

Bench, synth and pipeline run directories are resumable: a rerun reads what is there and
appends what is missing. Two processes on one directory at once (a rerun typed while a
``nohup`` job still runs) would both append the same rows and interleave ``run.json``
updates, so the second one is refused.

The lock is a POSIX record lock (``fcntl.lockf``) on ``RUN_DIR/.lock``, which holds the
owner's pid. Record locks belong to the process: the kernel drops them when it exits,
however it ends (a killed run never leaves a stale lock), and the simulation workers it
forks do not inherit them (an ``flock`` would stay held by them after the owner let go).
The owner must not open ``.lock`` again while it holds it: closing any descriptor of
the file drops a record lock (POSIX). So nested use of one directory in one process does
not reopen it; it is allowed and holds nothing more.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".lock"

_HELD: set[Path] = set()
"""Directories this process holds (closing a second descriptor of the lock file would
drop a record lock, so nested use does not open it again)."""


class RunDirBusy(ValueError):
    """Another process is writing the run directory (a bad-input error: exit code 2)."""


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "unknown"
    except OSError:
        return "unknown"


@contextmanager
def exclusive(run_dir: Path | str) -> Iterator[None]:
    """Hold ``run_dir`` (created if missing) for this process for the ``with`` block.

    Raises:
        RunDirBusy: another live process holds it; the message names its pid.
        OSError: the lock file cannot be created (e.g. a read-only directory).
    """
    path = Path(run_dir).resolve()
    if path in _HELD:
        yield
        return
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            raise RunDirBusy(
                f"{path} is in use by another llm4cov process (pid "
                f"{_holder(path / LOCK_FILE)}); wait for it to end or stop it, then rerun "
                "the same command to resume") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        _HELD.add(path)
        try:
            yield
        finally:
            _HELD.discard(path)
    finally:
        os.close(fd)


__all__ = ["LOCK_FILE", "RunDirBusy", "exclusive"]


class RunDirForged(ValueError):
    """A run directory holds what llm4cov did not write there: a link, or a step whose
    seal does not match (a bad-input error: exit code 2)."""


def refuse_links(root: Path) -> None:
    """Refuse a run directory with a symbolic link anywhere below it: every path llm4cov
    writes, moves or deletes there must stay inside it (a ``pruned`` link had made a
    resumed ``close`` delete a folder outside ``--out``).

    Raises:
        RunDirForged: naming the first link.
    """
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            if os.path.islink(os.path.join(folder, name)):
                raise RunDirForged(f"{os.path.join(folder, name)} is a symbolic link: a run "
                                   "directory holds only what llm4cov wrote; use another one")


def seal_key(cache_root: Path) -> bytes:
    """This host's key for sealing run files (:func:`seal`): 32 random bytes in
    ``CACHE_ROOT/seal.key`` (mode 0600), made on first use."""
    path = cache_root / "seal.key"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = os.urandom(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made meanwhile by another run
        return path.read_bytes()
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    return key


def seal(key: bytes, *parts: bytes) -> str:
    """The HMAC-SHA256 (hex) of ``parts``: a run file's record and data, as written here;
    only a process with this host's key can make one, so an edited ``.dat`` or record is
    found when the run resumes."""
    import hashlib
    import hmac

    mac = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        mac.update(len(p).to_bytes(8, "big"))
        mac.update(p)
    return mac.hexdigest()
