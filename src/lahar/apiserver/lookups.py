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
    for pc in store.list("priorityclasses.scheduling.k8s.io")[0]:
        if pc.get("globalDefault"):
            return (
                meta(pc)["name"],
                int(pc.get("value", 0)),
                pc.get("preemptionPolicy") or "PreemptLowerPriority",
            )
    return None


def default_context(store: storemod.Store) -> builtins.DefaultContext:
    return builtins.DefaultContext(
        allocate_cluster_ip=ClusterIPAllocator(store),
        priority_of=partial(priority_of, store),
        default_priority_class=partial(default_priority_class, store),
    )
