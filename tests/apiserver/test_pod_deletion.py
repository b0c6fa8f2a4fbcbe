"""Graceful deletion of a bound pod: its node agent confirms, as the kubelet does.

The pod stays (with its deletionTimestamp) until the agent deletes it with grace 0,
even past the grace period and whatever is written to it meanwhile; only when no agent
holds a fresh Lease for the node does the API server's collector end it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import lightkube
import pytest

from lahar.apiserver.server import APIServer
from lahar.kube import client as kclient
from lahar.kube import rest

PODS = "/api/v1/namespaces/default/pods"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[APIServer, lightkube.AsyncClient]]:
    tmp = Path(tempfile.mkdtemp(prefix="lahar-pod-deletion-"))
    server = APIServer(tmp / "data", port=0)
    client = kclient.in_process(server.app, token=server.creds.token)
    try:
        yield server, client
    finally:
        await client.close()
        await server.close()
        shutil.rmtree(tmp, ignore_errors=True)


async def bound_pod(client: lightkube.AsyncClient, name: str, node: str) -> dict[str, Any]:
    body = {
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
    }
    return await rest.request(client, "POST", PODS, body=body)


async def fresh_lease(client: lightkube.AsyncClient, node: str) -> None:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body = {
        "metadata": {"name": node},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now},
    }
    await rest.request(client, "POST", LEASES, body=body)


async def exists(client: lightkube.AsyncClient, name: str) -> bool:
    try:
        await rest.request(client, "GET", f"{PODS}/{name}")
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return False
        raise
    return True


async def test_a_write_past_the_grace_period_does_not_end_the_pod(
    cluster: tuple[APIServer, lightkube.AsyncClient],
) -> None:
    server, client = cluster
    await fresh_lease(client, "n1")
    await bound_pod(client, "p", "n1")
    marked = await rest.request(client, "DELETE", f"{PODS}/p", body={"gracePeriodSeconds": 1})
    assert marked["metadata"]["deletionTimestamp"]
    await asyncio.sleep(1.2)  # the grace period is over
    status = {"status": {"phase": "Failed", "reason": "Terminated"}}
    await rest.request(  # the agent reports the containers it killed
        client,
        "PATCH",
        f"{PODS}/p/status",
        body=status,
        content_type="application/merge-patch+json",
    )
    server.gc.collect_once()  # the agent is alive: the collector leaves it to the agent
    assert await exists(client, "p")
    await rest.request(client, "DELETE", f"{PODS}/p", body={"gracePeriodSeconds": 0})
    assert not await exists(client, "p")


async def test_without_a_live_agent_the_collector_ends_the_pod_after_its_grace(
    cluster: tuple[APIServer, lightkube.AsyncClient],
) -> None:
    server, client = cluster
    await bound_pod(client, "orphan", "gone-node")  # no Lease: nobody will confirm
    await rest.request(client, "DELETE", f"{PODS}/orphan", body={"gracePeriodSeconds": 1})
    server.gc.collect_once()
    assert await exists(client, "orphan")  # still within its grace period
    await asyncio.sleep(1.2)
    server.gc.collect_once()
    assert not await exists(client, "orphan")


async def test_an_unbound_pod_goes_at_once(
    cluster: tuple[APIServer, lightkube.AsyncClient],
) -> None:
    _server, client = cluster
    body = {"metadata": {"name": "pending"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    await rest.request(client, "POST", PODS, body=body)
    await rest.request(client, "DELETE", f"{PODS}/pending", body={"gracePeriodSeconds": 30})
    assert not await exists(client, "pending")
