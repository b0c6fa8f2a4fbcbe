"""The store's vocabulary: its errors, the watch event, and how an object is encoded.

Kept apart from ``store.py`` (the SQLite mechanics) so that the REST layer, the watch
hub and the garbage collector can name these without reading the storage code;
``store`` re-exports all of it.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, Literal

import orjson

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Subscriber = Callable[[builtins.list["WatchEvent"]], None]

# Only plain JSON types are accepted: dataclasses, datetimes and str/int/dict subclasses
# are passed through to a (missing) default hook, so orjson rejects them.
_DUMPS_OPTS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_DUMPS_OPTS |= orjson.OPT_PASSTHROUGH_SUBCLASS


class StoreError(Exception):
    """Base class of every error the store raises."""


class KeyExists(StoreError):
    """``create`` of a key that already holds an object (409 AlreadyExists)."""


class KeyNotFound(StoreError):
    """``update``/``delete`` of a key that holds no object (404 NotFound)."""


class RVConflict(StoreError):
    """An ``expected_rv`` precondition did not match the stored RV (409 Conflict)."""

    def __init__(self, message: str, current_rv: int) -> None:
        super().__init__(message)
        self.current_rv = current_rv


class Expired(StoreError):
    """The requested RV is older than the retained event window (410 Expired)."""


class InvalidObject(StoreError):
    """The object is not storable (not a JSON object, no name, not JSON-serialisable)."""


class WatchEvent:
    """One committed change, as a watch reports it. ``object`` is shared: do not mutate.

    ``prev`` is the object before a MODIFIED change (None otherwise): filtered watches
    need it to tell an object that stopped matching (DELETED) from one that never
    matched. Only those read it, so the store hands over the stored bytes
    (``prev_data``) and ``prev`` decodes them on first use: most events never pay for it.
    ``data``, when set, is ``object`` as the store serialised it (compact JSON, the
    bytes ``object`` was decoded from): a watch line can carry it without encoding the
    object again.
    """

    __slots__ = (
        "_prev",
        "_prev_data",
        "data",
        "gr",
        "name",
        "namespace",
        "object",
        "rv",
        "type",
    )

    def __init__(
        self,
        type: EventType,
        gr: str,
        namespace: str,
        name: str,
        rv: int,
        object: dict[str, Any],
        prev: dict[str, Any] | None = None,
        *,
        prev_data: bytes | None = None,
        data: bytes | None = None,
    ) -> None:
        self.type = type
        self.data = data
        self.gr = gr
        self.namespace = namespace
        self.name = name
        self.rv = rv
        self.object = object
        self._prev = prev
        self._prev_data = prev_data if prev is None else None

    @property
    def prev(self) -> dict[str, Any] | None:
        data = self._prev_data
        if data is not None:  # two threads may both decode: equal results, either wins
            self._prev = orjson.loads(data)
            self._prev_data = None
        return self._prev

    def _fields(self) -> tuple[Any, ...]:
        return (self.type, self.gr, self.namespace, self.name, self.rv, self.object, self.prev)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WatchEvent):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # holds dicts, as the dataclass did

    def __repr__(self) -> str:
        return (
            f"WatchEvent(type={self.type!r}, gr={self.gr!r}, namespace={self.namespace!r}, "
            f"name={self.name!r}, rv={self.rv!r}, object={self.object!r}, prev={self.prev!r})"
        )


def _key_text(gr: str, namespace: str, name: str) -> str:
    return f"{gr} {namespace}/{name}" if namespace else f"{gr} {name}"


def _encode(gr: str, obj: dict[str, Any], rv: int) -> tuple[str, str, bytes]:
    """Validate ``obj`` and serialise a copy of it carrying ``rv``. Never mutates ``obj``."""
    if not isinstance(gr, str) or not gr:
        raise InvalidObject("group-resource must be a non-empty string")
    if not isinstance(obj, dict):
        raise InvalidObject(f"object must be a JSON object, not {type(obj).__name__}")
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise InvalidObject("object has no metadata")
    name = metadata.get("name")
    namespace = metadata.get("namespace") or ""
    if not isinstance(name, str) or not name:
        raise InvalidObject("metadata.name must be a non-empty string")
    if not isinstance(namespace, str):
        raise InvalidObject("metadata.namespace must be a string")
    copy = dict(obj)
    copy["metadata"] = {**metadata, "resourceVersion": str(rv)}
    try:
        data = orjson.dumps(copy, option=_DUMPS_OPTS)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidObject(f"object is not JSON-serialisable: {exc}") from None
    return namespace, name, data
