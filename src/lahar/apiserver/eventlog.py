"""The store's watch event log: the table of recent changes a watch resumes from.

Every write appends one row (type, key, the new object, and the previous one for a
MODIFIED change) in the same transaction as the change itself, so a watch can resume
from any retained resourceVersion, also after a restart. The newest ``window`` events
are kept, trimmed in batches of ``window // 10``; the compaction point (the highest RV
trimmed, persisted in ``meta``) is what :meth:`EventLog.after` refuses to go below, as
etcd answers a compacted revision. :class:`~lahar.apiserver.store.Store` owns the
connection, the lock and the transactions; this module only knows the table.
"""

from __future__ import annotations

import logging
import sqlite3

import orjson

from lahar.apiserver.storetypes import EventType, Expired, WatchEvent

log = logging.getLogger(__name__)


class EventLog:
    """The ``events`` table of one store connection. The caller holds the store's lock."""

    def __init__(self, db: sqlite3.Connection, window: int) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self._db = db
        self.window = window
        self._trim_batch = max(1, window // 10)
        self.compacted = _scalar(db, "SELECT value FROM meta WHERE key = 'compacted'")
        self._count = _scalar(db, "SELECT count(*) FROM events")
        self.maybe_trim()

    def newest_rv(self) -> int:
        return _scalar(self._db, "SELECT coalesce(max(rv), 0) FROM events")

    def append(
        self,
        type_: EventType,
        gr: str,
        namespace: str,
        name: str,
        rv: int,
        data: bytes,
        prev: bytes | None,
    ) -> None:
        """The row of one write, inside the caller's transaction."""
        self._db.execute(
            "INSERT INTO events (rv, type, gr, ns, name, data, prev) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rv, type_, gr, namespace, name, data, prev),
        )

    def committed(self, count: int) -> None:
        """``count`` appended rows have committed (outside any transaction)."""
        self._count += count
        self.maybe_trim()

    def after(self, rv: int, gr: str | None = None) -> list[WatchEvent]:
        """Events with RV greater than ``rv`` (of ``gr`` only, if given), oldest first;
        :class:`Expired` when ``rv`` is below the compaction point."""
        if rv < self.compacted:
            raise Expired(f"too old resource version: {rv} (oldest is {self.compacted})")
        where, params = ("rv > ?", (rv,)) if gr is None else ("rv > ? AND gr = ?", (rv, gr))
        rows = self._db.execute(
            f"SELECT rv, type, gr, ns, name, data, prev FROM events WHERE {where} ORDER BY rv",
            params,
        ).fetchall()
        return [
            WatchEvent(t, g, ns, n, r, orjson.loads(d), prev_data=p or None, data=d)
            for r, t, g, ns, n, d, p in rows
        ]

    def maybe_trim(self) -> None:
        """Drop the oldest events beyond the window, once a whole batch has piled up."""
        if self._count < self.window + self._trim_batch:
            return
        db = self._db
        try:
            # The newest one to drop, counted from the oldest end: a walk over the batch
            # dropped, not over the whole window kept.
            threshold = _scalar(
                db,
                "SELECT rv FROM events ORDER BY rv LIMIT 1 OFFSET ?",
                (self._count - self.window - 1,),
            )
            db.execute("BEGIN IMMEDIATE")
            dropped = db.execute("DELETE FROM events WHERE rv <= ?", (threshold,)).rowcount
            db.execute("UPDATE meta SET value = ? WHERE key = 'compacted'", (threshold,))
            db.execute("COMMIT")
        except sqlite3.Error:  # the write itself has committed; retry at the next commit
            log.exception("trimming the watch event log failed")
            if db.in_transaction:
                db.execute("ROLLBACK")
            return
        self.compacted = threshold
        self._count -= dropped


def _scalar(db: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> int:
    row = db.execute(sql, params).fetchone()
    return int(row[0]) if row and row[0] is not None else 0
