"""Cluster state the pure defaulting code needs, read from the store.

Built-in defaulting is pure (``builtins``); the few facts it needs from the cluster
(a free Service IP, PriorityClass values, the globalDefault class) come through a
``DefaultContext`` whose callables are defined here.
"""

from __future__ import annotations

import ipaddress
from functools import partial

from lahar.apiserver import builtins
from lahar.apiserver import store as storemod
from lahar.apiserver.meta import meta

_PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"


class ClusterIPAllocator:
    """Hands out Service cluster IPs from 10.96.0.0/12, skipping ones in use."""

    def __init__(self, store: storemod.Store) -> None:
        self._store = store
        self._net = ipaddress.ip_network("10.96.0.0/12")
        self._next = 10

    def __call__(self) -> str:
        used = {(s.get("spec") or {}).get("clusterIP") for s in self._store.list("services")[0]}
        while True:
            self._next += 1
            ip = str(self._net.network_address + self._next)
            if ip not in used:
                return ip


def priority_of(store: storemod.Store, name: str) -> tuple[int, str] | None:
    pc = store.get("priorityclasses.scheduling.k8s.io", "", name)
    if pc is None:
        return None
    return int(pc.get("value", 0)), pc.get("preemptionPolicy") or "PreemptLowerPriority"


def default_priority_class(store: storemod.Store) -> tuple[str, int, str] | None:
    for pc in store.list(_PRIORITY_CLASSES)[0]:
        if pc.get("globalDefault"):
            return (
                meta(pc)["name"],
                int(pc.get("value", 0)),
                pc.get("preemptionPolicy") or "PreemptLowerPriority",
            )
    return None


class DefaultPriorityClass:
    """:func:`default_priority_class`, re-read only after a PriorityClass was written.

    Every pod create without a ``priorityClassName`` asks for the globalDefault class;
    listing the PriorityClasses for it was a twentieth of a pod create. The answer (an
    immutable tuple) is kept with ``store.changes`` of the PriorityClasses as read
    before the list, so any write since makes the next call list again."""

    def __init__(self, store: storemod.Store) -> None:
        self._store = store
        self._seen: int | None = None
        self._value: tuple[str, int, str] | None = None

    def __call__(self) -> tuple[str, int, str] | None:
        changes = self._store.changes(_PRIORITY_CLASSES)
        if changes != self._seen:
            self._value = default_priority_class(self._store)
            self._seen = changes
        return self._value


def default_context(store: storemod.Store) -> builtins.DefaultContext:
    return builtins.DefaultContext(
        allocate_cluster_ip=ClusterIPAllocator(store),
        priority_of=partial(priority_of, store),
        default_priority_class=DefaultPriorityClass(store),
    )
