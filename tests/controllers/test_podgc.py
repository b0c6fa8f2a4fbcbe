"""Pod GC: terminated pods beyond the threshold (oldest first), pods on a node that
no longer exists, and unscheduled pods stuck terminating."""

from __future__ import annotations

import asyncio
from typing import Any

import lightkube

from lahar.controllers.common import MERGE_PATCH, NODES, PODS
from lahar.kube import rest
from tests.controllers.conftest import controllers, create_node, eventually, set_phase

Obj = dict[str, Any]


async def make_pod(client: lightkube.AsyncClient, name: str, **spec: Any) -> Obj:
    body = {
        "metadata": {"name": name, "namespace": "default", **spec.pop("metadata", {})},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }
    return await rest.request(client, "POST", PODS.path("default"), body=body)


async def names(client: lightkube.AsyncClient) -> set[str]:
    out = await rest.request(client, "GET", PODS.path("default"))
    return {p["metadata"]["name"] for p in out["items"]}


async def test_terminated_pods_beyond_threshold_oldest_first(
    client: lightkube.AsyncClient,
) -> None:
    for i in range(4):
        pod = await make_pod(client, f"t{i}")
        await set_phase(client, pod, "Succeeded" if i % 2 else "Failed")
        await asyncio.sleep(1.05)  # creationTimestamp has whole seconds
    await make_pod(client, "running")
    async with controllers(client, controllers=("podgc",), terminated_pod_gc_threshold=2):
        await eventually(lambda: _names_are(client, {"t2", "t3", "running"}))
        await asyncio.sleep(0.5)
        assert await names(client) == {"t2", "t3", "running"}


async def test_orphaned_pods_are_deleted(client: lightkube.AsyncClient) -> None:
    await create_node(client, "real")
    await make_pod(client, "on-real", nodeName="real")
    await make_pod(client, "on-ghost", nodeName="ghost")
    async with controllers(client, controllers=("podgc",)):
        await eventually(lambda: _names_are(client, {"on-real"}))
        # deleting a node orphans its pods
        await rest.request(client, "DELETE", NODES.path(None, "real"))
        await eventually(lambda: _names_are(client, set()))


async def test_unscheduled_terminating_pods_are_failed_and_deleted(
    client: lightkube.AsyncClient,
) -> None:
    await make_pod(client, "held", metadata={"finalizers": ["example.com/hold"]})
    await rest.request(client, "DELETE", PODS.path("default", "held"))
    async with controllers(client, controllers=("podgc",)):
        pod = await eventually(lambda: _failed(client, "held"))
        conds = {c["type"]: c for c in pod["status"].get("conditions") or ()}
        assert conds["DisruptionTarget"]["reason"] == "DeletionByPodGC"
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 0
    await rest.request(
        client,
        "PATCH",
        PODS.path("default", "held"),
        body={"metadata": {"finalizers": None}},
        content_type=MERGE_PATCH,
    )
    assert await names(client) == set()


async def _names_are(client: lightkube.AsyncClient, want: set[str]) -> bool:
    return await names(client) == want


async def _failed(client: lightkube.AsyncClient, name: str) -> Obj | None:
    pod = await rest.request(client, "GET", PODS.path("default", name))
    return pod if (pod.get("status") or {}).get("phase") == "Failed" else None
