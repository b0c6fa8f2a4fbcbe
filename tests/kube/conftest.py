"""Fixtures for the controller-runtime tests: an in-process API server and clients.

``server`` is an embedded API server with no socket; ``client`` talks to it through
the in-process transport, behind a :class:`Switch` so that a test can restart the
server on the same data dir and point the same client at the new one.
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
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.resource import Resource

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PODS = Resource("", "v1", "pods", "Pod")


class Switch:
    """An ASGI app that forwards to another one, which a test may swap."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def new_server(data_dir: Path, **kwargs: Any) -> APIServer:
    server = APIServer(data_dir, port=0, **kwargs)
    server.state.bookmark_interval = 0.2
    return server


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A private temp dir, removed when the test ends (pass or fail): the API server's
    data dirs live here, and nothing a test writes may outlive it."""
    path = Path(tempfile.mkdtemp(prefix="lahar-kube-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[APIServer]:
    srv = new_server(tmp_path / "data")
    try:
        yield srv
    finally:
        await srv.close()


@pytest.fixture
async def switch(server: APIServer) -> Switch:
    return Switch(server.app)


@pytest.fixture
async def client(server: APIServer, switch: Switch) -> AsyncIterator[lightkube.AsyncClient]:
    c = kclient.in_process(switch, token=server.creds.token)
    try:
        yield c
    finally:
        await c.close()


async def create_cm(
    client: lightkube.AsyncClient, name: str, ns: str = "default", **fields: Any
) -> dict[str, Any]:
    body = {"metadata": {"name": name, "namespace": ns, **fields}, "data": {"v": "0"}}
    return await rest.request(client, "POST", CONFIGMAPS.path(ns), body=body)


async def patch_cm(
    client: lightkube.AsyncClient, name: str, value: str, ns: str = "default"
) -> dict[str, Any]:
    return await rest.request(
        client,
        "PATCH",
        CONFIGMAPS.path(ns, name),
        body={"data": {"v": value}},
        content_type="application/merge-patch+json",
    )


async def delete_cm(client: lightkube.AsyncClient, name: str, ns: str = "default") -> None:
    await rest.request(client, "DELETE", CONFIGMAPS.path(ns, name))


async def eventually(
    check: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0, interval: float = 0.02
) -> None:
    """Wait until ``check()`` is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check}")
        await asyncio.sleep(interval)


@contextlib.asynccontextmanager
async def running(*starters: Any) -> AsyncIterator[None]:
    """Start informers (or anything with start()/stop()) and stop them afterwards."""
    for s in starters:
        s.start()
    try:
        yield
    finally:
        for s in starters:
            await s.stop()
