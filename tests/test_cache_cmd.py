"""Cache housekeeping: LRU bounds of the result cache and the build store, stale work
dirs, and ``llm4cov cache info|clear``."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest

from llm4cov.cli.app import main
from llm4cov.sim.cache import ResultCache, evict_build_store, limit_bytes
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.sim.safety import workdirs

DAY = 24 * 3600.0


def obs() -> Observation:
    return Observation(status=Status.COMPILE_ERROR, log="tb.sv:1: syntax error",
                       simulator="verilator 5", seed=1)


def test_result_cache_evicts_the_least_recently_used(tmp_path):
    path = tmp_path / "results.sqlite3"
    cache = ResultCache(path, max_bytes=10**6)
    cache.put("a", obs())
    cache.put("b", obs())
    with sqlite3.connect(path) as db:  # both last used a day ago
        db.execute("UPDATE results SET used = ?", (time.time() - DAY,))
    assert cache.get("a") is not None  # "a" is now the most recently used
    entry = cache.stats()[1] // 2
    bounded = ResultCache(path, max_bytes=2 * entry)
    bounded.put("c", obs())
    assert bounded.get("b") is None
    assert bounded.get("a") is not None and bounded.get("c") is not None


def test_result_cache_of_an_older_version_gains_the_use_column(tmp_path):
    path = tmp_path / "results.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE results (key TEXT PRIMARY KEY, created REAL NOT NULL, "
                   "size INTEGER NOT NULL, data BLOB NOT NULL)")
    cache = ResultCache(path, max_bytes=10**6)
    cache.put("k", obs())
    assert cache.get("k").log == "tb.sv:1: syntax error"


def test_size_bounds_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LLM4COV_RESULT_CACHE_MAX_MB", "1.5")
    assert ResultCache(tmp_path / "r.sqlite3", 10**9).max_bytes == 1536 * 1024
    monkeypatch.setenv("LLM4COV_RESULT_CACHE_MAX_MB", "lots")
    with pytest.raises(ValueError, match="must be a positive number of MiB, got 'lots'"):
        limit_bytes("LLM4COV_RESULT_CACHE_MAX_MB", 1)


def _entry(path, size: int, age_s: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    then = time.time() - age_s
    os.utime(path, (then, then))


def test_build_store_evicts_least_recently_used_but_never_recent_entries(tmp_path):
    store = tmp_path / "build"
    _entry(store / "objects" / "old.o", 100, 3 * DAY)
    _entry(store / "pch" / "older" / "llm4cov_pch.h.gch", 100, 4 * DAY)
    _entry(store / "objects" / "mid.o", 100, 2 * DAY)
    _entry(store / "objects" / "fresh.o", 100, 60)  # in the grace period: kept
    _entry(store / "pch" / "older.lock", 0, 5 * DAY)
    assert evict_build_store(store, max_bytes=150) == 300
    left = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file())
    assert left == ["objects/fresh.o", "pch/older.lock"]


def test_dead_owners_work_dirs_are_swept_live_and_kept_ones_are_not(tmp_path):
    live = workdirs.create(str(tmp_path))
    kept = workdirs.create(str(tmp_path))
    workdirs.release(kept, keep=True)
    dead = tmp_path / "llm4cov-dead"
    dead.mkdir()
    (dead / workdirs.LOCK_NAME).touch()  # a lock file nobody holds: its owner died
    assert workdirs.sweep(tmp_path) == [dead]
    assert live.is_dir() and kept.is_dir() and not dead.exists()
    workdirs.release(live)
    assert not live.exists()


def test_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLM4COV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LLM4COV_BUILD_CACHE_MAX_MB", "64")
    monkeypatch.setenv("LLM4COV_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    ResultCache(tmp_path / "results.sqlite3", 10**6).put("k", obs())
    _entry(tmp_path / "build" / "objects" / "a.o", 1024**2, 3 * DAY)
    _entry(tmp_path / "formal" / "f00d.json", 2 * 1024**2, 0)
    _entry(tmp_path / "host" / "sandbox-0123", 6, 0)
    _entry(tmp_path / "models" / "tiny" / "model.safetensors", 3 * 1024**2, 0)
    _entry(tmp_path / "xdg" / "YoWASP" / "yosys.wasm.cache", 4 * 1024**2, 0)
    assert main(["cache", "info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"root: {tmp_path}"
    assert lines[1].startswith(f"results: {tmp_path / 'results.sqlite3'}: 1 observations, ")
    assert lines[1].endswith(" MiB of 512 MiB")
    assert lines[2:6] == [
        f"build: {tmp_path / 'build'}: 1 files, 1.0 MiB of 64 MiB",
        f"formal: {tmp_path / 'formal'}: 1 results, 2.0 MiB",
        f"models: {tmp_path / 'models'}: 1 models (tiny 3.0 MiB)",
        f"formal tools (YoWASP): {tmp_path / 'xdg' / 'YoWASP'}: 1 files, 4.0 MiB (not "
        "cleared by `cache clear`)"]
    assert lines[6] == "total: 10.0 MiB"  # 1 + 2 + 3 + 4 MiB and a few KiB of results
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "results: 1 observations removed", "build: 1.0 MiB removed",
        "tool answers: 1 removed (asked again on the next call)", "formal: 1 results removed"]
    assert not any((tmp_path / "host").iterdir())
    assert ResultCache(tmp_path / "results.sqlite3", 10**6).stats() == (0, 0)
    assert not (tmp_path / "build" / "objects" / "a.o").exists()
    assert (tmp_path / "models" / "tiny").is_dir()  # models only with --models
    assert main(["cache", "clear", "--models"]) == 0
    assert not (tmp_path / "models" / "tiny").exists()
