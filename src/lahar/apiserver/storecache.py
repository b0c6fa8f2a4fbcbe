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
"""

from __future__ import annotations

Key = tuple[str, str, str]  # (group-resource, namespace, name)


class ObjectCache:
    """Encoded objects by key, with the keys written since each savepoint."""

    __slots__ = ("_data", "_written")

    def __init__(self) -> None:
        self._data: dict[Key, bytes] = {}
        self._written: list[Key] = []  # keys written in the open transaction, in order

    def get(self, key: Key) -> bytes | None:
        return self._data.get(key)

    def fill(self, key: Key, data: bytes) -> None:
        """Remember what SQLite returned for ``key`` (not a write)."""
        self._data[key] = data

    def put(self, key: Key, data: bytes) -> None:
        """A write of ``key`` in the open transaction."""
        self._data[key] = data
        self._written.append(key)

    def drop(self, key: Key) -> None:
        """A delete of ``key`` in the open transaction."""
        self._data.pop(key, None)
        self._written.append(key)

    def mark(self) -> int:
        """A savepoint: what :meth:`rollback` takes to undo the writes after it."""
        return len(self._written)

    def rollback(self, mark: int) -> None:
        """Forget every key written since ``mark`` (SQLite has rolled them back)."""
        for key in self._written[mark:]:
            self._data.pop(key, None)
        del self._written[mark:]

    def committed(self) -> None:
        self._written.clear()

    def clear(self) -> None:
        self._data.clear()
        self._written.clear()
