"""On-disk result cache: observations keyed by a hash of everything that decides them.

The evaluator is deterministic (fixed seed, no wall-clock input to the design), so a
repeated identical call can be answered from disk. The key (:func:`result_key`) hashes
the RTL files, the testbench and its name, the auxiliary files, the DUT module and
instance, the simulator and C++ compiler versions, whether z3 is available, every
:class:`~llm4cov.sim.config.SimConfig` field that can change a result (all but
:data:`~llm4cov.sim.config.SPEED_ONLY_FIELDS`) and the source of llm4cov's evaluator
(``llm4cov/sim/`` including the C++ driver, and ``llm4cov/tasks/hdl.py``).

Only verdicts that a rerun would reproduce are stored (:func:`cacheable`): no wall-clock
timeouts, crashes by signal or tool errors. Storage: one SQLite file in WAL mode with a
busy timeout, so concurrent processes share it safely; observations are stored as
zlib-compressed JSON and the least recently used are evicted beyond ``max_bytes``
(``$LLM4COV_RESULT_CACHE_MAX_MB`` overrides it). A cache failure (locked too long, disk
full, corrupt file) is logged and treated as a miss.

The build store (``<cache root>/build``, the Verilator backend's
:mod:`~llm4cov.sim.backends.verilator.artifacts`) is bounded here too:
:func:`evict_build_store` removes its least recently used entries beyond
``$LLM4COV_BUILD_CACHE_MAX_MB`` (default :data:`BUILD_MAX_BYTES`). ``llm4cov cache
info|clear`` shows and empties both.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from llm4cov.sim.config import CACHE_DIR_ENV, SPEED_ONLY_FIELDS, SimConfig, default_cache_root
from llm4cov.sim.model.observation import SCHEMA_VERSION, EndReason, Observation, Status
from llm4cov.tasks.model import SourceFile, Task

log = logging.getLogger(__name__)

ENV_VAR = CACHE_DIR_ENV
RESULTS_LIMIT_VAR = "LLM4COV_RESULT_CACHE_MAX_MB"
BUILD_LIMIT_VAR = "LLM4COV_BUILD_CACHE_MAX_MB"
DB_NAME = "results.sqlite3"
BUILD_DIR = "build"
BUILD_MAX_BYTES = 4 * 1024**3
"""Default bound of the build store (a runtime PCH is about 100 MB per flag set)."""
BUILD_GRACE_S = 25 * 3600.0
"""Build-store entries read or written less than this long ago are never evicted: a
build may be using them, and with Linux's default ``relatime`` mount option a file's
access time lags its last read by at most 24 hours."""
TOUCH_AFTER_S = 3600.0
"""A result-cache hit records its use time when the stored one is older than this
(LRU at one-hour resolution, without a write per hit)."""
KEY_FORMAT = 1
BUSY_TIMEOUT_S = 30.0
_PACKAGE = Path(__file__).resolve().parents[1]
_INFRASTRUCTURE_TEXT = ("Killed signal", "virtual memory exhausted", "No space left on device")


def cache_root(config: SimConfig) -> Path:
    """Where the caches live: ``config.cache_dir``, else ``$LLM4COV_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/llm4cov`` or ``~/.cache/llm4cov``."""
    if config.cache_dir:
        return Path(config.cache_dir).expanduser()
    return default_cache_root()


def limit_bytes(env_var: str, default: int) -> int:
    """The size bound in ``$env_var`` (MiB, > 0), else ``default`` (bytes).

    Raises:
        ValueError: the variable is set but is not a positive number.
    """
    text = os.environ.get(env_var, "").strip()
    if not text:
        return default
    try:
        mib = float(text)
    except ValueError:
        mib = 0.0
    if not mib > 0:
        raise ValueError(f"${env_var} must be a positive number of MiB, got {text!r}")
    return int(mib * 1024**2)


@functools.cache
def sources_digest() -> str:
    """Hash of the evaluator's own source files, its backends' and the task and utility
    modules it imports included (a code change invalidates the cache: the rule that
    names a file to every tool lives in ``tasks/names.py``, the text rewrites' offsets in
    ``tasks/hdl.py``)."""
    digest = hashlib.sha256()
    files = sorted((p.relative_to(_PACKAGE).as_posix(), p)
                   for part in ("sim", "tasks", "util") for p in (_PACKAGE / part).rglob("*")
                   if p.suffix in (".py", ".cpp", ".h"))
    for name, path in files:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def result_key(
    task: Task,
    tb: SourceFile,
    aux_files: Sequence[SourceFile],
    instance: str | None,
    config: SimConfig,
    simulator: str,
    has_z3: bool,
    compiler: str,
) -> str:
    """The content hash that identifies one evaluator call (hex sha256).

    ``tb`` is the testbench under the name it is compiled as; ``instance`` is the
    required DUT instance name, None when any instance is accepted; ``simulator``,
    ``has_z3`` and ``compiler`` are the backend's (``name version``,
    :attr:`~llm4cov.sim.backends.base.SimBackend.has_solver`,
    :meth:`~llm4cov.sim.backends.base.SimBackend.compiler_version`).
    """
    settings = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if f.name not in SPEED_ONLY_FIELDS
    }
    payload = {
        "format": KEY_FORMAT,
        "schema": SCHEMA_VERSION,
        "simulator": simulator,
        "compiler": compiler,
        "z3": has_z3,
        "sources": sources_digest(),
        "config": settings,
        "rtl": [[f.name, f.content] for f in task.rtl_files],
        "build": task.build_settings(),
        "dut": [task.dut_module_name, instance],
        "tb": [tb.name, tb.content],
        "aux": [[f.name, f.content] for f in aux_files],
    }
    text = json.dumps(payload, sort_keys=True, default=list)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def cacheable(obs: Observation) -> bool:
    """Whether a rerun would reproduce ``obs`` (not a timeout, crash or tool problem)."""
    if obs.tool_error or any(text in obs.log for text in _INFRASTRUCTURE_TEXT):
        return False
    if obs.status is Status.RUNTIME_ERROR:
        return obs.end_reason is EndReason.FATAL
    if obs.status is Status.TIMEOUT:
        return obs.end_reason is EndReason.SIM_TIME_LIMIT
    return True


class ResultCache:
    """Observations by key in the SQLite file ``path``, at most ``max_bytes`` of them
    (``$LLM4COV_RESULT_CACHE_MAX_MB``, when set, replaces ``max_bytes``); the least
    recently used are evicted first."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = limit_bytes(RESULTS_LIMIT_VAR, max_bytes)
        self._ready = False

    def get(self, key: str) -> Observation | None:
        """The stored observation (``cached=True``), or None."""
        try:
            with self._connect(write=False) as db:
                row = db.execute("SELECT data, used FROM results WHERE key = ?",
                                 (key,)).fetchone()
            if row is not None and row[1] < time.time() - TOUCH_AFTER_S:
                with self._connect(write=True) as db:
                    db.execute("UPDATE results SET used = ? WHERE key = ?", (time.time(), key))
        except (sqlite3.Error, OSError) as exc:
            log.warning("result cache %s unreadable (%s); simulating", self.path, exc)
            return None
        if row is None:
            return None
        try:
            obs = Observation.model_validate_json(zlib.decompress(row[0]))
        except (zlib.error, ValidationError):
            return None
        return obs.model_copy(update={"cached": True})

    def put(self, key: str, obs: Observation) -> None:
        """Store ``obs`` under ``key`` and evict the oldest entries beyond the bound."""
        data = zlib.compress(obs.model_dump_json().encode("utf-8"))
        try:
            with self._connect(write=True) as db:
                now = time.time()
                db.execute(
                    "INSERT OR REPLACE INTO results (key, created, used, size, data) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, now, now, len(data), data),
                )
                self._evict(db)
        except (sqlite3.Error, OSError) as exc:
            log.warning("result cache %s not written (%s)", self.path, exc)

    def stats(self) -> tuple[int, int]:
        """``(entries, stored bytes)``."""
        with self._connect(write=False) as db:
            count, size = db.execute("SELECT COUNT(*), SUM(size) FROM results").fetchone()
        return count, size or 0

    def clear(self) -> int:
        """Delete every entry and give the space back to the file system; returns the
        number of entries deleted. Safe while other processes use the cache."""
        with self._connect(write=True) as db:
            (count,) = db.execute("SELECT COUNT(*) FROM results").fetchone()
            db.execute("DELETE FROM results")
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        try:
            db.execute("VACUUM")
        finally:
            db.close()
        return count

    def _evict(self, db: sqlite3.Connection) -> None:
        (total,) = db.execute("SELECT SUM(size) FROM results").fetchone()
        excess = (total or 0) - self.max_bytes
        if excess <= 0:
            return
        victims, freed = [], 0
        for key, size in db.execute("SELECT key, size FROM results ORDER BY used, rowid"):
            if freed >= excess:
                break
            victims.append((key,))
            freed += size
        db.executemany("DELETE FROM results WHERE key = ?", victims)

    def _connect(self, write: bool) -> _Transaction:
        """A fresh connection in a transaction (``write``: holds the write lock)."""
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            db.execute("PRAGMA synchronous = NORMAL")  # WAL: durable enough for a cache
            if not self._ready:
                db.execute("PRAGMA journal_mode = WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, "
                    "created REAL NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL, "
                    "used REAL NOT NULL DEFAULT 0)"
                )
                columns = {row[1] for row in db.execute("PRAGMA table_info(results)")}
                if "used" not in columns:  # a cache file of an older llm4cov
                    db.execute("ALTER TABLE results ADD COLUMN used REAL NOT NULL DEFAULT 0")
                self._ready = True
        except sqlite3.Error:
            db.close()
            raise
        return _Transaction(db, "BEGIN IMMEDIATE" if write else "BEGIN")


