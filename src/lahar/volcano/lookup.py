"""The read-only view of cluster state that admission rules need.

Some of Volcano's rules look at other objects (is the queue Open? does it have child
queues? does the PodGroup of this pod exist?). The rules take a :class:`Lookup` instead
of a client so they stay pure: the embedded server wires it to its store, the webhook to
an informer cache, and tests to :class:`MemoryLookup`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

Obj = dict[str, Any]


class Lookup(Protocol):
    def get_queue(self, name: str) -> Obj | None: ...

    def list_queues(self) -> list[Obj]: ...

    def list_podgroups(self, queue: str) -> list[Obj]:
        """PodGroups (any namespace) whose ``spec.queue`` is ``queue``."""
        ...

    def get_podgroup(self, namespace: str, name: str) -> Obj | None: ...

    def get_namespace(self, name: str) -> Obj | None: ...


class MemoryLookup:
    """A :class:`Lookup` over plain lists of objects (tests, offline tools)."""

    def __init__(
        self,
        queues: Iterable[Obj] = (),
        podgroups: Iterable[Obj] = (),
        namespaces: Iterable[Obj] = (),
    ) -> None:
        self.queues: dict[str, Obj] = {q["metadata"]["name"]: q for q in queues}
        self.podgroups: list[Obj] = list(podgroups)
        self.namespaces: dict[str, Obj] = {n["metadata"]["name"]: n for n in namespaces}

    def get_queue(self, name: str) -> Obj | None:
        return self.queues.get(name)

    def list_queues(self) -> list[Obj]:
        return list(self.queues.values())

    def list_podgroups(self, queue: str) -> list[Obj]:
        return [pg for pg in self.podgroups if (pg.get("spec") or {}).get("queue") == queue]

    def get_podgroup(self, namespace: str, name: str) -> Obj | None:
        for pg in self.podgroups:
            meta = pg.get("metadata") or {}
            if meta.get("namespace") == namespace and meta.get("name") == name:
                return pg
        return None

    def get_namespace(self, name: str) -> Obj | None:
        return self.namespaces.get(name)
