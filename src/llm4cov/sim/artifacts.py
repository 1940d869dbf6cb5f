"""Build artifacts reused across simulator calls: the runtime PCH and prebuilt objects.

Layout under ``<cache dir>/build/`` (see :func:`llm4cov.sim.cache.cache_root`):

- ``pch/<key>/llm4cov_pch.h`` and ``llm4cov_pch.h.gch``: the Verilated runtime headers,
  precompiled with exactly the flags of the build's objects (``key`` hashes that
  compile command, the compiler and the Verilator version), and ``SHA256SUMS`` of both.
  About 100 MB each, one per flag set.
- ``objects/<key>.obj``: ``sha256:<hex>`` and a newline, then a runtime object
  (``verilated.o``, ...) or ``driver_main.o`` whose content hashes to ``<hex>``;
  ``key`` hashes its exact compile command (from ``make -n``), the compiler, the
  Verilator version, the force-included headers and, for ``driver_main.o``, its
  source and the generated model header it includes.

Integrity: the content hash is recorded when an entry is written and checked before
use; a corrupt or tampered entry is deleted and rebuilt, never used. An object is
checked on every use; a precompiled header (100 MB) once per process and again
whenever its files' inode, size, mtime or ctime change. Simulations never see the
store (:mod:`llm4cov.sim.build`), and the precompiled header is built in the sandbox.

Writes go to a temporary name first and are renamed into place, so concurrent
processes only ever see complete files. The store is never required: any failure
leaves the build to compile the object itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from llm4cov.sim.process import Limits, Sandbox, run_limited

log = logging.getLogger(__name__)

SOURCES = Path(__file__).parent
DRIVER_OBJECT = "driver_main.o"
SUMS = "SHA256SUMS"
_OBJECT_MAGIC = b"sha256:"
#: Precompiled headers checked in this process: entry -> stat signature of its files.
_verified_pch: dict[Path, tuple] = {}


class ArtifactStore:
    """Reusable build artifacts in ``root`` for one Verilator installation."""

    PCH_HEADER = "llm4cov_pch.h"
    PCH_TEXT = (
        "// llm4cov: the Verilated runtime headers, precompiled once per flag set\n"
        '#include "verilated.h"\n#include "verilated_cov.h"\n'
    )

    def __init__(self, root: Path, verilator_root: Path, verilator_version: str) -> None:
        self.root = root
        self.runtime_sources = verilator_root / "include"
        self.version = verilator_version

    # -- precompiled header ---------------------------------------------------------

    def provide_pch(
        self,
        commands: dict[str, str],
        env: dict[str, str],
        deadline: float,
        dest: Path,
        sandbox: Sandbox | None = None,
    ) -> bool:
        """Make ``dest`` a link to a checked precompiled runtime header; build it (in
        ``sandbox``) if nobody has, or if the stored one fails its check.

        Returns False (the caller then uses the header as text) when no compile command
        is known, another process is building it, or the build failed.
        """
        base = _pch_base_command(commands)
        if base is None:
            return False
        key = self._key("pch", base[0], *base)
        final = self.root / "pch" / key
        if final.exists() and not _pch_intact(final):
            log.warning("stored precompiled header %s failed its check: rebuilding", final)
            _discard(final)
        if not final.exists() and not self._build_pch(
            base, env, deadline, final, sandbox
        ):
            return False
        dest.symlink_to(final, target_is_directory=True)
        return True

    def _build_pch(
        self, base: list[str], env, deadline: float, final: Path, sandbox: Sandbox | None
    ) -> bool:
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.with_suffix(".failed").exists():
            return False
        with _try_lock(final.with_suffix(".lock")) as locked:
            if not locked:
                return False
            if final.exists():
                return _pch_intact(final)
            tmp = Path(tempfile.mkdtemp(prefix="pch-", dir=final.parent))
            header = tmp / self.PCH_HEADER
            header.write_text(self.PCH_TEXT)
            cmd = [*base, "-x", "c++-header", str(header), "-o", f"{header}.gch"]
            result = run_limited(
                cmd, cwd=str(tmp), env=env, timeout_s=max(1.0, deadline - time.monotonic()),
                limits=Limits(memory_bytes=8 * 1024**3), sandbox=sandbox,
            )
            if result.returncode != 0 or result.timed_out:
                shutil.rmtree(tmp, ignore_errors=True)
                if not result.timed_out:
                    final.with_suffix(".failed").write_text(result.output)
                    log.warning("precompiling the runtime headers failed: %s", result.output)
                return False
            (tmp / SUMS).write_text("".join(
                f"{_sha256_file(tmp / name)}  {name}\n" for name in _pch_files()
            ))
            os.replace(tmp, final)
            return True

    # -- prebuilt objects -----------------------------------------------------------

    def reuse_objects(self, commands: dict[str, str], workdir: Path) -> set[str]:
        """Put every stored object make would otherwise compile into ``workdir/obj``.

        Their modification time is set to now, after the makefile Verilator just wrote,
        so make treats them as up to date. Returns the objects placed.
        """
        placed = set()
        now = time.time_ns()
        for name, path in self._stored(commands, workdir).items():
            if not path.exists():
                continue
            content = _checked_object(path)
            if content is None:
                log.warning("stored object %s failed its check: rebuilding it", path)
                path.unlink(missing_ok=True)
                continue
            target = workdir / "obj" / name
            target.write_bytes(content)  # a copy: a link would let make write into the store
            os.utime(target, ns=(now, now))
            placed.add(name)
        return placed

    def keep_objects(self, commands: dict[str, str], workdir: Path, skip: set[str]) -> None:
        """Store the reusable objects of a successful build (those not reused)."""
        for name, path in self._stored(commands, workdir).items():
            built = workdir / "obj" / name
            if name in skip or path.exists() or not built.exists():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            content = built.read_bytes()
            digest = hashlib.sha256(content).hexdigest().encode()
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".obj", dir=path.parent)
            with os.fdopen(fd, "wb") as fh:
                fh.write(_OBJECT_MAGIC + digest + b"\n" + content)
            os.replace(tmp, path)

    def _stored(self, commands: dict[str, str], workdir: Path) -> dict[str, Path]:
        """``{object name: store path}`` for the reusable objects among ``commands``."""
        stored = {}
        for name, command in commands.items():
            words = _without_objcache(command)
            if not words:
                continue
            source = Path(words[-1]).name
            if name == DRIVER_OBJECT:
                model = workdir / "obj" / "Vllm4cov_top.h"
                extra = [_read(SOURCES / "driver_main.cpp"), _read(model)]
            elif (self.runtime_sources / source).is_file() and name == source[:-4] + ".o":
                extra = []
            else:
                continue
            key = self._key("object", words[0], *words, _read(SOURCES / "driver_hooks.h"), *extra)
            stored[name] = self.root / "objects" / f"{key}.obj"
        return stored

    def _key(self, kind: str, compiler: str, *parts: str) -> str:
        digest = hashlib.sha256()
        for part in (kind, self.version, compiler_version(compiler), self.PCH_TEXT, *parts):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        return digest.hexdigest()[:40]


@functools.cache
def compiler_version(compiler: str) -> str:
    """``<compiler> --version`` (first line); part of every artifact key."""
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


def _pch_base_command(commands: dict[str, str]) -> list[str] | None:
    """A compile command of the model's C++, minus its source, output and force-includes."""
    model = [c for name, c in sorted(commands.items()) if name.startswith("Vllm4cov_top")]
    if not model:
        return None
    words = _without_objcache(model[0])[:-1]  # the last word is the source file
    base: list[str] = []
    pairs = iter(words)
    for word in pairs:
        if word in ("-o", "-include"):
            next(pairs, None)
        elif word not in ("-c", "-MMD", "-MP"):
            base.append(word)
    return base or None


