"""The store's vocabulary: its errors, the watch event, and how an object is encoded.

Kept apart from ``store.py`` (the SQLite mechanics) so that the REST layer, the watch
hub and the garbage collector can name these without reading the storage code;
``store`` re-exports all of it.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One committed change, as a watch reports it. ``object`` is shared: do not mutate."""

    type: EventType
    gr: str
    namespace: str
    name: str
    rv: int
    object: dict[str, Any]
    # The object before a MODIFIED change (None otherwise): filtered watches need it to
    # tell an object that stopped matching (DELETED) from one that never matched.
    prev: dict[str, Any] | None = None


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
