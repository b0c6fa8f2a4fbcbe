"""Scale expectations: never act twice on pods the cache has not caught up with.

The RayCluster reconciler counts pods from its informer cache, and the cache lags
its own writes: right after creating three workers a second pass may still see none
and create three more (KubeRay issue #715, pain point 8). So every successful pod
create or delete is recorded here, per cluster and group (the head's group is
``""``), and before a group is reconciled again each record is checked against the
cache: a create is satisfied once the pod is visible (or after ``create_timeout``
seconds, in case the event was lost); a delete only once the pod is gone from the
cache (no timeout: acting while it is still listed would delete a second pod). A
group with an unsatisfied record is skipped for that pass; its pods' events
requeue the cluster. The records are in memory only: after a restart the caches
are synced before any reconcile, so the first pass already sees every pod.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from lahar.kube.cache import Cache

CREATE_TIMEOUT = 300.0  # client-go's ExpectationsTimeout: a loaded informer can lag well past 30 s
HEAD_GROUP = ""


@dataclass
class _Record:
    action: str  # "create" or "delete"
    at: float


class ScaleExpectations:
    """Pod creates/deletes per (namespace, cluster, group) still waiting for the cache."""

    def __init__(
        self, *, create_timeout: float = CREATE_TIMEOUT, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.create_timeout = create_timeout
        self._clock = clock
        # (ns, cluster) -> group -> pod name -> record
        self._records: dict[tuple[str, str], dict[str, dict[str, _Record]]] = {}

    def _group(self, ns: str, cluster: str, group: str) -> dict[str, _Record]:
        return self._records.setdefault((ns, cluster), {}).setdefault(group, {})

    def expect_create(self, ns: str, cluster: str, group: str, pod: str) -> None:
        self._group(ns, cluster, group)[pod] = _Record("create", self._clock())

    def expect_delete(self, ns: str, cluster: str, group: str, pod: str) -> None:
        self._group(ns, cluster, group)[pod] = _Record("delete", self._clock())

    def satisfied(self, ns: str, cluster: str, group: str, pods: Cache) -> bool:
        """Drop the satisfied records of a group; True when none is left."""
        records = self._records.get((ns, cluster), {}).get(group)
        if not records:
            return True
        now = self._clock()
        for name, record in list(records.items()):
            seen = pods.get(name, ns) is not None
            if record.action == "create":
                done = seen or now - record.at >= self.create_timeout
            else:
                done = not seen
            if not done:
                return False
            del records[name]
        return True

    def pending(self, ns: str, cluster: str) -> int:
        return sum(len(g) for g in self._records.get((ns, cluster), {}).values())

    def forget(self, ns: str, cluster: str) -> None:
        self._records.pop((ns, cluster), None)
