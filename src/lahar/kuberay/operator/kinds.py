"""The kinds the operator reads and writes, and the few raw API calls it makes.

The reconcilers read from informer caches and write through plain-dict REST calls
(``lahar.kube.rest``), so every kind is named by a
:class:`~lahar.kube.resource.Resource` here, and the write helpers give the
operator's idempotency rules one spelling: a create that meets AlreadyExists and a
delete that meets NotFound both count as done (children are get-or-create by name),
while updates carry the ``resourceVersion`` that was read, so a decision made on a
stale cache fails with 409 Conflict and is retried instead of overwriting newer state.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.resource import Resource

Obj = dict[str, Any]

RAYCLUSTERS = Resource("ray.io", "v1", "rayclusters", "RayCluster")
RAYJOBS = Resource("ray.io", "v1", "rayjobs", "RayJob")
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
JOBS = Resource("batch", "v1", "jobs", "Job")
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")

BY_KIND = {r.kind: r for r in (SERVICEACCOUNTS, ROLES, ROLEBINDINGS, SERVICES, PODS, JOBS)}

# What the operator's caches hold (KubeRay's cache filters, §3.1).
POD_SELECTOR = "ray.io/node-type in (head,worker,redis-cleanup)"
JOB_SELECTOR = "app.kubernetes.io/created-by=kuberay-operator"

MERGE_PATCH = "application/merge-patch+json"


def rfc3339(when: float) -> str:
    """A ``metav1.Time`` (UTC, whole seconds)."""
    return dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def ns_name(obj: Obj) -> tuple[str, str]:
    md = obj["metadata"]
    return md.get("namespace") or "default", md["name"]


async def get(client: lightkube.AsyncClient, res: Resource, ns: str, name: str) -> Obj | None:
    """A live read (None when NotFound)."""
    try:
        obj = await rest.request(client, "GET", res.path(ns, name))
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return None
        raise
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    return obj


async def create(client: lightkube.AsyncClient, res: Resource, obj: Obj) -> Obj | None:
    """Create ``obj``; None when an object of that name already exists."""
    ns = (obj.get("metadata") or {}).get("namespace") or "default"
    try:
        out = await rest.request(client, "POST", res.path(ns), body=obj)
    except rest.ApiError as exc:
        if rest.is_status(exc, 409):
            return None
        raise
    out.setdefault("apiVersion", res.api_version)
    out.setdefault("kind", res.kind)
    return out


async def delete(
    client: lightkube.AsyncClient,
    res: Resource,
    ns: str,
    name: str,
    *,
    propagation: str | None = None,
    uid: str | None = None,
) -> bool:
    """Delete by name (False when it was already gone)."""
    body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation:
        body["propagationPolicy"] = propagation
    if uid:
        body["preconditions"] = {"uid": uid}
    try:
        await rest.request(client, "DELETE", res.path(ns, name), body=body)
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return False
        raise
    return True


async def update(client: lightkube.AsyncClient, res: Resource, obj: Obj) -> Obj:
    """A full replace, guarded by the ``resourceVersion`` in ``obj``."""
    ns, name = ns_name(obj)
    return await rest.request(client, "PUT", res.path(ns, name), body=obj)


async def update_status(client: lightkube.AsyncClient, res: Resource, obj: Obj) -> Obj:
    """Replace the status subresource, guarded by ``resourceVersion``."""
    ns, name = ns_name(obj)
    return await rest.request(client, "PUT", res.path(ns, name, "status"), body=obj)


async def merge_patch(
    client: lightkube.AsyncClient, res: Resource, ns: str, name: str, patch: Obj
) -> Obj:
    return await rest.request(
        client, "PATCH", res.path(ns, name), body=patch, content_type=MERGE_PATCH
    )


async def served_kinds(client: lightkube.AsyncClient, group_version: str) -> set[str]:
    """The kinds a group/version serves (empty when the server does not serve it)."""
    path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
    try:
        doc = await rest.request(client, "GET", path)
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return set()
        raise
    return {r["kind"] for r in doc.get("resources") or () if "/" not in r.get("name", "")}
