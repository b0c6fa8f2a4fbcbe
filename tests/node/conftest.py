"""Fixtures for the node agent tests: an in-process API server, a client, and a fleet
of simulated nodes with quick timings that is always closed (and its nodes removed)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import lightkube
import pytest

from lahar.apiserver.server import APIServer
from lahar.kube import rest
from lahar.node.registration import LEASES, NODE_LEASE_NAMESPACE, NODES, PODS
from lahar.node.sim import SimFleet, SimOptions
from tests.embedded import closing_server, fast_server, in_process_client, private_dir

Obj = dict[str, Any]


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A private temp dir, removed when the test ends, pass or fail."""
    with private_dir("lahar-node-test-") as path:
        yield path


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[APIServer]:
    async with closing_server(fast_server(tmp_path / "data", gc=False)) as srv:
        yield srv


@pytest.fixture
async def client(server: APIServer) -> AsyncIterator[lightkube.AsyncClient]:
    async with in_process_client(server) as c:
        yield c


FleetFactory = Callable[..., contextlib.AbstractAsyncContextManager[SimFleet]]


@pytest.fixture
def fleet(client: lightkube.AsyncClient, server: APIServer) -> FleetFactory:
    """``async with fleet(count=2, ...) as f:`` a started SimFleet (quick timings), logs
    served in-process through the server's LogRouter unless ``logs=None`` is passed."""

    @contextlib.asynccontextmanager
    async def make(**kwargs: Any) -> AsyncIterator[SimFleet]:
        logs = kwargs.pop("logs", server.state.logs)
        opts: dict[str, Any] = {
            "count": 2,
            "ready_delay": 0.05,
            "stop_delay": 0.05,
            "heartbeat": 0.5,
            "status_period": 1.0,
        }
        opts.update(kwargs)
        f = SimFleet(client, SimOptions(**opts), logs=logs)
        try:
            await f.start()
            assert await f.wait_for_sync(10)
            yield f
        finally:
            await f.close()

    return make


async def eventually(
    check: Callable[[], Any | Awaitable[Any]], timeout: float = 10.0, interval: float = 0.02
) -> Any:
    """Wait until ``check()`` returns something truthy and return it; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check}")
        await asyncio.sleep(interval)


async def get_node(client: lightkube.AsyncClient, name: str) -> Obj:
    return await rest.request(client, "GET", NODES.path(name=name))


async def get_lease(client: lightkube.AsyncClient, name: str) -> Obj:
    return await rest.request(client, "GET", LEASES.path(NODE_LEASE_NAMESPACE, name))


async def get_pod(client: lightkube.AsyncClient, name: str, ns: str = "default") -> Obj | None:
    try:
        return await rest.request(client, "GET", PODS.path(ns, name))
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return None
        raise


async def create_pod(
    client: lightkube.AsyncClient,
    name: str,
    *,
    node: str | None = None,
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Never",
    containers: tuple[str, ...] = ("main",),
    init_containers: tuple[str, ...] = (),
    grace: int | None = None,
    ns: str = "default",
) -> Obj:
    spec: Obj = {
        "restartPolicy": restart_policy,
        "containers": [{"name": c, "image": f"example/{c}:1"} for c in containers],
    }
    if init_containers:
        spec["initContainers"] = [{"name": c, "image": "example/init:1"} for c in init_containers]
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    md: Obj = {"name": name}
    if annotations:
        md["annotations"] = annotations
    return await rest.request(client, "POST", PODS.path(ns), body={"metadata": md, "spec": spec})


def condition(obj: Obj | None, ctype: str) -> str | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return c.get("status")
    return None