def _pch_files() -> tuple[str, str]:
    return (ArtifactStore.PCH_HEADER, f"{ArtifactStore.PCH_HEADER}.gch")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _pch_intact(entry: Path) -> bool:
    """Whether a stored precompiled header still matches its ``SHA256SUMS``: exactly the
    header and its ``.gch``, regular files, with the recorded hashes. Rehashed only when
    a file's stat signature changed since this process last checked it."""
    try:
        if sorted(p.name for p in entry.iterdir()) != sorted([SUMS, *_pch_files()]):
            return False
        stats = [os.lstat(entry / name) for name in (SUMS, *_pch_files())]
        if not all(stat.S_ISREG(st.st_mode) for st in stats):
            return False
        signature = tuple((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                          for st in stats)
        if _verified_pch.get(entry) == signature:
            return True
        expected = {f"{_sha256_file(entry / name)}  {name}" for name in _pch_files()}
        if set((entry / SUMS).read_text().splitlines()) != expected:
            return False
    except OSError:
        return False
    _verified_pch[entry] = signature
    return True


def _discard(entry: Path) -> None:
    """Move a bad store entry out of the way (atomically), then delete it."""
    _verified_pch.pop(entry, None)
    trash = entry.with_name(f".bad-{entry.name}-{os.getpid()}-{time.monotonic_ns()}")
    with contextlib.suppress(OSError):
        os.replace(entry, trash)
    shutil.rmtree(trash, ignore_errors=True)


def _checked_object(path: Path) -> bytes | None:
    """A stored object's content if it matches the hash recorded with it, else None."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, sep, content = data.partition(b"\n")
    if not sep or not head.startswith(_OBJECT_MAGIC):
        return None
    if hashlib.sha256(content).hexdigest().encode() != head[len(_OBJECT_MAGIC):]:
        return None
    return content


def _without_objcache(command: str) -> list[str]:
    words = shlex.split(command)
    while words and Path(words[0]).name == "ccache":
        words = words[1:]
    return words


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


@contextlib.contextmanager
def _try_lock(path: Path):
    """Non-blocking exclusive lock on ``path``; yields whether it was acquired."""
    with path.open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
