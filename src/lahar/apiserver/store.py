"""Durable object storage for the embedded API server: one SQLite file in WAL mode.

This is the only module that touches the database. It gives the REST layer and the watch
hub what they would get from etcd: a global, strictly increasing resourceVersion (RV)
stamped into ``metadata.resourceVersion`` on every write; ``expected_rv`` preconditions
and create-if-absent; a bounded, persisted log of watch events, written in the same
transaction as the change so a watch can resume from a retained RV even after a restart;
and after-commit callbacks to subscribers, so the watch hub never polls.

Durability: ``synchronous=NORMAL`` in WAL mode. A commit has reached the WAL file when it
returns, so it survives the process being killed (only an OS crash could lose it). WAL
checkpoints run in a thread of their own (``checkpoint.py``), not in a commit.
Threads: a re-entrant lock serialises callers; a :meth:`Store.transaction` holds it until
it ends, so never ``await`` inside one.

Expiry (``eventlog.py``): the newest ``window`` events are kept (trimmed in batches of ``window // 10``).
:meth:`Store.oldest_rv` is the compaction point, the highest RV whose event was trimmed (0
if none): ``events_after(rv)`` is complete for ``rv >= oldest_rv()`` and raises
:class:`Expired` for ``rv < oldest_rv()``, i.e. ``rv < e - 1`` with ``e`` the RV of the
oldest retained event.
"""

from __future__ import annotations

import builtins
import logging
import pathlib
import sqlite3
import threading
from collections import deque
from typing import Any

import orjson

from lahar.apiserver.checkpoint import CHECKPOINT_EVERY, SAFETY_NET_PAGES, Checkpointer
from lahar.apiserver.eventlog import EventLog
from lahar.apiserver.groupcommit import GroupCommit
from lahar.apiserver.storecache import ObjectCache
from lahar.apiserver.storetxn import Transactions
from lahar.apiserver.storetypes import (  # re-exported: callers name them via store
    EventType,
    Expired,
    InvalidObject,
    KeyExists,
    KeyNotFound,
    RVConflict,
    StoreError,
    Subscriber,
    WatchEvent,
    _encode,
    _key_text,
)

log = logging.getLogger(__name__)


__all__ = [
    "EventType",
    "Expired",
    "InvalidObject",
    "KeyExists",
    "KeyNotFound",
    "RVConflict",
    "Store",
    "StoreError",
    "Subscriber",
    "WatchEvent",
]

_SCHEMA_VERSION = 2
_SCHEMA = f"""
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS objects (gr TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (gr, ns, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (rv INTEGER PRIMARY KEY, type TEXT NOT NULL,
    gr TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, prev BLOB);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('compacted', 0);
PRAGMA user_version = {_SCHEMA_VERSION};
COMMIT;
"""


