"""Functions run in executor worker processes that kill their own worker (SIGKILL)."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def die_once(marker: str) -> int:
    """Kill this process the first time (creating ``marker``); later return its pid."""
    path = Path(marker)
    if not path.exists():
        path.write_text("died\n")
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()


def always_die() -> None:
    """Kill this process."""
    os.kill(os.getpid(), signal.SIGKILL)
