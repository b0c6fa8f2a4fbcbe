"""Writing a status only when it changed, and not again before the informer catches up.

Both status writers (PodGroups, Queues) compare what a session computed with the
cached object and patch only differences. Right after a write the informer may still
hold the old version for a moment, and the next session (a second later) would see a
"difference" and write the same thing again; :class:`WriteMemo` remembers what was
written over which resourceVersion and skips that repeat.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Iterable
from typing import Any

__all__ = ["WriteMemo", "bounded_gather"]


class WriteMemo:
    """key -> (resourceVersion the write was based on, what was written)."""

    def __init__(self) -> None:
        self._written: dict[str, tuple[str, Any]] = {}

    def already_written(self, key: str, rv: str, desired: Any) -> bool:
        seen = self._written.get(key)
        return seen is not None and seen == (rv, desired)

    def record(self, key: str, rv: str, desired: Any) -> None:
        self._written[key] = (rv, desired)

    def forget(self, key: str) -> None:
        self._written.pop(key, None)

    def retain(self, keys: Iterable[str]) -> None:
        """Drop memories of objects no longer around."""
        keep = set(keys)
        for key in [k for k in self._written if k not in keep]:
            del self._written[key]


async def bounded_gather(jobs: Iterable[Awaitable[Any]], limit: int) -> list[Any]:
    """Await ``jobs`` with at most ``limit`` running at once; exceptions are returned.
    Cancelled (the scheduler stopping), it closes the coroutines that never started, so
    none is left un-awaited (Python would warn about each at exit)."""
    sem = asyncio.Semaphore(max(1, limit))
    pending = list(jobs)

    async def one(job: Awaitable[Any]) -> Any:
        async with sem:
            return await job

    try:
        return await asyncio.gather(*(one(j) for j in pending), return_exceptions=True)
    except asyncio.CancelledError:
        for job in pending:
            if inspect.iscoroutine(job):
                job.close()
        raise
