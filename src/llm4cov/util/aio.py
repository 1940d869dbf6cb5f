"""Bounded, streaming concurrency for long runs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def bounded_map(
    items: Iterable[T],
    fn: Callable[[T], Awaitable[object]],
    concurrency: int,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Await ``fn(item)`` for every item, at most ``concurrency`` at once.

    Items are pulled from ``items`` only when a slot frees up, so memory stays
    proportional to ``concurrency``, not to the number of items. No new item starts
    once ``stop()`` is true or an ``fn`` raised; the ones in flight run to their end
    (their results are written, nothing finished is lost), then the first exception
    is raised.

    Raises:
        Exception: the first exception an ``fn`` raised.
    """
    source = iter(items)
    errors: list[Exception] = []

    async def worker() -> None:
        while not errors and not stop():
            try:
                item = next(source)
            except StopIteration:
                return
            try:
                await fn(item)
            except Exception as exc:
                errors.append(exc)
                return

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    if errors:
        raise errors[0]