class Store(Transactions):
    """Objects keyed by (group-resource, namespace, name), plus the watch event log."""

    def __init__(
        self,
        path: pathlib.Path,
        *,
        window: int = 20000,
        checkpoint_every: int | None = CHECKPOINT_EVERY,
    ) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, cached_statements=64
        )
        try:
            if self._db.execute("PRAGMA user_version").fetchone()[0] not in (0, _SCHEMA_VERSION):
                raise StoreError(f"{path}: unsupported store schema version")
            self._db.executescript(_SCHEMA)
        except BaseException:
            self._db.close()
            raise
        self._closed = False
        self._depth = 0  # transaction nesting depth
        self._pending: list[WatchEvent] = []  # events of the open transaction
        self._subscribers: list[Subscriber] = []
        self._outbox: deque[builtins.list[WatchEvent]] = deque()
        self._cache = ObjectCache()  # storecache.py: reads without SQLite
        self._publishing = False
        self._log = EventLog(self._db, window)  # eventlog.py: the watch window
        self._rv = max(
            self._log.newest_rv(),
            self._scalar("SELECT coalesce(max(rv), 0) FROM objects"),
            self._log.compacted,
        )
        # WAL checkpoints in a thread of their own (checkpoint.py); None: SQLite's own.
        self._checkpointer: Checkpointer | None = None
        self._group: GroupCommit | None = None  # group commits, once turned on
        self._committed_rv = self._rv
        wal = self._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        if checkpoint_every is not None and wal:
            self._db.execute(f"PRAGMA wal_autocheckpoint = {SAFETY_NET_PAGES}")
            self._checkpointer = Checkpointer(str(path), self._lock, every=checkpoint_every)

    def _scalar(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        row = self._db.execute(sql, params).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the database. Further calls raise :class:`StoreError`."""
        with self._lock:
            if self._closed:
                return
            if self._depth:
                raise StoreError("cannot close the store inside a transaction")
            self._flush()  # an open batch of writes commits first
            checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:  # not under the lock: its last checkpoint may take it
            checkpointer.close()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._subscribers.clear()
            self._cache.clear()
            self._db.close()

    # -- reads -------------------------------------------------------------------------

    def current_rv(self) -> int:
        """The RV of the newest write (0 for an empty, never-written store)."""
        return self._rv

    def oldest_rv(self) -> int:
        """The smallest RV a watch can resume from: ``events_after(rv)`` needs ``rv >= this``."""
        return self._log.compacted

    def changes(self, gr: str) -> int:
        """A number that grows whenever an object of ``gr`` is written (or such a write is
        rolled back). Read it *before* reading ``gr``: a result derived from that read
        stays valid while ``changes(gr)`` returns the same number."""
        with self._lock:
            return self._cache.changes(gr)

    def get(self, gr: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            self._check_open()
            data = self._stored(gr, namespace, name)
        return orjson.loads(data) if data is not None else None

    def _stored(self, gr: str, namespace: str, name: str) -> bytes | None:
        """The stored bytes of one object (the cache, else SQLite). Caller holds the lock."""
        key = (gr, namespace, name)
        data = self._cache.get(key)
        if data is None:
            row = self._db.execute(
                "SELECT data FROM objects WHERE gr = ? AND ns = ? AND name = ?", key
            ).fetchone()
            if row is None:
                return None
            data = row[0]
            self._cache.fill(key, data)
        return data

    def list(
        self, gr: str, namespace: str | None = None
    ) -> tuple[builtins.list[dict[str, Any]], int]:
        """All objects of ``gr`` (in one namespace, or all) ordered by (namespace, name),
        and the RV the list is consistent at."""
        where, params = _where(gr, namespace)
        with self._lock:
            self._check_open()
            rows = self._db.execute(
                f"SELECT data FROM objects WHERE {where} ORDER BY ns, name", params
            ).fetchall()
            rv = self._rv
        return [orjson.loads(r[0]) for r in rows], rv

    def list_page(
        self,
        gr: str,
        namespace: str | None,
        *,
        limit: int,
        start_after: tuple[str, str] | None,
    ) -> tuple[builtins.list[dict[str, Any]], int, tuple[str, str] | None]:
        """One page of :meth:`list`: at most ``limit`` objects with a (namespace, name) key
        after ``start_after``, the RV this page is consistent at, and the cursor for the
        next page (None when this page is the last).

        Each page is a consistent snapshot, but pages are read at different times: an
        object present and unchanged for the whole walk appears exactly once; one created,
        deleted or changed meanwhile may be missed or show a newer version (etcd's
        "inconsistent continue", not a snapshot across pages).
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        where, params = _where(gr, namespace)
        if start_after is None:
            pass
        elif namespace is None:
            where += " AND (ns, name) > (?, ?)"
            params += tuple(start_after)
        elif start_after[0] == namespace:  # keeps the query on the (gr, ns) index range
            where += " AND name > ?"
            params += (start_after[1],)
        elif start_after[0] > namespace:  # a cursor past this namespace: nothing is left
            where += " AND 0"
        with self._lock:
            self._check_open()
            rows = self._db.execute(
                f"SELECT ns, name, data FROM objects WHERE {where} ORDER BY ns, name LIMIT ?",
                (*params, limit + 1),
            ).fetchall()
            rv = self._rv
        cursor = (rows[limit - 1][0], rows[limit - 1][1]) if len(rows) > limit else None
        return [orjson.loads(r[2]) for r in rows[:limit]], rv, cursor

    def count(
        self, gr: str, namespace: str | None = None, *, after: tuple[str, str] | None = None
    ) -> int:
        """How many objects (of a namespace; sorting after ``after``, if given) there are."""
        where, params = _where(gr, namespace)
        if after is not None:
            where += " AND (ns, name) > (?, ?)"
            params = (*params, *after)
        with self._lock:
            self._check_open()
            return self._scalar(f"SELECT count(*) FROM objects WHERE {where}", params)

    def list_resources(self) -> builtins.list[str]:
        """The group-resources that currently hold at least one object, sorted."""
        with self._lock:
            self._check_open()
            rows = self._db.execute("SELECT DISTINCT gr FROM objects ORDER BY gr").fetchall()
        return [r[0] for r in rows]

    def events_after(self, rv: int, gr: str | None = None) -> builtins.list[WatchEvent]:
        """Committed events with RV greater than ``rv`` (of ``gr`` only, if given), oldest
        first. Raises :class:`Expired` when ``rv < oldest_rv()``."""
        with self._lock:
            self._check_open()
            events = self._log.after(rv, gr)
            if self._rv != self._committed_rv:  # a batch is open: its events come later
                events = [e for e in events if e.rv <= self._committed_rv]
            return events

    # -- writes ------------------------------------------------------------------------

    def create(self, gr: str, obj: dict[str, Any], *, shared: bool = False) -> dict[str, Any]:
        """Store a new object; returns it with ``metadata.resourceVersion`` set.

        ``shared``: the caller only reads (serialises) what it gets back, so it may be the
        very object the watch event carries (one decode instead of two); see
        :meth:`_record`."""
        with self.transaction():
            rv = self._rv + 1
            namespace, name, data = _encode(gr, obj, rv)
            try:
                self._db.execute(
                    "INSERT INTO objects (gr, ns, name, rv, data) VALUES (?, ?, ?, ?, ?)",
                    (gr, namespace, name, rv, data),
                )
            except sqlite3.IntegrityError:
                raise KeyExists(_key_text(gr, namespace, name) + " already exists") from None
            self._cache.put((gr, namespace, name), data)
            return self._record("ADDED", gr, namespace, name, rv, data, shared=shared)

    def update(
        self,
        gr: str,
        obj: dict[str, Any],
        *,
        expected_rv: int | None = None,
        shared: bool = False,
    ) -> dict[str, Any]:
        """Replace an existing object, optionally only if its stored RV is ``expected_rv``
        (``shared`` as for :meth:`create`)."""
        with self.transaction():
            rv = self._rv + 1
            namespace, name, data = _encode(gr, obj, rv)
            before = self._stored(gr, namespace, name)
            cur = self._db.execute(
                "UPDATE objects SET rv = ?, data = ? WHERE gr = ? AND ns = ? AND name = ?"
                " AND (?6 IS NULL OR rv = ?6)",
                (rv, data, gr, namespace, name, expected_rv),
            )
            if cur.rowcount != 1 or before is None:
                self._raise_missing_or_conflict(gr, namespace, name, expected_rv)
            self._cache.put((gr, namespace, name), data)
            return self._record("MODIFIED", gr, namespace, name, rv, data, before, shared=shared)

    def delete(
        self, gr: str, namespace: str, name: str, *, expected_rv: int | None = None
    ) -> dict[str, Any]:
        """Remove an object; returns it with ``resourceVersion`` set to the deletion's RV."""
        with self.transaction():
            row = self._db.execute(
                "DELETE FROM objects WHERE gr = ? AND ns = ? AND name = ?"
                " AND (?4 IS NULL OR rv = ?4) RETURNING data",
                (gr, namespace, name, expected_rv),
            ).fetchone()
            if row is None:
                self._raise_missing_or_conflict(gr, namespace, name, expected_rv)
            self._cache.drop((gr, namespace, name))
            rv = self._rv + 1
            obj = orjson.loads(row[0])
            metadata = obj.setdefault("metadata", {})
            metadata["resourceVersion"] = str(rv)
            return self._record("DELETED", gr, namespace, name, rv, orjson.dumps(obj))

    def _raise_missing_or_conflict(
        self, gr: str, namespace: str, name: str, expected_rv: int | None
    ) -> None:
        row = self._db.execute(
            "SELECT rv FROM objects WHERE gr = ? AND ns = ? AND name = ?", (gr, namespace, name)
        ).fetchone()
        key = _key_text(gr, namespace, name)
        if row is None:
            raise KeyNotFound(key + " not found")
        raise RVConflict(
            f"{key}: expected resourceVersion {expected_rv}, stored {row[0]}", int(row[0])
        )

    def _record(
        self,
        type_: EventType,
        gr: str,
        namespace: str,
        name: str,
        rv: int,
        data: bytes,
        prev: bytes | None = None,
        *,
        shared: bool = False,
    ) -> dict[str, Any]:
        """Append the event row for a write at ``rv`` and claim the RV. Caller holds a txn.

        The caller and the watchers each get their own decoded object, unless the caller
        says it never mutates its copy (``shared``): then both get the same one (a
        WatchEvent's object is read-only for everybody already), saving a decode of the
        whole object on each write of the API server."""
        self._log.append(type_, gr, namespace, name, rv, data, prev)
        self._rv = rv
        # The previous object is decoded only if a filtered watch asks for it.
        obj = orjson.loads(data)
        self._pending.append(
            WatchEvent(type_, gr, namespace, name, rv, obj, prev_data=prev, data=data)
        )
        return obj if shared else orjson.loads(data)


def _where(gr: str, namespace: str | None) -> tuple[str, tuple[Any, ...]]:
    return ("gr = ?", (gr,)) if namespace is None else ("gr = ? AND ns = ?", (gr, namespace))
