"""Process-tree helpers (Linux ``/proc``)."""

from __future__ import annotations

import os
from pathlib import Path


def child_pids(pid: int | None = None) -> list[int]:
    """The direct children of process ``pid`` (default: this process), from
    ``/proc/<pid>/task/*/children``; empty when the process is gone or ``/proc`` lacks
    the file (kernels without ``CONFIG_PROC_CHILDREN``)."""
    root = Path(f"/proc/{pid or os.getpid()}/task")
    pids: list[int] = []
    try:
        tasks = list(root.iterdir())
    except OSError:
        return pids
    for task in tasks:
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(set(pids))
