"""The podgroup controller: a PodGroup for every Volcano pod that arrived without one.

The scheduler only schedules gangs, so a plain pod (or one of a Deployment, StatefulSet or
batch/v1 Job) with ``schedulerName: volcano`` needs a PodGroup before it can run. As in
Volcano, the PodGroup is ``podgroup-<uid>``, where the uid is the pod's controlling owner's
(so all pods of one ReplicaSet or Job share one group) or else the pod's own; it is owned
by the same owners as the pod (or by the pod itself), has minMember 1 (or the owner's
``scheduling.volcano.sh/group-min-member``), the pod's requests times minMember as
minResources, the pod's priority class, and the queue named by the pod's (or the owner's)
``scheduling.volcano.sh/queue-name`` annotation, else the namespace's, else ``default``.
The pod is then annotated with ``scheduling.k8s.io/group-name`` so the scheduler finds it.

Not done (Volcano does it): deleting the PodGroup when a ReplicaSet/StatefulSet scales to
zero, and re-syncing the PodGroup spec when the owner changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import lightkube

from lahar.api.quantity import QuantityError, format_quantity, parse_quantity
from lahar.kube import rest
from lahar.kube.events import EventRecorder
from lahar.kube.factory import InformerFactory
from lahar.kube.reconcile import Request, Result, logger
from lahar.volcano import constants as c
from lahar.volcano.controllers.common import (
    NAMESPACES,
    PODGROUPS,
    PODS,
    annotations,
    controller_ref,
    create,
    patch_merge,
    resource_for,
)

Obj = dict[str, Any]
PODGROUP_PREFIX = "podgroup-"
MIN_MEMBER_KEY = "scheduling.volcano.sh/group-min-member"
# Pod annotations the PodGroup inherits.
_COPIED = (
    c.PREEMPTABLE_KEY,
    c.COOLDOWN_KEY,
    c.REVOCABLE_ZONE_KEY,
    c.JDB_MIN_AVAILABLE,
    c.JDB_MAX_UNAVAILABLE,
)
_COPIED_PREFIXES = ("volcano.sh/network-topology",)
# Owner annotations the PodGroup inherits (and reads minMember / queue from).
_OWNER_PREFIXES = ("scheduling.volcano.sh/", "volcano.sh/")


def podgroup_name(pod: Obj) -> str:
    ref = controller_ref(pod)
    uid = (ref or {}).get("uid") or pod["metadata"].get("uid", "")
    return f"{PODGROUP_PREFIX}{uid}"


def needs_podgroup(pod: Obj, scheduler_names: Iterable[str]) -> bool:
    spec = pod.get("spec") or {}
    return (
        spec.get("schedulerName") in tuple(scheduler_names)
        and not annotations(pod).get(c.GROUP_NAME_KEY)
        and not pod["metadata"].get("deletionTimestamp")
    )


def pod_requests(pod: Obj) -> dict[str, Fraction]:
    """A pod's effective requests: summed containers (limits stand in for missing
    requests), raised to any larger init container, plus the pod overhead."""
    spec = pod.get("spec") or {}

    def of(container: Obj) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {}
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, raw in merged.items():
            try:
                out[name] = parse_quantity(raw)
            except (QuantityError, TypeError, ValueError):
                continue
        return out

    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or ():
        for name, value in of(container).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in spec.get("initContainers") or ():
        for name, value in of(container).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    for name, raw in (spec.get("overhead") or {}).items():
        try:
            total[name] = total.get(name, Fraction(0)) + parse_quantity(raw)
        except (QuantityError, TypeError, ValueError):
            continue
    return total


def min_resources(pod: Obj, min_member: int) -> dict[str, str]:
    return {
        name: format_quantity(
            value * min_member, binary=name == "memory" or name.startswith("hugepages-")
        )
        for name, value in sorted(pod_requests(pod).items())
        if value
    }


def build_podgroup(
    pod: Obj, *, owner_annotations: dict[str, str] | None = None, namespace_queue: str = ""
) -> Obj:
    """The PodGroup for ``pod`` (pure: the owner's annotations and the namespace's queue
    are looked up by the caller)."""
    md = pod["metadata"]
    pod_ann = annotations(pod)
    inherited = {
        k: v for k, v in (owner_annotations or {}).items() if k.startswith(_OWNER_PREFIXES)
    }
    pg_ann = dict(inherited)
    for key, value in pod_ann.items():
        if key in _COPIED or key.startswith(_COPIED_PREFIXES):
            pg_ann[key] = value
    try:
        min_member = max(int(inherited.get(MIN_MEMBER_KEY, "1")), 1)
    except ValueError:
        min_member = 1
    queue = (
        pod_ann.get(c.QUEUE_ANNOTATION)
        or inherited.get(c.QUEUE_ANNOTATION)
        or namespace_queue
        or c.DEFAULT_QUEUE
    )
    if controller_ref(pod) is not None:
        owners = [dict(ref) for ref in md.get("ownerReferences") or ()]
    else:
        owners = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": md["name"],
                "uid": md.get("uid", ""),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    spec: Obj = {
        "minMember": min_member,
        "queue": queue,
        "minResources": min_resources(pod, min_member),
    }
    if (pod.get("spec") or {}).get("priorityClassName"):
        spec["priorityClassName"] = pod["spec"]["priorityClassName"]
    meta: Obj = {
        "name": podgroup_name(pod),
        "namespace": md["namespace"],
        "ownerReferences": owners,
    }
    if pg_ann:
        meta["annotations"] = pg_ann
    return {
        "apiVersion": c.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


class PodGroupController:
    """Reconciles pods (by key) into PodGroups."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        informers: InformerFactory,
        recorder: EventRecorder,
        *,
        scheduler_names: tuple[str, ...] = (c.SCHEDULER_NAME,),
        inherit_owner_annotations: bool = True,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.scheduler_names = scheduler_names
        self.inherit_owner_annotations = inherit_owner_annotations
        self.pods = informers.cache(PODS)
        self.podgroups = informers.cache(PODGROUPS)
        self.namespaces = informers.cache(NAMESPACES)

    def predicate(self, pod: Obj) -> bool:
        return needs_podgroup(pod, self.scheduler_names)

    async def _owner_annotations(self, pod: Obj) -> dict[str, str]:
        """The annotations of the pod's controller (and of a ReplicaSet's Deployment)."""
        out: dict[str, str] = {}
        ref = controller_ref(pod)
        ns = pod["metadata"]["namespace"]
        for _ in range(2):  # the owner, then the owner's owner (ReplicaSet -> Deployment)
            if ref is None:
                break
            res = resource_for(ref.get("apiVersion", ""), ref.get("kind", ""))
            if res is None or res.kind == "PodGroup":
                break
            try:
                owner = await rest.request(self.client, "GET", res.path(ns, ref["name"]))
            except rest.ApiError:
                break  # gone, or not served here: nothing to inherit
            out = {**annotations(owner), **out}
            ref = controller_ref(owner) if res.kind == "ReplicaSet" else None
        return out

    async def reconcile(self, req: Request) -> Result:
        pod = self.pods.get(req.name, req.namespace)
        if pod is None or not self.predicate(pod):
            return Result()
        name = podgroup_name(pod)
        if self.podgroups.get(name, req.namespace) is None:
            owner_ann = await self._owner_annotations(pod) if self.inherit_owner_annotations else {}
            ns = self.namespaces.get(req.namespace) or {}
            pg = build_podgroup(
                pod,
                owner_annotations=owner_ann,
                namespace_queue=annotations(ns).get(c.QUEUE_ANNOTATION, ""),
            )
            try:
                await create(self.client, pg)
            except rest.ApiError as exc:
                if rest.status_code(exc) in (400, 403, 422):  # refused (e.g. queue closed)
                    message = exc.status.message if exc.status else str(exc)
                    self.recorder.warning(pod, "FailedCreatePodGroup", message)
                    logger(__name__).warning("PodGroup %s refused: %s", name, message)
                    return Result(requeue_after=30.0)
                raise
        try:
            await patch_merge(
                self.client,
                PODS,
                req.namespace,
                req.name,
                {
                    "metadata": {
                        "uid": pod["metadata"].get("uid"),
                        "annotations": {c.GROUP_NAME_KEY: name},
                    }
                },
            )
        except rest.ApiError as exc:
            if rest.status_code(exc) in (404, 409):  # the pod is gone (or was replaced)
                return Result()
            raise
        return Result()
