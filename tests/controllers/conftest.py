"""Fixtures for the built-in controller tests: an in-process API server (with its
garbage collector running), a client, and the controllers on sub-second timings.

No node agent runs: tests play it by writing pod status and node Leases.
"""

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
from lahar.controllers.common import JOBS, MERGE_PATCH, NODES, PODS
from lahar.controllers.options import ControllerOptions
from lahar.controllers.run import build_manager
from lahar.kube import rest
from lahar.kube.manager import Manager
from tests.embedded import closing_server, fast_server, in_process_client, private_dir

Obj = dict[str, Any]


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    with private_dir("lahar-controllers-test-") as path:
        yield path


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[APIServer]:
    async with closing_server(fast_server(tmp_path / "data")) as srv:
        yield srv


@pytest.fixture
async def client(server: APIServer) -> AsyncIterator[lightkube.AsyncClient]:
    async with in_process_client(server) as c:
        yield c


@contextlib.asynccontextmanager
async def controllers(client: lightkube.AsyncClient, **overrides: Any) -> AsyncIterator[Manager]:
    """The built-in controllers running on ``client`` with fast timings."""
    overrides.setdefault("controllers", ("job", "nodelifecycle", "podgc"))
    mgr = build_manager(client, options=ControllerOptions.fast(**overrides))
    task = asyncio.create_task(mgr.run())
    try:
        await mgr.wait_started(10)
        assert await mgr.informers.wait_for_sync(10)
        yield mgr
    finally:
        mgr.stop()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        if not task.done():
            task.cancel()


async def eventually(
    check: Callable[[], Any | Awaitable[Any]], timeout: float = 10.0, interval: float = 0.05
) -> Any:
    """Wait until ``check()`` returns something truthy (and return it)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)


def job_body(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                }
            },
            **spec,
        },
    }


async def create_job(client: lightkube.AsyncClient, name: str, **spec: Any) -> Obj:
    return await rest.request(client, "POST", JOBS.path("default"), body=job_body(name, **spec))


async def get_job(client: lightkube.AsyncClient, name: str) -> Obj | None:
    try:
        return await rest.request(client, "GET", JOBS.path("default", name))
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):
            return None
        raise


async def job_pods(client: lightkube.AsyncClient, name: str) -> list[Obj]:
    out = await rest.request(
        client,
        "GET",
        PODS.path("default"),
        params={"labelSelector": f"batch.kubernetes.io/job-name={name}"},
    )
    return sorted(out["items"], key=lambda p: p["metadata"]["creationTimestamp"])


async def set_phase(client: lightkube.AsyncClient, pod: Obj, phase: str) -> Obj:
    """Play the node agent: move a pod to ``phase``."""
    md = pod["metadata"]
    return await rest.request(
        client,
        "PATCH",
        PODS.path(md["namespace"], md["name"], "status"),
        body={"status": {"phase": phase}},
        content_type=MERGE_PATCH,
    )


def cond(obj: Obj | None, kind: str) -> Obj | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return c  # type: ignore[no-any-return]
    return None


async def create_node(client: lightkube.AsyncClient, name: str) -> Obj:
    return await rest.request(
        client, "POST", NODES.path(), body={"metadata": {"name": name}, "spec": {}}
    )


async def events(client: lightkube.AsyncClient, name: str) -> list[str]:
    out = await rest.request(client, "GET", "/api/v1/namespaces/default/events")
    return [e["reason"] for e in out["items"] if e["involvedObject"].get("name") == name]
