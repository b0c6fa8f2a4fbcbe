"""What the Volcano controllers share: the kinds they touch and idempotent writes.

Every write a controller makes must be safe to repeat, because a reconcile can run again
on a cache that has not yet seen the previous write: a create of an object that already
exists is success (get-or-create by name), a delete of an object already gone is success,
and a kind the cluster does not serve (the embedded server has no NetworkPolicy) is
skipped with one warning instead of failing the reconcile forever.
"""

from __future__ import annotations

import logging
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.resource import Resource
from lahar.volcano import constants as c

log = logging.getLogger("lahar.volcano.controllers")
Obj = dict[str, Any]

PODS = Resource("", "v1", "pods", "Pod")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
QUEUES = Resource(c.SCHEDULING_GROUP, "v1beta1", "queues", "Queue", namespaced=False)
PODGROUPS = Resource(c.SCHEDULING_GROUP, "v1beta1", "podgroups", "PodGroup")
VCJOBS = Resource(c.BATCH_GROUP, "v1alpha1", "jobs", "Job")

# Kinds the vcjob plugins and the podgroup controller may touch, by (apiVersion, kind).
_KNOWN: dict[tuple[str, str], Resource] = {
    ("v1", "Pod"): PODS,
    ("v1", "Service"): SERVICES,
    ("v1", "ConfigMap"): CONFIGMAPS,
    ("v1", "Secret"): Resource("", "v1", "secrets", "Secret"),
    ("networking.k8s.io/v1", "NetworkPolicy"): Resource(
        "networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"
    ),
    (c.PODGROUP_API_VERSION, "PodGroup"): PODGROUPS,
    (c.PODGROUP_API_VERSION, "Queue"): QUEUES,
    (c.JOB_API_VERSION, "Job"): VCJOBS,
    ("apps/v1", "ReplicaSet"): Resource("apps", "v1", "replicasets", "ReplicaSet"),
    ("apps/v1", "Deployment"): Resource("apps", "v1", "deployments", "Deployment"),
    ("apps/v1", "StatefulSet"): Resource("apps", "v1", "statefulsets", "StatefulSet"),
    ("batch/v1", "Job"): Resource("batch", "v1", "jobs", "Job"),
}

MERGE_PATCH = "application/merge-patch+json"

# Kinds the server answered "not served" for (404 on the collection): warned about once.
_unserved: set[Resource] = set()


def resource_of(obj: Obj) -> Resource:
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    try:
        return _KNOWN[key]
    except KeyError:
        raise ValueError(f"no resource known for {key[0]} {key[1]}") from None


def resource_for(api_version: str, kind: str) -> Resource | None:
    return _KNOWN.get((api_version, kind))


def _not_served(res: Resource, exc: rest.ApiError) -> bool:
    """A 404 on a create means the collection itself is not served."""
    if not rest.is_status(exc, 404):
        return False
    if res not in _unserved:
        _unserved.add(res)
        log.warning("the cluster does not serve %s; skipping objects of that kind", res)
    return True


async def create(client: lightkube.AsyncClient, obj: Obj) -> Obj | None:
    """Create ``obj``; an existing object of that name counts as created (returns None),
    as does a kind the cluster does not serve."""
    res = resource_of(obj)
    ns = obj["metadata"].get("namespace")
    try:
        return await rest.request(client, "POST", res.path(ns), body=obj)
    except rest.ApiError as exc:
        if rest.is_status(exc, 409) or _not_served(res, exc):
            return None
        raise


async def apply(client: lightkube.AsyncClient, obj: Obj) -> None:
    """Create ``obj``, or bring an existing one's ``spec``/``data`` in line with it."""
    res = resource_of(obj)
    md = obj["metadata"]
    ns = md.get("namespace")
    try:
        await rest.request(client, "POST", res.path(ns), body=obj)
        return
    except rest.ApiError as exc:
        if _not_served(res, exc):
            return
        if not rest.is_status(exc, 409):
            raise
    live = await rest.request(client, "GET", res.path(ns, md["name"]))
    # Only what we set: fields the server defaulted (a Service's clusterIPs) stay.
    patch = {
        k: merge_diff(live.get(k), obj[k], remove=k == "data") for k in ("spec", "data") if k in obj
    }
    patch = {k: v for k, v in patch.items() if v != {}}
    if patch:
        await patch_merge(client, res, ns, md["name"], patch)


async def delete(
    client: lightkube.AsyncClient,
    res: Resource,
    namespace: str | None,
    name: str,
    *,
    uid: str | None = None,
    propagation: str | None = None,
) -> bool:
    """Delete one object (only if it still has ``uid``); False when it was already gone."""
    body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if uid:
        body["preconditions"] = {"uid": uid}
    if propagation:
        body["propagationPolicy"] = propagation
    try:
        await rest.request(client, "DELETE", res.path(namespace, name), body=body)
    except rest.ApiError as exc:
        if rest.is_status(exc, 404) or (uid and rest.is_status(exc, 409)):
            return False
        raise
    return True


async def patch_merge(
    client: lightkube.AsyncClient,
    res: Resource,
    namespace: str | None,
    name: str,
    patch: Obj,
    *,
    subresource: str | None = None,
) -> Obj:
    return await rest.request(
        client,
        "PATCH",
        res.path(namespace, name, subresource),
        body=patch,
        content_type=MERGE_PATCH,
    )


def merge_diff(old: Any, new: Any, *, remove: bool = True) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new`` ({} if equal);
    with ``remove=False`` keys only ``old`` has are left alone instead of removed."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    out: Obj = {}
    if remove:
        for key in old.keys() - new.keys():
            out[key] = None
    for key, value in new.items():
        if key not in old:
            out[key] = value
        elif old[key] != value:
            diff = merge_diff(old[key], value, remove=remove)
            if diff != {} or not isinstance(value, dict):
                out[key] = diff
    return out


def annotations(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def controller_ref(obj: Obj) -> Obj | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None
