"""What the built-in controllers share: the kinds they name, time stamps, pod states.

Kubernetes writes times as RFC 3339 in UTC with second precision (``metav1.Time``),
and every controller here reads and writes them, decides whether a pod is active,
terminating or finished, and patches finalizers away; keeping those few rules in
one place keeps the controllers agreeing with each other.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.resource import Resource

Obj = dict[str, Any]
Clock = Callable[[], float]

PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
JOBS = Resource("batch", "v1", "jobs", "Job")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
NODE_LEASE_NAMESPACE = "kube-node-lease"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def wall() -> float:
    """Seconds since the epoch (the clock every controller reads, replaceable in tests)."""
    return time.time()


def format_time(when: float) -> str:
    """A ``metav1.Time``: RFC 3339, UTC, whole seconds."""
    return dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (None when missing or malformed)."""
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_terminal(pod: Obj) -> bool:
    """The pod's containers have all stopped for good (Succeeded or Failed)."""
    return phase(pod) in ("Succeeded", "Failed")


def is_deleting(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def is_ready(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def condition(obj: Obj, kind: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


async def remove_finalizer(client: lightkube.AsyncClient, pod: Obj, finalizer: str) -> bool:
    """Drop ``finalizer`` from a pod with a JSON patch that first tests it is still at the
    index we saw (so a concurrent change to the list is refused, not clobbered).

    True when the finalizer is gone (removed now, or the pod is gone); a refused test
    re-reads the pod and tries once more."""
    md = pod["metadata"]
    path = PODS.path(md["namespace"], md["name"])
    for _ in range(3):
        finalizers = list(md.get("finalizers") or ())
        if finalizer not in finalizers:
            return True
        i = finalizers.index(finalizer)
        ops = [
            {"op": "test", "path": "/metadata/uid", "value": md["uid"]},
            {"op": "test", "path": f"/metadata/finalizers/{i}", "value": finalizer},
            {"op": "remove", "path": f"/metadata/finalizers/{i}"},
        ]
        try:
            await rest.request(client, "PATCH", path, body=ops, content_type=JSON_PATCH)
            return True
        except rest.ApiError as exc:
            code = rest.status_code(exc)
            if code == 404:
                return True
            if code not in (409, 422):
                raise
        try:
            fresh = await rest.request(client, "GET", path)
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return True
            raise
        if fresh["metadata"].get("uid") != md["uid"]:
            return True
        md = fresh["metadata"]
    return False


async def delete(
    client: lightkube.AsyncClient,
    resource: Resource,
    obj: Obj,
    *,
    grace: int | None = None,
    propagation: str | None = None,
    resource_version: bool = False,
) -> bool:
    """Delete ``obj`` (the very object: uid precondition); False when it was already gone."""
    md = obj["metadata"]
    preconditions = {"uid": md["uid"]}
    if resource_version:
        preconditions["resourceVersion"] = md["resourceVersion"]
    body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}
    if grace is not None:
        body["gracePeriodSeconds"] = grace
    if propagation is not None:
        body["propagationPolicy"] = propagation
    try:
        await rest.request(
            client, "DELETE", resource.path(md.get("namespace"), md["name"]), body=body
        )
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return False
        raise
    return True
