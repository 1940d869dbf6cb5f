"""Helpers for crash-safety tests: the CLI as a killable subprocess, and result rows
compared without their timing fields."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from llm4cov.util.jsonl import iter_jsonl

T = TypeVar("T")
TIMING_FIELDS = frozenset({"wall_s", "gen_s", "latency_s", "build_s", "run_s", "cached"})
"""Fields that differ between identical runs (seconds, result-cache hits)."""


def untimed(value: Any) -> Any:
    """``value`` with every :data:`TIMING_FIELDS` key removed, at any depth."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def rows_by_key(path: Path, key_fields: tuple[str, ...]) -> dict[tuple, dict]:
    """The rows of a JSONL result file by key, untimed; fails on a duplicate key."""
    rows: dict[tuple, dict] = {}
    for row in iter_jsonl(path):
        key = tuple(row[f] for f in key_fields)
        assert key not in rows, f"{path.name}: duplicate row {key}"
        rows[key] = untimed(row)
    return rows


def spawn_cli(*args: str, stderr: int | None = subprocess.DEVNULL) -> subprocess.Popen:
    """``llm4cov ARGS`` in a new process group (so the test can SIGKILL all of it)."""
    code = "from llm4cov.cli.app import main; raise SystemExit(main())"
    return subprocess.Popen([sys.executable, "-c", code, *args], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=stderr, text=True)


def wait_for(probe: Callable[[], T | None], proc: subprocess.Popen, what: str,
             timeout_s: float = 300.0) -> T:
    """Poll ``probe`` every 50 ms until it returns a value; fails when ``proc`` ends
    first or after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        assert proc.poll() is None, f"the run ended (code {proc.returncode}) before {what}"
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def count_rows(path: Path) -> int:
    """Complete rows in a JSONL file (a torn last line is not counted)."""
    return sum(1 for _ in iter_jsonl(path)) if path.exists() else 0
