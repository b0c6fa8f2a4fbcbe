"""Volcano's admission rules inside the embedded API server, reading its store.

The rules (``lahar.volcano.admission``) ask a :class:`~lahar.volcano.lookup.Lookup` about
other objects: is the queue Open, does it have children or PodGroups, what does the
namespace say. In the embedded server the freshest answer is the store itself (an
admission check runs inside the write path, so an informer cache would lag), and reading
it is a local SQLite query. :func:`admission_plugins` is what ``lahar up`` adds to the
server's admission chain (:func:`install_admission` does it on an existing server).
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.admission import AdmissionPlugin
from lahar.apiserver.state import ServerState
from lahar.apiserver.store import Store
from lahar.volcano.admission import volcano_admission_plugins

Obj = dict[str, Any]
QUEUES = "queues.scheduling.volcano.sh"
PODGROUPS = "podgroups.scheduling.volcano.sh"
NAMESPACES = "namespaces"


class StoreLookup:
    """A :class:`~lahar.volcano.lookup.Lookup` over the embedded server's store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get_queue(self, name: str) -> Obj | None:
        return self.store.get(QUEUES, "", name)

    def list_queues(self) -> list[Obj]:
        return self.store.list(QUEUES)[0]

    def list_podgroups(self, queue: str) -> list[Obj]:
        return [
            pg
            for pg in self.store.list(PODGROUPS)[0]
            if ((pg.get("spec") or {}).get("queue") or "default") == queue
        ]

    def get_podgroup(self, namespace: str, name: str) -> Obj | None:
        return self.store.get(PODGROUPS, namespace, name)

    def get_namespace(self, name: str) -> Obj | None:
        return self.store.get(NAMESPACES, "", name)


def admission_plugins(state: ServerState) -> list[AdmissionPlugin]:
    """Volcano's admission plugins (vcjobs, Queues, PodGroups, Pods) reading ``state``."""
    return list(volcano_admission_plugins(StoreLookup(state.store)))


def install_admission(state: ServerState) -> None:
    """Add :func:`admission_plugins` to a running server's chain
    (``APIServer(...).state``, before it serves)."""
    for plugin in admission_plugins(state):
        state.objects.admission.add(plugin)
