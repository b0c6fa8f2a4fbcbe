"""Node objects: what an agent registers, and the Lease that says it is alive.

A kubelet registers its Node with labels, capacity and allocatable, conditions,
addresses, the port of its log endpoint and ``nodeInfo``; it creates a Lease of the
same name in ``kube-node-lease`` (owned by the Node, so it goes when the Node goes)
and renews it. Registering again after a restart updates the labels and the status
of the Node that is there and keeps everything else (annotations someone set, the
pod CIDR), so a restarted agent takes its nodes back instead of failing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.leaderelection import micro_time
from lahar.kube.resource import Resource
from lahar.node.podstatus import rfc3339

log = logging.getLogger("lahar.node.registration")
Obj = dict[str, Any]

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
NODE_LEASE_NAMESPACE = "kube-node-lease"
MERGE = "application/merge-patch+json"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_NODE_TYPE = "lahar.dev/node-type"

# Condition type -> (status, reason, message) of a healthy node.
HEALTHY: dict[str, tuple[str, str, str]] = {
    "MemoryPressure": (
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    "DiskPressure": ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    "PIDPressure": ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    "Ready": ("True", "KubeletReady", "kubelet is posting ready status"),
}
# What the node lifecycle controller writes when an agent stops reporting.
UNKNOWN: dict[str, tuple[str, str, str]] = {
    t: ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.") for t in HEALTHY
}


@dataclass
class NodeSpec:
    """Everything an agent says about one of its nodes when it registers it."""

    name: str
    capacity: dict[str, str]
    internal_ip: str
    kubelet_version: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: list[Obj] = field(default_factory=list)
    allocatable: dict[str, str] | None = None
    pod_cidr: str | None = None
    provider_id: str | None = None
    log_port: int | None = None
    runtime_version: str = "lahar://0.1.0"
    os_image: str = "lahar"

    def node(self, conditions: dict[str, tuple[str, str, str]] | None = None) -> Obj:
        """The Node object to create."""
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            **self.labels,
        }
        spec: Obj = {}
        if self.pod_cidr:
            spec["podCIDR"] = self.pod_cidr
            spec["podCIDRs"] = [self.pod_cidr]
        if self.provider_id:
            spec["providerID"] = self.provider_id
        if self.taints:
            spec["taints"] = self.taints
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": labels,
                "annotations": dict(self.annotations),
            },
            "spec": spec,
            "status": self.status(conditions or HEALTHY),
        }

    def status(self, conditions: dict[str, tuple[str, str, str]], since: str | None = None) -> Obj:
        now = rfc3339()
        status: Obj = {
            "capacity": dict(self.capacity),
            "allocatable": dict(self.allocatable or self.capacity),
            "conditions": condition_list(conditions, now, since or now),
            "addresses": [
                {"type": "InternalIP", "address": self.internal_ip},
                {"type": "Hostname", "address": self.name},
            ],
            "nodeInfo": {
                "machineID": _hexid(self.name, "machine"),
                "systemUUID": _hexid(self.name, "system"),
                "bootID": _hexid(self.name, "boot"),
                "kernelVersion": "6.0.0-lahar",
                "osImage": self.os_image,
                "containerRuntimeVersion": self.runtime_version,
                "kubeletVersion": self.kubelet_version,
                "kubeProxyVersion": self.kubelet_version,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }
        if self.log_port:
            status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self.log_port}}
        return status


def condition_list(
    conditions: dict[str, tuple[str, str, str]],
    heartbeat: str,
    transitions: str | dict[str, str],
) -> list[Obj]:
    """Node conditions with ``lastHeartbeatTime`` ``heartbeat``; ``transitions`` is one
    time for all or the time per condition type."""
    out = []
    for ctype, (status, reason, message) in conditions.items():
        since = transitions if isinstance(transitions, str) else transitions.get(ctype, heartbeat)
        out.append(
            {
                "type": ctype,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": heartbeat,
                "lastTransitionTime": since,
            }
        )
    return out


def _hexid(name: str, salt: str) -> str:
    import hashlib

    return hashlib.md5(f"{salt}/{name}".encode(), usedforsecurity=False).hexdigest()


def lease_body(node: str, node_uid: str | None, duration: int) -> Obj:
    meta: Obj = {"name": node, "namespace": NODE_LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}
        ]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": node,
            "leaseDurationSeconds": duration,
            "renewTime": micro_time(),
        },
    }


async def register(
    client: lightkube.AsyncClient, spec: NodeSpec, *, lease_duration: int
) -> tuple[Obj, Obj]:
    """Create the Node (or take over the one that is there) and its Lease; return both."""
    body = spec.node()
    try:
        node = await rest.request(client, "POST", NODES.path(), body=body)
    except rest.ApiError as exc:
        if not rest.is_status(exc, 409):
            raise
        patch = {"metadata": {"labels": body["metadata"]["labels"]}}
        if spec.taints:
            patch["spec"] = {"taints": spec.taints}
        await rest.request(
            client, "PATCH", NODES.path(name=spec.name), body=patch, content_type=MERGE
        )
        node = await rest.request(
            client,
            "PATCH",
            NODES.path(name=spec.name, subresource="status"),
            body={"status": body["status"]},
            content_type=MERGE,
        )
    lease = await ensure_lease(client, spec.name, node["metadata"].get("uid"), lease_duration)
    return node, lease


async def ensure_lease(
    client: lightkube.AsyncClient, node: str, uid: str | None, duration: int
) -> Obj:
    """Create the node's Lease, or take over and renew the one that is there; return it."""
    body = lease_body(node, uid, duration)
    try:
        return await rest.request(client, "POST", LEASES.path(NODE_LEASE_NAMESPACE), body=body)
    except rest.ApiError as exc:
        if not rest.is_status(exc, 409):
            raise
    current = await rest.request(client, "GET", LEASES.path(NODE_LEASE_NAMESPACE, node))
    current["spec"] = body["spec"]
    return await renew_lease(client, current)


async def renew_lease(client: lightkube.AsyncClient, lease: Obj) -> Obj:
    """Write ``lease`` back with a fresh ``renewTime``, as a kubelet does: an update
    carrying the resourceVersion last seen (409 if someone else wrote it since), which
    costs the server less than a patch. Returns the stored Lease."""
    lease["spec"]["renewTime"] = micro_time()
    lease["metadata"].pop("managedFields", None)
    md = lease["metadata"]
    return await rest.request(
        client,
        "PUT",
        LEASES.path(md.get("namespace") or NODE_LEASE_NAMESPACE, md["name"]),
        body=lease,
    )


async def unregister(client: lightkube.AsyncClient, name: str) -> None:
    """Delete the Node and its Lease (either may be gone already)."""
    for path in (NODES.path(name=name), LEASES.path(NODE_LEASE_NAMESPACE, name)):
        try:
            await rest.request(client, "DELETE", path)
        except rest.ApiError as exc:
            if not rest.is_status(exc, 404):
                raise


async def bounded(
    calls: Iterable[Callable[[], Awaitable[Any]]], concurrency: int
) -> list[BaseException | None]:
    """Run ``calls`` at most ``concurrency`` at a time; the exception of each (or None)."""
    sem = asyncio.Semaphore(concurrency)

    async def one(call: Callable[[], Awaitable[Any]]) -> BaseException | None:
        async with sem:
            try:
                await call()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return exc
        return None

    return list(await asyncio.gather(*(one(c) for c in calls)))
