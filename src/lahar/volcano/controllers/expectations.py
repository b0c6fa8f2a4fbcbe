"""Expectations: what a controller has just written and its cache has not yet seen.

A reconcile reads the informer caches, and a cache lags the API server by one watch
event. Right after the vcjob controller creates a job's pods or deletes them, the next
reconcile may still see the old picture and would create the same pods again (409s at
best, a second gang at worst) or re-run a restart. So before each batch of writes the
controller records what it expects to see (pod names to appear, uids to vanish), the
informer handlers tick them off as the events arrive, and a reconcile that finds
expectations outstanding waits (the awaited events requeue it) instead of acting.
Expectations that are never met (an event lost to a relist) expire after ``ttl`` seconds,
so a job can never be stuck behind them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field


@dataclass
class _Pending:
    adds: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)
    deadline: float = 0.0


class Expectations:
    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._pending: dict[Hashable, _Pending] = {}

    def expect(
        self, key: Hashable, *, adds: Iterable[str] = (), deletes: Iterable[str] = ()
    ) -> None:
        """Expect objects named ``adds`` to appear and uids ``deletes`` to vanish."""
        entry = self._pending.setdefault(key, _Pending())
        entry.adds.update(adds)
        entry.deletes.update(deletes)
        entry.deadline = self._clock() + self.ttl
        self._prune(key)

    def lower(
        self, key: Hashable, *, adds: Iterable[str] = (), deletes: Iterable[str] = ()
    ) -> None:
        """Stop expecting writes that failed (or turned out to be no-ops)."""
        entry = self._pending.get(key)
        if entry is not None:
            entry.adds.difference_update(adds)
            entry.deletes.difference_update(deletes)
            self._prune(key)

    def observed_add(self, key: Hashable, name: str) -> None:
        self.lower(key, adds=(name,))

    def observed_delete(self, key: Hashable, uid: str) -> None:
        self.lower(key, deletes=(uid,))

    def satisfied(self, key: Hashable) -> bool:
        entry = self._pending.get(key)
        if entry is None:
            return True
        if self._clock() >= entry.deadline:
            del self._pending[key]
            return True
        return False

    def pending(self, key: Hashable) -> tuple[set[str], set[str]]:
        entry = self._pending.get(key)
        return (set(entry.adds), set(entry.deletes)) if entry else (set(), set())

    def forget(self, key: Hashable) -> None:
        self._pending.pop(key, None)

    def _prune(self, key: Hashable) -> None:
        entry = self._pending.get(key)
        if entry is not None and not entry.adds and not entry.deletes:
            del self._pending[key]
