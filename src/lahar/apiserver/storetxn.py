"""The store's transactions: savepoints, commits, group commits and publishing.

A mixin of :class:`lahar.apiserver.store.Store` (its state lives there and is set up
by its constructor): one re-entrant lock serialises callers, a transaction nests as
savepoints, and the events of a commit go to the subscribers after it, in commit
order. With group commits on (:mod:`lahar.apiserver.groupcommit`), the outermost
transactions of one loop turn are savepoints of one SQLite transaction, committed at
the end of the turn.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import sqlite3
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from lahar.apiserver.checkpoint import Checkpointer
from lahar.apiserver.eventlog import EventLog
from lahar.apiserver.groupcommit import GroupCommit
from lahar.apiserver.storecache import ObjectCache
from lahar.apiserver.storetypes import StoreError, Subscriber, WatchEvent

log = logging.getLogger("lahar.apiserver.store")


class Transactions:
    """Transactions and publishing over the attributes a Store sets up."""

    _lock: threading.RLock
    _db: sqlite3.Connection
    _closed: bool
    _depth: int
    _rv: int
    _committed_rv: int
    _pending: builtins.list[WatchEvent]
    _subscribers: builtins.list[Subscriber]
    _outbox: deque[builtins.list[WatchEvent]]
    _publishing: bool
    _cache: ObjectCache
    _log: EventLog
    _checkpointer: Checkpointer | None
    _group: GroupCommit | None

    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback(events)`` after each commit, in commit order, under the lock."""
        with self._lock:
            self._subscribers.append(callback)

    def unsubscribe(self, callback: Subscriber) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._subscribers.remove(callback)

    # -- transactions ------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """Group writes atomically. Nests (as savepoints); publishes after the outer commit.

        An exception leaving the block rolls back every write made inside it (and only
        those, for a nested block) and publishes nothing for them.
        """
        with self._lock:
            self._check_open()
            depth = self._depth
            group = self._group
            batched = depth == 0 and group is not None and group.joinable()
            if depth == 0 and not batched and group is not None and group.open:
                self._flush()  # another thread writes: the open batch commits first
            saved = (self._rv, len(self._pending), self._cache.mark())
            if batched:
                assert group is not None
                if not group.open:
                    self._db.execute("BEGIN IMMEDIATE")
                    group.opened(saved, self._flush)
                group.joined()
                self._db.execute("SAVEPOINT sp0")
            else:
                self._db.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
            self._depth = depth + 1
            try:
                yield self
            except BaseException:
                self._depth = depth
                self._rv = saved[0]
                del self._pending[saved[1] :]
                self._cache.rollback(saved[2])
                if depth == 0 and not batched:
                    self._db.execute("ROLLBACK")
                else:
                    self._db.execute(f"ROLLBACK TO sp{depth}")
                    self._db.execute(f"RELEASE sp{depth}")
                raise
            self._depth = depth
            if depth > 0 or batched:
                self._db.execute(f"RELEASE sp{depth}")
                return
            self._commit(saved)

    def _commit(self, saved: tuple[int, int, int]) -> None:
        """COMMIT the open transaction and publish its events; on failure, undo what it
        held back to ``saved`` and raise."""
        try:
            self._db.execute("COMMIT")
        except BaseException:
            self._rv = saved[0]
            self._pending.clear()
            self._cache.rollback(saved[2])
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._committed_rv = self._rv
        self._cache.committed()
        if self._checkpointer is not None:
            self._checkpointer.committed()
        events, self._pending = self._pending, []
        self._log.committed(len(events))
        if events:
            self._publish(events)

    # -- group commit (groupcommit.py) ---------------------------------------------------

    def group_commits(self, loop: asyncio.AbstractEventLoop) -> None:
        """From now on, writes made on ``loop``'s thread during one turn of it commit
        together at the end of that turn (see :mod:`lahar.apiserver.groupcommit`).
        Call on that loop; whoever acknowledges a write awaits :meth:`settled` first."""
        with self._lock:
            self._check_open()
            self._flush()
            self._group = GroupCommit(loop)

    async def settled(self) -> None:
        """Return once every write made so far is committed; :class:`StoreError` if the
        commit of the batch holding them failed (those writes are gone)."""
        group = self._group
        if group is not None:
            await group.settled()

    def _flush(self) -> None:
        """Commit the open batch, if any, and wake those waiting for it."""
        with self._lock:
            group = self._group
            if group is None or not group.open:
                return
            if self._closed:
                group.settle(StoreError("store is closed"))
                return
            try:
                self._commit(group.saved)
            except Exception as exc:
                log.error("group commit failed: %s", exc)
                group.settle(StoreError(f"the write could not be committed: {exc}"))
            else:
                group.settle(None)

    def _publish(self, events: builtins.list[WatchEvent]) -> None:
        # A subscriber that writes re-enters here; its batch waits in the outbox so every
        # subscriber still sees the batches in commit (RV) order.
        self._outbox.append(events)
        if self._publishing:
            return
        self._publishing = True
        try:
            while self._outbox:
                batch = self._outbox.popleft()
                for callback in builtins.list(self._subscribers):
                    try:
                        callback(batch)
                    except Exception:  # a broken subscriber must not fail the write
                        log.exception("store subscriber %r failed", callback)
        finally:
            self._publishing = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("store is closed")
