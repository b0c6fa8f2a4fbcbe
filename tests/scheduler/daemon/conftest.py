"""Fixtures for the scheduler daemon tests: an in-process API server with lahar's CRDs,
clients, object builders, and a running scheduler that is always stopped.

Everything a test starts (server, clients, daemons) is closed in ``finally`` blocks,
and the data dir is a private temp dir removed afterwards, pass or fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import lightkube
import pytest

from lahar.apiserver.server import APIServer
from lahar.embedded import install_crds
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.events import EVENTS
from lahar.scheduler.daemon import SchedulerDaemon, SchedulerOptions
from lahar.scheduler.daemon.cache import NODES, PODGROUPS, PODS, QUEUES

Obj = dict[str, Any]


class Switch:
    """An ASGI app in front of the server's, which a test can make misbehave."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.fail: Callable[[dict[str, Any]], int | None] = lambda scope: None
        self.requests: list[tuple[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            self.requests.append((scope["method"], scope["path"]))
            code = self.fail(scope)
            if code is not None:
                body = (
                    b'{"kind":"Status","apiVersion":"v1","status":"Failure",'
                    b'"message":"injected failure","reason":"InternalError","code":%d}' % code
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": code,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    def binds(self) -> list[str]:
        return [p for m, p in self.requests if m == "POST" and p.endswith("/binding")]


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lahar-sched-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def template_dir() -> Iterator[Path]:
    """A data dir with credentials and lahar's CRDs, made once (installing the CRDs
    takes seconds); each test's server starts from a copy of it."""
    path = Path(tempfile.mkdtemp(prefix="lahar-sched-template-"))
    try:
        srv = APIServer(path / "data", port=0)
        install_crds(srv.state)
        asyncio.run(srv.close())
        yield path / "data"
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def server(tmp_path: Path, template_dir: Path) -> AsyncIterator[APIServer]:
    shutil.copytree(template_dir, tmp_path / "data")
    srv = APIServer(tmp_path / "data", port=0)
    srv.state.bookmark_interval = 0.2
    try:
        yield srv
    finally:
        await srv.close()


@pytest.fixture
def switch(server: APIServer) -> Switch:
    return Switch(server.app)


@pytest.fixture
async def client(server: APIServer, switch: Switch) -> AsyncIterator[lightkube.AsyncClient]:
    c = kclient.in_process(switch, token=server.creds.token)
    try:
        yield c
    finally:
        await c.close()


# -- objects -------------------------------------------------------------------------------


async def create(client: lightkube.AsyncClient, path: str, body: Obj) -> Obj:
    return await rest.request(client, "POST", path, body=body)


async def node(
    client: lightkube.AsyncClient, name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110"
) -> Obj:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    created = await create(client, NODES.path(), body)
    if not (created.get("status") or {}).get("allocatable"):
        created = await rest.request(
            client,
            "PATCH",
            NODES.path(None, name, "status"),
            body={"status": body["status"]},
            content_type="application/merge-patch+json",
        )
    return created


async def podgroup(
    client: lightkube.AsyncClient,
    name: str,
    min_member: int,
    *,
    ns: str = "default",
    queue: str | None = None,
    **spec: Any,
) -> Obj:
    body: Obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": min_member, **spec},
    }
    if queue:
        body["spec"]["queue"] = queue
    return await create(client, PODGROUPS.path(ns), body)


async def queue(client: lightkube.AsyncClient, name: str, weight: int = 1, **spec: Any) -> Obj:
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, "reclaimable": True, **spec},
    }
    return await create(client, QUEUES.path(), body)


async def pod(
    client: lightkube.AsyncClient,
    name: str,
    group: str | None,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    ns: str = "default",
    scheduler: str = "volcano",
) -> Obj:
    md: Obj = {"name": name, "namespace": ns}
    if group:
        md["annotations"] = {"scheduling.k8s.io/group-name": group}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": md,
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        },
    }
    return await create(client, PODS.path(ns), body)


async def gang(
    client: lightkube.AsyncClient, name: str, size: int, min_member: int | None = None, **kw: Any
) -> list[Obj]:
    await podgroup(client, name, size if min_member is None else min_member)
    return [await pod(client, f"{name}-{i}", name, **kw) for i in range(size)]


async def get(client: lightkube.AsyncClient, path: str) -> Obj:
    return await rest.request(client, "GET", path)


async def pods_on_nodes(client: lightkube.AsyncClient, ns: str = "default") -> dict[str, str]:
    items = (await get(client, PODS.path(ns)))["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in items}


async def events(client: lightkube.AsyncClient, ns: str = "default") -> list[Obj]:
    return list((await get(client, EVENTS.path(ns)))["items"])


async def eventually(
    check: Callable[[], Any | Awaitable[Any]], timeout: float = 15.0, interval: float = 0.05
) -> Any:
    """Wait until ``check()`` is truthy (returns it); fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if not isinstance(result, bool) and hasattr(result, "__await__"):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check}")
        await asyncio.sleep(interval)


def fast_options(**kw: Any) -> SchedulerOptions:
    base: dict[str, Any] = {"schedule_period": 0.1, "health_port": 0}
    base.update(kw)
    return SchedulerOptions(**base)


@contextlib.asynccontextmanager
async def running(
    client: lightkube.AsyncClient, options: SchedulerOptions | None = None
) -> AsyncIterator[SchedulerDaemon]:
    """A scheduler daemon for the duration of the block, always stopped afterwards."""
    daemon = SchedulerDaemon(client, options=options or fast_options())
    task = asyncio.create_task(daemon.run())
    try:
        await daemon.manager.wait_started(10)
        yield daemon
    finally:
        daemon.stop()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 15)
        if not task.done():
            task.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise AssertionError("the scheduler daemon failed") from task.exception()
