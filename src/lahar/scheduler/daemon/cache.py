"""The scheduler's view of the cluster: informer caches plus what it has set in motion.

Informers keep Nodes, Pods, PodGroups, Queues and PriorityClasses as plain dicts. A
bind or an eviction the scheduler has sent is not in those caches until the watch
brings the change back, so two overlays sit on top of them, as in Volcano's cache
(§8), where a dispatched task is ``Binding`` and an evicted one ``Releasing``:

* ``assumed`` (pod -> node): a bind dispatched and not yet seen by the informer. The
  next snapshot shows the pod on that node, status Binding (it uses the node and
  counts toward its gang, but does not make the PodGroup Running). The entry goes away
  when the informer shows the pod with a ``spec.nodeName`` (confirmed), when the pod is
  gone or replaced (another uid), or when the bind fails: then the pod is pending again
  in the next snapshot and is retried. The cache never believes in a bind that did
  not happen: an entry lives only while the bind is in flight or answered 2xx.
* ``evicting`` (pod): an eviction dispatched; the pod shows as Releasing (a
  ``deletionTimestamp``) until the informer says so itself or the eviction fails.

:meth:`SchedulerCache.snapshot` reads everything in one synchronous step (no await),
so a session sees one consistent instant; objects are shared, never changed (the
overlay makes shallow copies). Building the session input from it is pure and may run
in a worker thread (:func:`build`). An object the session core cannot read (a bad
quantity, say) is set aside, with the reason, until it changes, instead of stopping
scheduling for everybody.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from lahar.kube.factory import InformerFactory
from lahar.kube.resource import Resource, object_key
from lahar.scheduler.api.cluster import ClusterInfo
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.memo import ParseMemo
from lahar.scheduler.snapshot import SnapshotError, build_cluster

__all__ = [
    "NODES",
    "PODGROUPS",
    "PODS",
    "PRIORITYCLASSES",
    "QUEUES",
    "Assumed",
    "SchedulerCache",
    "Snapshot",
    "build",
]

log = logging.getLogger("lahar.scheduler.cache")
Obj = dict[str, Any]

PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
QUEUES = Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False)
PRIORITYCLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
KINDS = (NODES, PODS, PODGROUPS, QUEUES, PRIORITYCLASSES)
_FINISHED = ("Succeeded", "Failed")


@dataclass
class Assumed:
    """A bind in flight (``answered`` False) or accepted and not yet watched back."""

    uid: str
    node: str
    since: float = field(default_factory=time.monotonic)
    answered: bool = False


@dataclass
class Snapshot:
    """One instant of the cache, overlays applied: the input of one session."""

    objects: list[Obj]
    binding: set[str]  # pod uids to show as Binding
    scheduler_names: tuple[str, ...]
    taken: float = field(default_factory=time.monotonic)
    memo: ParseMemo | None = None  # the cache's: what unchanged objects parsed to


def _uid(obj: Obj) -> str:
    return str(obj["metadata"].get("uid") or "")


def _stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SchedulerCache:
    """Informer caches of the five kinds, and the assumed/evicting overlays."""

    def __init__(self, informers: InformerFactory, scheduler_names: tuple[str, ...]) -> None:
        self.informers = informers
        self.scheduler_names = scheduler_names
        self.nodes = informers.cache(NODES)
        self.pods = informers.cache(PODS)
        self.podgroups = informers.cache(PODGROUPS)
        self.queues = informers.cache(QUEUES)
        self.priorityclasses = informers.cache(PRIORITYCLASSES)
        self.assumed: dict[str, Assumed] = {}
        self.evicting: dict[str, str] = {}  # pod key -> uid
        # "Kind/key" -> (resourceVersion, why): objects set aside until they change
        self.rejected: dict[str, tuple[str, str]] = {}
        # parse results by uid + resourceVersion, reused by the next session's build
        self.memo = ParseMemo()

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        results = await asyncio.gather(
            *(self.informers.informer(k).wait_for_sync(timeout) for k in KINDS)
        )
        return all(results)

    def unsynced(self) -> list[str]:
        """The kinds whose informer has not listed yet (e.g. a CRD not installed)."""
        return [str(k) for k in KINDS if not self.informers.informer(k).has_synced]

    @property
    def has_synced(self) -> bool:
        return all(self.informers.informer(k).has_synced for k in KINDS)

    # -- the overlays -------------------------------------------------------------------

    def assume(self, key: str, uid: str, node: str) -> None:
        """A bind of pod ``key`` to ``node`` is about to be sent."""
        self.assumed[key] = Assumed(uid, node)

    def bind_answered(self, key: str, uid: str, node: str) -> None:
        """The server accepted the bind (or says the pod already is on ``node``)."""
        entry = self.assumed.get(key)
        if entry is not None and entry.uid == uid:
            entry.node, entry.answered = node, True
        elif entry is None:
            pod = self.pods.get_by_key(key)
            if pod is not None and _uid(pod) == uid and not pod["spec"].get("nodeName"):
                self.assumed[key] = Assumed(uid, node, answered=True)

    def forget(self, key: str, uid: str) -> None:
        """The bind failed: the pod is pending again as far as the scheduler knows."""
        entry = self.assumed.get(key)
        if entry is not None and entry.uid == uid:
            del self.assumed[key]

    def evict(self, key: str, uid: str) -> None:
        self.evicting[key] = uid

    def eviction_failed(self, key: str, uid: str) -> None:
        if self.evicting.get(key) == uid:
            del self.evicting[key]

    def in_flight(self, key: str) -> bool:
        return key in self.assumed

    # -- the snapshot -------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Every object a session needs, with the overlays, read in one step."""
        names = self.scheduler_names
        overlay: dict[str, Obj] = {}
        binding: set[str] = set()
        for key, entry in list(self.assumed.items()):
            pod = self.pods.get_by_key(key)
            if pod is None or _uid(pod) != entry.uid or pod["spec"].get("nodeName"):
                del self.assumed[key]  # gone, replaced, or bound: the informer knows now
                continue
            overlay[key] = {**pod, "spec": {**pod["spec"], "nodeName": entry.node}}
            binding.add(entry.uid)
        stamp = _stamp()
        for key, uid in list(self.evicting.items()):
            pod = overlay.get(key) or self.pods.get_by_key(key)
            if pod is None or _uid(pod) != uid or pod["metadata"].get("deletionTimestamp"):
                del self.evicting[key]
                continue
            overlay[key] = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": stamp}}
        rejected = self.rejected
        objects: list[Obj] = []
        for kind, cache in (
            ("Node", self.nodes),
            ("PodGroup", self.podgroups),
            ("Queue", self.queues),
            ("PriorityClass", self.priorityclasses),
        ):
            for obj in cache:
                if rejected and _set_aside(rejected, kind, obj):
                    continue
                objects.append(obj if "kind" in obj else {**obj, "kind": kind})
        for pod in self.pods:
            spec = pod["spec"]
            ours = (spec.get("schedulerName") or "default-scheduler") in names
            if not ours and (
                not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in _FINISHED
            ):
                continue  # uses no node and is not ours to place
            key = object_key(pod)
            pod = overlay.get(key, pod)
            if rejected and _set_aside(rejected, "Pod", pod):
                continue
            objects.append(pod if "kind" in pod else {**pod, "kind": "Pod"})
        return Snapshot(objects, binding, names, memo=self.memo)

    def set_aside(self, bad: dict[str, tuple[str, str]]) -> None:
        """Remember objects the core could not read (logged once per version)."""
        for ident, (rv, why) in bad.items():
            if self.rejected.get(ident) != (rv, why):
                log.error("ignoring %s until it changes: %s", ident, why)
            self.rejected[ident] = (rv, why)


