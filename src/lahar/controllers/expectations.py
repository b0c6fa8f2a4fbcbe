"""Controller expectations: remembering writes in flight until the informer sees them.

A controller decides from its cache, and its cache lags its own writes. Right after
creating three pods for a Job, a second sync would still count the old number of
pods and create three more. So before writing, the controller records what it
expects to see (so many creations, these pod uids deleted, these finalizers removed)
and, until the informer has reported all of it, does not act on that key again.
Expectations that are never met (an event lost, a write that failed without telling)
expire after ``timeout`` seconds, so a key is never stuck for good.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from lahar.controllers.common import Clock

DEFAULT_TIMEOUT = 300.0


@dataclass
class _Pending:
    adds: int = 0
    deletes: set[str] = field(default_factory=set)
    since: float = 0.0


class Expectations:
    """Creations (counted) and deletions (by uid) that a key still waits to observe."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT, clock: Clock = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._pending: dict[str, _Pending] = {}

    def _entry(self, key: str) -> _Pending:
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = _Pending()
        entry.since = self._clock()
        return entry

    def expect_creations(self, key: str, n: int) -> None:
        self._entry(key).adds += n

    def expect_deletions(self, key: str, uids: Iterable[str]) -> None:
        self._entry(key).deletes.update(uids)

    def creation_observed(self, key: str, n: int = 1) -> None:
        """An informer add (or a creation that failed, so will never be seen)."""
        entry = self._pending.get(key)
        if entry is not None and entry.adds > 0:
            entry.adds = max(0, entry.adds - n)

    def deletion_observed(self, key: str, uid: str) -> None:
        entry = self._pending.get(key)
        if entry is not None:
            entry.deletes.discard(uid)

    def satisfied(self, key: str) -> bool:
        """Nothing in flight for ``key`` (or what was in flight has expired)."""
        entry = self._pending.get(key)
        if entry is None or (entry.adds <= 0 and not entry.deletes):
            return True
        if self._clock() - entry.since > self.timeout:
            del self._pending[key]
            return True
        return False

    def forget(self, key: str) -> None:
        self._pending.pop(key, None)


class UIDExpectations:
    """Per key, the uids whose change (a finalizer's removal, say) is still unobserved."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT, clock: Clock = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._pending: dict[str, dict[str, float]] = {}

    def expect(self, key: str, uids: Iterable[str]) -> None:
        now = self._clock()
        self._pending.setdefault(key, {}).update(dict.fromkeys(uids, now))

    def observed(self, key: str, uid: str) -> None:
        uids = self._pending.get(key)
        if uids is not None:
            uids.pop(uid, None)
            if not uids:
                del self._pending[key]

    def pending(self, key: str) -> set[str]:
        uids = self._pending.get(key)
        if not uids:
            return set()
        cutoff = self._clock() - self.timeout
        for uid in [u for u, at in uids.items() if at < cutoff]:
            del uids[uid]
        return set(uids)

    def forget(self, key: str) -> None:
        self._pending.pop(key, None)
