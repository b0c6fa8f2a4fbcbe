"""Node lifecycle: a node whose Lease stops is marked Unknown and tainted unreachable,
its pods are evicted after their toleration (at once if they tolerate nothing), a
NotReady node is tainted not-ready, and a node that comes back loses its taints."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import lightkube

from lahar.controllers.common import LEASES, MERGE_PATCH, NODES, PODS, format_time, wall
from lahar.kube import rest
from lahar.kube.leaderelection import micro_time
from tests.controllers.conftest import cond, controllers, create_node, eventually

Obj = dict[str, Any]


async def renew(client: lightkube.AsyncClient, node: str) -> None:
    """Play the node agent's heartbeat: create or renew the node's Lease."""
    body = {
        "metadata": {"name": node, "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": node,
            "leaseDurationSeconds": 1,
            "renewTime": micro_time(),
        },
    }
    try:
        await rest.request(
            client,
            "PATCH",
            LEASES.path("kube-node-lease", node),
            body={"spec": body["spec"]},
            content_type=MERGE_PATCH,
        )
    except rest.ApiError as exc:
        if not rest.is_status(exc, 404):
            raise
        await rest.request(client, "POST", LEASES.path("kube-node-lease"), body=body)


async def post_ready(client: lightkube.AsyncClient, node: str, status: str) -> None:
    stamp = format_time(wall())
    await rest.request(
        client,
        "PATCH",
        NODES.path(None, node, "status"),
        body={
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": status,
                        "reason": "KubeletReady" if status == "True" else "KubeletNotReady",
                        "message": "test agent",
                        "lastHeartbeatTime": stamp,
                        "lastTransitionTime": stamp,
                    }
                ]
            }
        },
        content_type="application/strategic-merge-patch+json",
    )


@contextlib.asynccontextmanager
async def heartbeating(client: lightkube.AsyncClient, node: str) -> AsyncIterator[None]:
    async def beat() -> None:
        while True:
            await renew(client, node)
            await asyncio.sleep(0.1)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def bound_pod(
    client: lightkube.AsyncClient, name: str, node: str, tolerations: list[Obj] | None = None
) -> Obj:
    spec: Obj = {
        "nodeName": node,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "busybox"}],
    }
    if tolerations is not None:
        spec["tolerations"] = tolerations
    body = {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
    pod = await rest.request(client, "POST", PODS.path("default"), body=body)
    return (
        await rest.request(
            client,
            "PATCH",
            PODS.path("default", name, "status"),
            body={
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}],
                }
            },
            content_type=MERGE_PATCH,
        )
        or pod
    )


async def get(client: lightkube.AsyncClient, path: str) -> Obj | None:
    try:
        return await rest.request(client, "GET", path)
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return None
        raise


def taint_keys(node: Obj | None) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in ((node or {}).get("spec") or {}).get("taints") or ()}


async def pod_gone(client: lightkube.AsyncClient, name: str) -> bool:
    pod = await get(client, PODS.path("default", name))
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


async def test_lease_stops_node_tainted_pods_evicted_then_back(
    client: lightkube.AsyncClient,
) -> None:
    await create_node(client, "n1")
    async with controllers(client, controllers=("nodelifecycle",)):
        async with heartbeating(client, "n1"):
            await post_ready(client, "n1", "True")
            short = [
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 1,
                }
            ]
            await bound_pod(client, "short", "n1", short)
            await bound_pod(client, "default-300", "n1")
            forever = [{"operator": "Exists"}]
            await bound_pod(client, "forever", "n1", forever)
            await asyncio.sleep(1.5)  # longer than the grace period: the lease keeps it alive
            node = await get(client, NODES.path(None, "n1"))
            assert cond(node, "Ready")["status"] == "True"  # type: ignore[index]
            assert not taint_keys(node)
        # the heartbeat stopped
        node = await eventually(lambda: _unreachable(client, "n1"), timeout=10)
        ready = cond(node, "Ready")
        assert ready and ready["reason"] == "NodeStatusUnknown"
        assert ready["message"] == "Kubelet stopped posting node status."
        assert taint_keys(node) == {
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoSchedule"),
        }
        noexec = [t for t in node["spec"]["taints"] if t["effect"] == "NoExecute"]
        assert noexec[0]["timeAdded"]
        await eventually(lambda: pod_gone(client, "short"), timeout=10)
        for name in ("default-300", "forever"):  # 300 s and forever: still there
            pod = await get(client, PODS.path("default", name))
            assert pod and not pod["metadata"].get("deletionTimestamp")
            assert cond(pod, "Ready")["status"] == "False"  # type: ignore[index]
        # the node comes back
        async with heartbeating(client, "n1"):
            await post_ready(client, "n1", "True")
            await eventually(lambda: _untainted(client, "n1"))


async def test_not_ready_node_is_tainted_and_intolerant_pods_go_at_once(
    client: lightkube.AsyncClient,
) -> None:
    await create_node(client, "n2")
    async with controllers(client, controllers=("nodelifecycle",)), heartbeating(client, "n2"):
        await post_ready(client, "n2", "False")
        node = await eventually(lambda: _tainted(client, "n2", "node.kubernetes.io/not-ready"))
        assert ("node.kubernetes.io/not-ready", "NoSchedule") in taint_keys(node)
        # a NoExecute taint the pod does not tolerate evicts it at once
        await bound_pod(client, "intolerant", "n2")
        await rest.request(
            client,
            "PATCH",
            NODES.path(None, "n2"),
            body={
                "spec": {
                    "taints": [
                        *node["spec"]["taints"],
                        {"key": "example.com/drain", "effect": "NoExecute"},
                    ]
                }
            },
            content_type=MERGE_PATCH,
        )
        await eventually(lambda: pod_gone(client, "intolerant"), timeout=5)
        await post_ready(client, "n2", "True")
        node = await eventually(lambda: _no_health_taints(client, "n2"))
        assert taint_keys(node) == {("example.com/drain", "NoExecute")}


async def test_node_that_never_reported_is_unknown(client: lightkube.AsyncClient) -> None:
    await create_node(client, "silent")
    async with controllers(client, controllers=("nodelifecycle",)):
        node = await eventually(lambda: _unreachable(client, "silent"), timeout=10)
        ready = cond(node, "Ready")
        assert ready and ready["reason"] == "NodeStatusNeverUpdated"


async def _unreachable(client: lightkube.AsyncClient, name: str) -> Obj | None:
    node = await get(client, NODES.path(None, name))
    ready = cond(node, "Ready")
    if ready and ready["status"] == "Unknown" and taint_keys(node):
        return node
    return None


async def _tainted(client: lightkube.AsyncClient, name: str, key: str) -> Obj | None:
    node = await get(client, NODES.path(None, name))
    return node if (key, "NoExecute") in taint_keys(node) else None


async def _untainted(client: lightkube.AsyncClient, name: str) -> bool:
    node = await get(client, NODES.path(None, name))
    return bool(node) and not taint_keys(node)


async def _no_health_taints(client: lightkube.AsyncClient, name: str) -> Obj | None:
    node = await get(client, NODES.path(None, name))
    keys = {k for k, _ in taint_keys(node)}
    managed = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    return node if node and not keys & managed else None
