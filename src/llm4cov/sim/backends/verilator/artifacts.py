"""Build artifacts reused across simulator calls: the runtime PCH and prebuilt objects.

Layout under ``<cache dir>/build/`` (see :func:`llm4cov.sim.cache.cache_root`):

- ``pch/<key>/llm4cov_pch.h`` and ``llm4cov_pch.h.gch``: the Verilated runtime headers,
  precompiled with exactly the flags of the build's objects (``key`` hashes that
  compile command, the compiler, the Verilator version and the header text), and
  ``SHA256SUMS``: the entry's key, then the hash of both files. About 100 MB each (g++;
  clang's ~20 MB), one per flag set; beside it ``pch/<key>.verified``, the stat
  signature of its last full check.
- ``objects/<key>.obj``: a header line ``llm4cov-object/2 key=<key> sha256=<hex>``,
  then a runtime object (``verilated.o``, ...) or ``driver_main.o`` whose content hashes
  to ``<hex>``; ``key`` hashes everything that goes into the object: its exact compile
  command (from ``make -n``), the compiler, the Verilator version, the text of every
  header it force-includes (the runtime PCH header, ``driver_hooks.h``) and of its
  source (the runtime ``.cpp``; for ``driver_main.o``, ``driver_main.cpp`` and the
  generated model header it includes).

Pristine inputs only: an entry is built by the store itself, in a fresh directory that
holds nothing but the evaluator's own files (the header text, the driver, the model
header Verilator wrote, copied as hashed), with the OS sandbox of the build (no ccache,
whose cache the builds of testbenches write), never harvested from a build a testbench
took part in.

Integrity: the key and the content hash are recorded when an entry is written and
checked before use; a corrupt, tampered or foreign entry (another key, another
format) is deleted and rebuilt, never used. An object is checked on every use; a
precompiled header (100 MB) whenever its files' device, inode, size, mtime or ctime
differ from its last full check's (kept in ``<key>.verified``, so a later process skips
the hash of an unchanged header). Simulations never see the store
(:mod:`llm4cov.sim.backends.verilator.build`).

Writes go to a temporary name first and are renamed into place, so concurrent
processes only ever see complete files. The store is never required: any failure
leaves the build to compile the object itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import logging
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from llm4cov.sim.config import default_cache_root
from llm4cov.sim.safety import workdirs
from llm4cov.sim.safety.process import Limits, Sandbox, run_limited
from llm4cov.util.hashing import sha256_file
from llm4cov.util.remembered import file_identity, remembered, write_atomic

log = logging.getLogger(__name__)

SOURCES = Path(__file__).parent
DRIVER_OBJECT = "driver_main.o"
MODEL_HEADER = "Vllm4cov_top.h"
SUMS = "SHA256SUMS"
#: Suffix of the record of a precompiled header's last full check (:func:`_pch_intact`).
VERIFIED = ".verified"
_OBJECT_MAGIC = b"llm4cov-object/2"
#: Address space of one compile of the store (as for any build process).
_COMPILE_MEMORY = 8 * 1024**3
#: Precompiled headers checked in this process: (entry, key) -> stat signature of its files.
_verified_pch: dict[tuple[Path, str], list] = {}


@dataclass(frozen=True)
class StoreBuild:
    """How the store builds what it lacks for one build: with the build's ``env``,
    before ``deadline`` (``time.monotonic()``), ``jobs`` compiles at a time, each in
    ``sandbox`` (the build's, without ccache); ``scratch_root``: where to make the
    scratch dir of the objects; ``pch_entry``: the checked precompiled header of the
    store that objects compile against (None: the header as text)."""

    env: dict[str, str]
    deadline: float
    jobs: int = 1
    sandbox: Sandbox | None = None
    scratch_root: str | None = None
    pch_entry: Path | None = None

    def timeout_s(self) -> float:
        """What is left until the deadline, at least 1 s (one compile's wall limit)."""
        return max(1.0, self.deadline - time.monotonic())


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

    def provide_pch(self, commands: dict[str, str], dest: Path, build: StoreBuild) -> bool:
        """Make ``dest`` a link to a checked precompiled runtime header; build it
        (:class:`StoreBuild`: in ``build.sandbox``) if nobody has, or if the stored one
        fails its check.

        Returns False (the caller then uses the header as text) when no compile command
        is known, the build failed, or another process building it did not finish by
        ``build``'s deadline (waiting for it costs no CPU: precompiling it twice at once,
        as parallel workers starting together did, costs a core each).
        """
        base = _pch_base_command(commands)
        if base is None:
            return False
        key = self._key("pch", base[0], *base)
        final = self.root / "pch" / key
        if final.exists() and not _pch_intact(final, key):
            log.warning("stored precompiled header %s failed its check: rebuilding", final)
            _discard(final)
        if not final.exists() and not self._build_pch(base, final, build):
            return False
        dest.symlink_to(final, target_is_directory=True)
        return True

    def _build_pch(self, base: list[str], final: Path, build: StoreBuild) -> bool:
        """Precompile the header in a fresh dir below the store that holds only its
        text (the sandbox's one writable dir); rename it into place when it worked."""
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.with_suffix(".failed").exists():
            return False
        with _try_lock(final.with_suffix(".lock"), build.timeout_s()) as locked:
            if not locked or final.with_suffix(".failed").exists():
                return False  # still building, or it failed in the process we waited for
            if final.exists():
                return _pch_intact(final, final.name)
            tmp = Path(tempfile.mkdtemp(prefix="pch-", dir=final.parent))
            header = tmp / self.PCH_HEADER
            header.write_text(self.PCH_TEXT)
            cmd = [*base, *self._pch_source(base[0], header), "-o", f"{header}.gch"]
            result = run_limited(
                cmd, cwd=str(tmp), env=build.env, timeout_s=build.timeout_s(),
                limits=Limits(memory_bytes=_COMPILE_MEMORY), sandbox=build.sandbox,
            )
            if result.returncode != 0 or result.timed_out:
                shutil.rmtree(tmp, ignore_errors=True)
                if not result.timed_out:
                    final.with_suffix(".failed").write_text(result.output)
                    log.warning("precompiling the runtime headers failed: %s", result.output)
                return False
            (tmp / SUMS).write_text(f"key {final.name}\n" + "".join(
                f"{sha256_file(tmp / name)}  {name}\n" for name in _pch_files()
            ))
            os.replace(tmp, final)
            return True

    def _pch_source(self, compiler: str, header: Path) -> list[str]:
        """What the precompile compiles: ``header`` (:attr:`PCH_TEXT`) for g++. For
        clang, the runtime's ``verilated_cov.h`` itself (it includes ``verilated.h``
        first: the same declarations), because clang's header names the file it was
        built from and a unit that uses it must see that file at that path (the
        temporary ``header`` is gone; the runtime's headers stay, read-only in every
        sandbox); with ``-fpch-instantiate-templates`` (the header's template
        instantiations are done once, here, not again in every unit: an empty unit
        compiles against it in 0.04 s, against g++'s in 0.30 s) and no timestamps
        (a reinstalled wheel of the same version keeps the header usable; the sizes are
        still checked). Clang finds it as ``llm4cov_pch.h.gch`` (its ``-include`` looks
        for ``.pch``, then ``.gch``)."""
        if not is_clang(compiler):
            return ["-x", "c++-header", str(header)]
        return ["-fpch-instantiate-templates", "-Xclang", "-fno-pch-timestamp",
                "-x", "c++-header", str(self.runtime_sources / "verilated_cov.h")]

    # -- prebuilt objects -----------------------------------------------------------

    def provide_objects(
        self, commands: dict[str, str], workdir: Path, build: StoreBuild
    ) -> set[str]:
        """Put every reusable object make would otherwise compile into ``workdir/obj``,
        building the ones the store lacks first (:meth:`build_objects`). Returns the
        objects placed."""
        stored = self._stored(commands, workdir)
        missing = {name: entry for name, entry in stored.items()
                   if _checked_object(entry) is None}
        if missing:
            self.build_objects(missing, build)
        return self.reuse_objects(stored, workdir)

    def reuse_objects(self, stored: dict[str, _Entry], workdir: Path) -> set[str]:
        """Copy the checked content of the ``stored`` entries into ``workdir/obj``.

        Their modification time is set to now, after the makefile Verilator just wrote,
        so make treats them as up to date. Returns the objects placed; an entry that
        fails its check is deleted (the build compiles that object itself).
        """
        placed = set()
        now = time.time_ns()
        for name, entry in stored.items():
            if not entry.path.exists():
                continue
            content = _checked_object(entry)
            if content is None:
                log.warning("stored object %s failed its check: rebuilding it", entry.path)
                entry.path.unlink(missing_ok=True)
                continue
            target = workdir / "obj" / name
            target.write_bytes(content)  # a copy: a link would let make write into the store
            os.utime(target, ns=(now, now))
            placed.add(name)
        return placed

    def build_objects(self, entries: dict[str, _Entry], build: StoreBuild) -> None:
        """Compile ``entries`` from pristine inputs and store them.

        The compiles run in a fresh scratch dir (``build.scratch_root``: where to make
        it) that holds only the evaluator's files (:meth:`_stage_clean`; the
        ``build.pch_entry`` to compile against is bound read-only), ``build.jobs`` at a
        time, each in ``build.sandbox`` with its stored command minus ccache; a compile
        that fails is skipped. Entries another process is building (locked) are waited
        for afterwards, until ``build``'s deadline (the caller then reuses what they
        stored: parallel workers starting together compiled the runtime once each).
        Of a build's work dir only the model header (hashed in the driver's key,
        :class:`_Entry`) goes in.
        """
        (self.root / "objects").mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as locks:
            todo = {name: e for name, e in entries.items()
                    if locks.enter_context(_try_lock(e.path.with_suffix(".lock")))}
            if todo:
                self._compile_all(todo, build)
        for name, entry in entries.items():
            if name not in todo:
                with _try_lock(entry.path.with_suffix(".lock"), build.timeout_s()):
                    pass

    def _compile_all(self, todo: dict[str, _Entry], build: StoreBuild) -> None:
        """Compile the (locked) entries ``todo`` in a scratch dir; store those that built."""
        scratch = workdirs.create(build.scratch_root)
        try:
            self._stage_clean(scratch, todo, build.pch_entry)
            if build.sandbox is not None and build.pch_entry is not None:
                build = dataclasses.replace(build, sandbox=dataclasses.replace(
                    build.sandbox, readonly=[*build.sandbox.readonly, build.pch_entry]))
            with ThreadPoolExecutor(max(1, build.jobs)) as pool:
                done = list(pool.map(lambda e: self._compile(e, scratch, build),
                                     todo.values()))
            for (name, entry), content in zip(todo.items(), done, strict=True):
                if content is not None:
                    _write_object(entry, content)
                else:
                    log.info("store: %s not built cleanly; the build compiles it", name)
        finally:
            workdirs.release(scratch)

    def _stage_clean(self, scratch: Path, entries: dict[str, _Entry],
                     pch_entry: Path | None) -> None:
        """Lay out ``scratch`` like a work dir with the evaluator's files only: the
        runtime header (a link to ``pch_entry``, else its text), the driver and its
        hooks header, and the model header as hashed in the keys."""
        (scratch / "obj").mkdir()
        for name in ("driver_main.cpp", "driver_hooks.h"):
            shutil.copyfile(SOURCES / name, scratch / name)
        for entry in entries.values():
            if entry.model_header is not None:
                (scratch / "obj" / MODEL_HEADER).write_text(
                    entry.model_header, encoding="utf-8", errors="surrogateescape")
        pch = scratch / "llm4cov_pch"
        if pch_entry is not None:
            pch.symlink_to(pch_entry, target_is_directory=True)
        else:
            pch.mkdir()
            (pch / self.PCH_HEADER).write_text(self.PCH_TEXT)

    def _compile(self, entry: _Entry, scratch: Path, build: StoreBuild) -> bytes | None:
        """Run ``entry``'s command in ``scratch/obj``; the object's bytes, or None."""
        out = scratch / "obj" / entry.name
        result = run_limited(
            entry.words, cwd=str(out.parent), env=build.env, timeout_s=build.timeout_s(),
            limits=Limits(memory_bytes=_COMPILE_MEMORY), sandbox=build.sandbox,
            workdir=str(scratch),
        )
        if result.returncode != 0 or result.timed_out or not out.is_file():
            log.info("store: compiling %s failed (exit %s%s): %s", entry.name,
                     result.returncode, ", timed out" if result.timed_out else "",
                     result.output[-2000:])
            return None
        return out.read_bytes()

    def _stored(self, commands: dict[str, str], workdir: Path) -> dict[str, _Entry]:
        """``{object name: store entry}`` for the reusable objects among ``commands``."""
        stored = {}
        hooks = _read(SOURCES / "driver_hooks.h")
        for name, command in commands.items():
            words = _without_objcache(command)
            if not words:
                continue
            source = Path(words[-1]).name
            model = None
            if name == DRIVER_OBJECT:
                model = _read(workdir / "obj" / MODEL_HEADER)
                extra = [_read(SOURCES / "driver_main.cpp"), model]
            elif (self.runtime_sources / source).is_file() and name == source[:-4] + ".o":
                extra = [_read(self.runtime_sources / source)]
            else:
                continue
            key = self._key("object", words[0], *words, hooks, *extra)
            stored[name] = _Entry(name, self.root / "objects" / f"{key}.obj", key, words,
                                  model)
        return stored

    def _key(self, kind: str, compiler: str, *parts: str) -> str:
        digest = hashlib.sha256()
        for part in (kind, self.version, compiler_version(compiler), self.PCH_TEXT, *parts):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        return digest.hexdigest()[:40]


@functools.cache
def compiler_version(compiler: str) -> str:
    """``<compiler> --version`` (first line; ``unknown`` when it does not run); part of
    every artifact key and of the result key. Remembered across processes for the
    compiler's file (:mod:`llm4cov.util.remembered`; ``unknown`` is not kept)."""
    def ask() -> str | None:
        try:
            out = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                                 timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.splitlines()[0] if out.stdout else None

    found = shutil.which(compiler)
    answer = remembered(default_cache_root(), "compiler-version",
                        [compiler, file_identity(found)], ask) if found else ask()
    return answer or "unknown"


#: The first bytes of a precompiled header by the compiler that wrote it.
PCH_MAGIC = {"g++": b"gpch", "clang": b"CPCH"}


def has_runtime_pch(store_root: Path, compiler: str) -> bool:
    """Whether the store at ``store_root`` (``<cache dir>/build``) holds a precompiled
    runtime header written by ``compiler``'s kind (:data:`PCH_MAGIC`): else the next
    build precompiles one (about a minute with the runtime objects)."""
    magic = PCH_MAGIC["clang" if is_clang(compiler) else "g++"]
    for gch in store_root.glob(f"pch/*/{ArtifactStore.PCH_HEADER}.gch"):
        try:
            with gch.open("rb") as f:
                if f.read(len(magic)) == magic:
                    return True
        except OSError:
            continue
    return False


def is_clang(compiler: str) -> bool:
    """Whether ``compiler`` is clang (its ``--version`` says so)."""
    return "clang" in compiler_version(compiler).lower()


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


def _pch_intact(entry: Path, key: str) -> bool:
    """Whether a stored precompiled header still matches its ``SHA256SUMS``: exactly the
    header and its ``.gch``, regular files, with the recorded hashes, recorded for
    ``key`` (an entry moved or copied from another key is foreign).

    Rehashed only when a file's stat signature (device, inode, size, mtime, ctime) changed
    since the last full check, by this process or an earlier one: that check's signature
    is kept beside the entry (``<key>.verified``). Any write, rename or copy moves a
    file's ctime, which no user-level process can set back, so a changed file is always
    hashed again; the record saves a later process the hash of the 91 MB header
    (~0.08 s per process, ``docs/results/cli_startup.md``)."""
    record = entry.with_name(f"{entry.name}{VERIFIED}")
    try:
        if sorted(p.name for p in entry.iterdir()) != sorted([SUMS, *_pch_files()]):
            return False
        stats = [os.lstat(entry / name) for name in (SUMS, *_pch_files())]
        if not all(stat.S_ISREG(st.st_mode) for st in stats):
            return False
        signature = [[st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
                     for st in stats]
        if signature in (_verified_pch.get((entry, key)), _recorded(record, key)):
            _verified_pch[(entry, key)] = signature
            return True
        expected = [f"key {key}", *(f"{sha256_file(entry / name)}  {name}"
                                    for name in _pch_files())]
        if (entry / SUMS).read_text().splitlines() != expected:
            return False
    except OSError:
        return False
    _verified_pch[(entry, key)] = signature
    # best effort: the record only saves a later process's hash
    write_atomic(record, json.dumps({"key": key, "signature": signature}))
    return True


def _recorded(record: Path, key: str) -> list | None:
    """The signature a full check of ``key``'s entry recorded, or None."""
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    return data.get("signature") if isinstance(data, dict) and data.get("key") == key else None


def _discard(entry: Path) -> None:
    """Move a bad store entry out of the way (atomically), then delete it."""
    for checked in [k for k in _verified_pch if k[0] == entry]:
        del _verified_pch[checked]
    trash = entry.with_name(f".bad-{entry.name}-{os.getpid()}-{time.monotonic_ns()}")
    with contextlib.suppress(OSError):
        os.replace(entry, trash)
    shutil.rmtree(trash, ignore_errors=True)


@dataclass(frozen=True)
class _Entry:
    """One stored object: its name in ``obj/``, its store path and key, the compile
    command that builds it (without ccache), and the model header it includes (the
    driver's; None for a runtime object)."""

    name: str
    path: Path
    key: str
    words: list[str]
    model_header: str | None = None


def _object_head(entry: _Entry, content: bytes) -> bytes:
    digest = hashlib.sha256(content).hexdigest()
    return _OBJECT_MAGIC + f" key={entry.key} sha256={digest}\n".encode()


def _write_object(entry: _Entry, content: bytes) -> None:
    """Store ``content`` as ``entry`` (atomically: a temporary name, then a rename)."""
    entry.path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".obj", dir=entry.path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(_object_head(entry, content) + content)
    os.replace(tmp, entry.path)


def _checked_object(entry: _Entry) -> bytes | None:
    """A stored object's content if its header names ``entry``'s key and the hash of
    the content, else None (missing, corrupt, tampered or foreign)."""
    try:
        data = entry.path.read_bytes()
    except OSError:
        return None
    head, sep, content = data.partition(b"\n")
    if not sep or head + sep != _object_head(entry, content):
        return None
    return content


def _without_objcache(command: str) -> list[str]:
    words = shlex.split(command)
    while words and Path(words[0]).name == "ccache":
        words = words[1:]
    return words


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


LOCK_POLL_S = 0.2
"""How often a build waiting for another process's entry tries its lock again."""


@contextlib.contextmanager
def _try_lock(path: Path, wait_s: float = 0.0):
    """Exclusive lock on ``path``, tried for up to ``wait_s`` seconds (0: once); yields
    whether it was acquired. A lock dies with its holder (``flock``)."""
    deadline = time.monotonic() + wait_s
    with path.open("a") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(LOCK_POLL_S)
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