def _ident(kind: str, obj: Obj) -> str:
    return f"{kind}/{object_key(obj)}"


def _set_aside(rejected: dict[str, tuple[str, str]], kind: str, obj: Obj) -> bool:
    seen = rejected.get(_ident(kind, obj))
    if seen is None:
        return False
    if seen[0] == obj["metadata"].get("resourceVersion"):
        return True
    del rejected[_ident(kind, obj)]  # changed since: try it again
    return False


def build(snapshot: Snapshot) -> tuple[ClusterInfo, dict[str, tuple[str, str]]]:
    """The session input of a snapshot, and the objects that had to be set aside.

    Pure (no I/O, touches no shared state), so it may run in a worker thread.
    """
    objects = snapshot.objects
    bad: dict[str, tuple[str, str]] = {}
    try:
        cluster = build_cluster(
            objects, scheduler_names=snapshot.scheduler_names, memo=snapshot.memo
        )
    except SnapshotError:
        # find the culprits one by one (rare), then build without them
        for obj in objects:
            try:
                build_cluster([obj], scheduler_names=snapshot.scheduler_names)
            except SnapshotError as exc:
                rv = str(obj.get("metadata", {}).get("resourceVersion") or "")
                bad[_ident(str(obj.get("kind")), obj)] = (rv, str(exc))
        if not bad:
            raise
        good = [o for o in objects if _ident(str(o.get("kind")), o) not in bad]
        cluster = build_cluster(good, scheduler_names=snapshot.scheduler_names, memo=snapshot.memo)
    if snapshot.binding:
        for job in cluster.jobs.values():
            for uid in snapshot.binding.intersection(job.tasks):
                task = job.tasks[uid]
                if task.status == TaskStatus.BOUND:
                    job.update_task_status(task, TaskStatus.BINDING)
    return cluster, bad
