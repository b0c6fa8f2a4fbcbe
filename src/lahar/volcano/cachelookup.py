"""The Volcano admission :class:`~lahar.volcano.lookup.Lookup` over shared informer caches.

On a real cluster the webhook answers the kube-apiserver, which waits on it (Volcano's
tuning guide allows 30 s, pods are created by the thousand): a rule asking "is the queue
Open?" must not cost an API round trip. So the webhook keeps informers on Queues,
PodGroups and Namespaces and the rules read their caches, synchronously, as dict lookups.
PodGroups are indexed by ``spec.queue`` so "the PodGroups of this queue" (asked when a
queue is closed or deleted) costs the size of the answer. The caches lag the server by a
watch event at most; Volcano's own webhook reads listers with the same lag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from lahar.kube.cache import Cache
from lahar.kube.factory import InformerFactory
from lahar.kube.resource import Resource
from lahar.volcano import constants as c

__all__ = ["BY_QUEUE", "KINDS", "CacheLookup"]

Obj = dict[str, Any]

QUEUES = Resource(c.SCHEDULING_GROUP, "v1beta1", "queues", "Queue", namespaced=False)
PODGROUPS = Resource(c.SCHEDULING_GROUP, "v1beta1", "podgroups", "PodGroup")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
KINDS: tuple[Resource, ...] = (QUEUES, PODGROUPS, NAMESPACES)

BY_QUEUE = "podgroup-queue"


def _by_queue(obj: Obj) -> Iterable[str]:
    queue = (obj.get("spec") or {}).get("queue")
    return (queue,) if queue else ()


class CacheLookup:
    """Answers the admission rules from the caches of ``informers`` (a shared factory).

    Building it asks the factory for the three informers; start the factory and wait
    for :attr:`has_synced` (or :meth:`wait_for_sync`) before answering reviews, or a
    rule would see an empty cluster (every queue missing).
    """

    def __init__(self, informers: InformerFactory) -> None:
        self.informers = informers
        self.queues: Cache = informers.cache(QUEUES)
        self.podgroups: Cache = informers.cache(PODGROUPS)
        self.namespaces: Cache = informers.cache(NAMESPACES)
        self.podgroups.add_indexer(BY_QUEUE, _by_queue)

    @property
    def has_synced(self) -> bool:
        return all(self.informers.informer(k).has_synced for k in KINDS)

    def unsynced(self) -> list[str]:
        """The kinds (``queues.scheduling.volcano.sh``, ...) not listed yet."""
        return [str(k) for k in KINDS if not self.informers.informer(k).has_synced]

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until all three caches have listed once; False on timeout."""
        waits = (self.informers.informer(k).wait_for_sync(timeout) for k in KINDS)
        return all(await asyncio.gather(*waits))

    # -- the Lookup protocol -----------------------------------------------------------

    def get_queue(self, name: str) -> Obj | None:
        return self.queues.get(name)

    def list_queues(self) -> list[Obj]:
        return self.queues.list()

    def list_podgroups(self, queue: str) -> list[Obj]:
        return self.podgroups.by_index(BY_QUEUE, queue)

    def get_podgroup(self, namespace: str, name: str) -> Obj | None:
        return self.podgroups.get(name, namespace)

    def get_namespace(self, name: str) -> Obj | None:
        return self.namespaces.get(name)
