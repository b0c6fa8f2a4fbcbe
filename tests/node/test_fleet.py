"""The fleet as the embedded cluster will run it (``run_sim_nodes`` on a shared informer
factory, cancelled at the end) and at a moderate scale."""

from __future__ import annotations

import asyncio

import lightkube

from lahar.apiserver.server import APIServer
from lahar.kube import rest
from lahar.kube.factory import InformerFactory
from lahar.node.registration import LEASES, NODE_LEASE_NAMESPACE, NODES, PODS, bounded
from lahar.node.sim import SimOptions, run_sim_nodes
from tests.node.conftest import FleetFactory, create_pod, eventually, get_pod


async def _count_nodes(client: lightkube.AsyncClient) -> int:
    return len((await rest.request(client, "GET", NODES.path()))["items"])


async def test_run_sim_nodes_on_a_shared_factory_until_cancelled(
    client: lightkube.AsyncClient, server: APIServer
) -> None:
    factory = InformerFactory(client)
    pods = factory.informer(PODS)  # another component's informer, shared
    factory.start()
    opts = SimOptions(count=4, name_prefix="emb-", ready_delay=0.05, heartbeat=0.5)
    task = asyncio.create_task(
        run_sim_nodes(client, options=opts, informers=factory, logs=server.state.logs)
    )
    try:
        await eventually(lambda: _count_nodes(client), timeout=10)
        await eventually(lambda: _all_nodes(client, 4), timeout=10)
        await create_pod(client, "shared", node="emb-3")
        await eventually(lambda: _running(client, "shared"))
        assert len(factory) == 2  # the pods informer was shared, a nodes one added
        assert pods.cache.get("shared", "default") is not None
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.stop()
    assert await _count_nodes(client) == 0
    leases = await rest.request(client, "GET", LEASES.path(NODE_LEASE_NAMESPACE))
    assert leases["items"] == []
    assert server.state.logs._providers == {}


async def test_host_network_pod_gets_the_node_ip(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1):
        body = {
            "metadata": {"name": "hostnet"},
            "spec": {
                "nodeName": "sim-0",
                "hostNetwork": True,
                "containers": [{"name": "main", "image": "example/main:1"}],
            },
        }
        await rest.request(client, "POST", PODS.path("default"), body=body)
        await eventually(lambda: _running(client, "hostnet"))
        pod = await get_pod(client, "hostnet")
        assert pod is not None and pod["status"]["podIP"] == pod["status"]["hostIP"]


async def test_a_thousand_pods_on_a_hundred_nodes(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=100, ready_delay=0.0, heartbeat=10.0) as f:
        await bounded(
            [
                lambda i=i: create_pod(
                    client, f"p{i}", node=f"sim-{i % 100}", restart_policy="Always"
                )
                for i in range(1000)
            ],
            16,
        )
        await eventually(lambda: f.pods.started == 1000 and not len(f.writer), timeout=60)
        items = (await rest.request(client, "GET", PODS.path("default")))["items"]
        assert sum(p["status"].get("phase") == "Running" for p in items) == 1000
        by_node: dict[str, set[str]] = {}
        for p in items:
            by_node.setdefault(p["spec"]["nodeName"], set()).add(p["status"]["podIP"])
        assert len(by_node) == 100 and all(len(ips) == 10 for ips in by_node.values())


async def _all_nodes(client: lightkube.AsyncClient, n: int) -> bool:
    return await _count_nodes(client) == n


async def _running(client: lightkube.AsyncClient, name: str) -> bool:
    pod = await get_pod(client, name)
    return ((pod or {}).get("status") or {}).get("phase") == "Running"