class _Transaction:
    """``with`` wrapper: ``begin``, then COMMIT (or ROLLBACK on error); always closes."""

    def __init__(self, db: sqlite3.Connection, begin: str) -> None:
        self.db, self.begin = db, begin

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.db.execute(self.begin)
        except sqlite3.Error:
            self.db.close()
            raise
        return self.db

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.db.close()


# -- the build store -------------------------------------------------------------------


def _build_entries(store: Path) -> list[tuple[float, int, Path]]:
    """``(last use, bytes, path)`` of the store's evictable entries: each PCH directory
    (``pch/<key>``, with its ``.failed`` marker and unfinished ``pch-*`` directories),
    each object (``objects/<key>.o``) and each remembered dry run (``dryrun/``,
    ``DRY_RUN_DIR`` of the Verilator build). Last use is the newest access or
    modification time of the entry's files."""
    entries = []
    for group in ("pch", "objects", "dryrun"):
        try:
            paths = list((store / group).iterdir())
        except OSError:
            continue
        for path in paths:
            if path.suffix == ".lock":  # a builder's lock: never evicted, 0 bytes
                continue
            files = [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else [path]
            used, size = 0.0, 0
            for f in files:
                try:
                    st = f.stat()
                except OSError:
                    continue
                used, size = max(used, st.st_atime, st.st_mtime), size + st.st_size
            entries.append((used, size, path))
    return entries


def dir_bytes(path: Path) -> tuple[int, int]:
    """``(files, bytes)`` under ``path`` (0, 0 when it does not exist)."""
    files = size = 0
    for f in path.rglob("*") if path.is_dir() else ():
        try:
            if f.is_file():
                files, size = files + 1, size + f.stat().st_size
        except OSError:
            continue
    return files, size


def evict_build_store(store: Path, max_bytes: int | None = None,
                      grace_s: float = BUILD_GRACE_S) -> int:
    """Remove the least recently used build-store entries until ``store`` holds at most
    ``max_bytes`` (default ``$LLM4COV_BUILD_CACHE_MAX_MB`` or :data:`BUILD_MAX_BYTES`).

    Entries used less than ``grace_s`` seconds ago are kept even above the bound (a
    running build may hold them). Safe to run from several processes at once; a
    failure is logged, never raised. Returns the bytes freed.
    """
    try:
        limit = max_bytes if max_bytes is not None else limit_bytes(BUILD_LIMIT_VAR,
                                                                    BUILD_MAX_BYTES)
    except ValueError as exc:
        log.warning("build store not bounded: %s", exc)
        return 0
    entries = sorted(_build_entries(store))
    excess = sum(size for _, size, _ in entries) - limit
    freed = 0
    cutoff = time.time() - grace_s
    for used, size, path in entries:
        if freed >= excess or used > cutoff:
            break
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue  # another process evicted it
        except OSError as exc:
            log.warning("build store entry %s not evicted: %s", path, exc)
            continue
        freed += size
    return freed
