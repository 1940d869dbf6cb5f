"""How many times a wall-clock limit stopped a child of this thread: a verdict reached
that way depends on the host (a loaded or suspended machine), not only on the inputs,
so the evaluator never caches it (a twenty-seventh red team: a preprocessing run held
up 32 s gave a ``rejected`` the cache served again). CPU, memory and byte limits do
not count here: they hold on any host.

:func:`~llm4cov.sim.safety.process.run_limited` and
:func:`~llm4cov.sim.safety.forked.bounded_call` count their wall-clock stops; the
evaluator compares :func:`count` before and after a call (each call runs in one
thread)."""

from __future__ import annotations

import threading

_local = threading.local()


def count() -> int:
    """The wall-clock stops in this thread so far."""
    return int(getattr(_local, "stops", 0))


def stopped() -> None:
    """Count one wall-clock stop in this thread."""
    _local.stops = count() + 1
