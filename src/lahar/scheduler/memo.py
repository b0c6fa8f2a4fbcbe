"""What the snapshot build read from unchanged objects, kept from one session to the next.

The live scheduler builds its session input from every Node, Pod and PodGroup each
period; most of them did not change since the last session, yet reading them (names,
resource lists into vectors, annotations, validation) was most of the build's cost. An
object with the same uid and resourceVersion has the same content (the API server
bumps the version on every write), so what was read from it then still holds. What is
kept per object, and what is read afresh each build because the scheduler cache's
overlays change it (an assumed ``spec.nodeName``, an eviction's ``deletionTimestamp``),
is described in :mod:`lahar.scheduler.facts`.

Entries last while they are used: each build starts a new generation and what the
previous one did not touch is dropped, so the memo holds about one entry per live
object. Objects without a uid or a resourceVersion (YAML input) are never memoised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["ParseMemo"]

Key = tuple[str, str, str]


class ParseMemo:
    """What was read from an object, by (kind, uid, resourceVersion)."""

    __slots__ = ("_names", "_new", "_old", "hits", "misses")

    def __init__(self) -> None:
        self._new: dict[Key, Any] = {}
        self._old: dict[Key, Any] = {}
        self._names: tuple[str, ...] = ()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def begin(self) -> None:
        """A new build: entries the previous build did not use are dropped now."""
        self._old, self._new = self._new, {}

    def facts(
        self, kind: str, objects: Iterable[Mapping[str, Any]], read: Callable[[Any], Any]
    ) -> list[Any]:
        """What was read from each object (``read(obj)`` for versions not seen before,
        kept for the next build when the object can be memoised)."""
        new, old = self._new, self._old
        out: list[Any] = []
        hits = 0
        for obj in objects:
            md = obj.get("metadata")
            key = None
            if isinstance(md, dict):
                uid, rv = md.get("uid"), md.get("resourceVersion")
                if uid and rv:
                    key = (
                        kind,
                        uid if uid.__class__ is str else str(uid),
                        rv if rv.__class__ is str else str(rv),
                    )
                    hit = old.pop(key, None)  # most are: read by the last build
                    if hit is not None:
                        new[key] = hit
                    else:
                        hit = new.get(key)
                    if hit is not None:
                        hits += 1
                        out.append(hit)
                        continue
                    self.misses += 1
            value = read(obj)
            if key is not None:
                new[key] = value
            out.append(value)
        self.hits += hits
        return out

    def space_names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """``names``, as the same tuple as last time when equal (cheap comparisons)."""
        if names != self._names:
            self._names = names
        return self._names
