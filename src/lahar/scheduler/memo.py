"""Parse results of unchanged objects, kept from one session to the next.

The live scheduler builds its session input from every Node, Pod and PodGroup each
period; most of them did not change since the last session, yet reading their
resource lists (quantity strings into vectors) was most of the build's cost. An object
with the same uid and resourceVersion has the same content (the API server bumps the
version on every write), so what was read from it then still holds. The scheduler
cache's overlays (an assumed ``spec.nodeName``, an eviction's ``deletionTimestamp``)
never touch the fields memoised here (resource requests, allocatable, minResources).

A vector depends on the session's resource space too, so it is kept with the space's
names and only reused under the same names. Entries last while they are used: each
build starts a new generation and what the previous one did not touch is dropped, so
the memo holds about one entry per live object. Objects without a uid or a
resourceVersion (YAML input) are never memoised. Vectors are handed out as copies:
the session may change its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["ParseMemo"]

Key = tuple[str, str, str]


def memo_key(kind: str, obj: Mapping[str, Any]) -> Key | None:
    """(kind, uid, resourceVersion), or None when the object lacks either."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return None
    uid, rv = md.get("uid"), md.get("resourceVersion")
    if not uid or not rv:
        return None
    return (kind, str(uid), str(rv))


class ParseMemo:
    """What was read from an object, by (kind, uid, resourceVersion)."""

    __slots__ = ("_new", "_old", "hits", "misses")

    def __init__(self) -> None:
        self._new: dict[Key, Any] = {}
        self._old: dict[Key, Any] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def begin(self) -> None:
        """A new build: entries the previous build did not use are dropped now."""
        self._old, self._new = self._new, {}

    def _get(self, key: Key) -> Any:
        hit = self._new.get(key)
        if hit is None:
            hit = self._old.pop(key, None)
            if hit is not None:
                self._new[key] = hit
        return hit

    def names(
        self, kind: str, obj: Mapping[str, Any], read: Callable[[], set[str]]
    ) -> frozenset[str] | set[str]:
        """The resource names ``obj`` mentions (``read()`` when not known yet)."""
        key = memo_key(kind + "#names", obj)
        if key is None:
            return read()
        hit = self._get(key)
        if hit is None:
            self.misses += 1
            hit = frozenset(read())
            self._new[key] = hit
        else:
            self.hits += 1
        return hit

    def vector(
        self,
        kind: str,
        obj: Mapping[str, Any],
        names: tuple[str, ...],
        read: Callable[[], np.ndarray],
    ) -> np.ndarray:
        """A vector read from ``obj`` in the space of ``names`` (``read()`` when not
        known yet for this version and space); always a fresh copy."""
        key = memo_key(kind, obj)
        if key is None:
            return read()
        hit = self._get(key)
        if hit is not None and hit[0] == names:
            self.hits += 1
            return hit[1].copy()
        self.misses += 1
        vec = read()
        self._new[key] = (names, vec.copy())
        return vec
