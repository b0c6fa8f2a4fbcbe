"""The store's read cache: every object's stored bytes, by key, in memory.

Each write of the API server first reads the object it replaces (a patch, a bind, an
update), and the store then reads it again for the watch event's previous object: two
SQLite lookups per write, about a sixth of the store's time under load. kube-apiserver
serves such reads from its watch cache; here the store keeps the encoded bytes of each
object it has read or written (a few KB per object, tens of MB for tens of thousands of
objects) and SQLite stays the store of record.

The cache is written through inside transactions, so reads in a transaction see its own
writes. A rollback (to a savepoint or of the whole transaction) drops every key written
since the rolled-back point: the next read of them goes to SQLite again, which has the
truth. The store calls it under its lock only.

It also counts, per group-resource, the writes and rollbacks that touched it
(:meth:`ObjectCache.changes`): a reader that derives something from a whole
group-resource (the default PriorityClass, read by every pod create) keeps its result
while the count stays the same.
"""

from __future__ import annotations

Key = tuple[str, str, str]  # (group-resource, namespace, name)


class ObjectCache:
    """Encoded objects by key, with the keys written since each savepoint."""

    __slots__ = ("_changes", "_data", "_written")

    def __init__(self) -> None:
        self._data: dict[Key, bytes] = {}
        self._written: list[Key] = []  # keys written in the open transaction, in order
        self._changes: dict[str, int] = {}  # group-resource -> writes and rollbacks of it

    def changes(self, gr: str) -> int:
        """A count that grows with every write (and rollback of one) to ``gr``."""
        return self._changes.get(gr, 0)

    def _changed(self, gr: str) -> None:
        self._changes[gr] = self._changes.get(gr, 0) + 1

    def get(self, key: Key) -> bytes | None:
        return self._data.get(key)

    def fill(self, key: Key, data: bytes) -> None:
        """Remember what SQLite returned for ``key`` (not a write)."""
        self._data[key] = data

    def put(self, key: Key, data: bytes) -> None:
        """A write of ``key`` in the open transaction."""
        self._data[key] = data
        self._written.append(key)
        self._changed(key[0])

    def drop(self, key: Key) -> None:
        """A delete of ``key`` in the open transaction."""
        self._data.pop(key, None)
        self._written.append(key)
        self._changed(key[0])

    def mark(self) -> int:
        """A savepoint: what :meth:`rollback` takes to undo the writes after it."""
        return len(self._written)

    def rollback(self, mark: int) -> None:
        """Forget every key written since ``mark`` (SQLite has rolled them back)."""
        for key in self._written[mark:]:
            self._data.pop(key, None)
            self._changed(key[0])
        del self._written[mark:]

    def committed(self) -> None:
        self._written.clear()

    def clear(self) -> None:
        self._data.clear()
        self._written.clear()
