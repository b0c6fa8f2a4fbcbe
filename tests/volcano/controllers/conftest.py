"""An in-process embedded cluster with Volcano's admission chain and the Volcano controllers.

``vc`` is a :class:`VC`: the API server (CRDs installed, admission wired through
``lahar.volcano.embedded``), a client, the controllers running in a task, and helpers that
read and write raw dicts. Tests play the scheduler (patching PodGroup phases) and the node
(patching pod status). Everything is stopped and the data dir removed even on failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any

import lightkube
import pytest
import yaml

from lahar.apiserver import crds
from lahar.apiserver.objects import WriteOptions
from lahar.apiserver.server import APIServer
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.resource import Resource
from lahar.volcano.controllers import ControllerOptions, run_volcano_controllers
from lahar.volcano.controllers.common import (
    MERGE_PATCH,
    PODGROUPS,
    PODS,
    QUEUES,
    VCJOBS,
)
from lahar.volcano.embedded import install_admission

Obj = dict[str, Any]
NAMESPACE = "default"


class VC:
    def __init__(self, server: APIServer, client: lightkube.AsyncClient) -> None:
        self.server = server
        self.client = client
        self.task: asyncio.Task[None] | None = None

    def start(self, options: ControllerOptions | None = None) -> None:
        opts = options or ControllerOptions(expectation_ttl=5.0)
        self.task = asyncio.create_task(run_volcano_controllers(self.client, options=opts))

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self.task, 10)
            self.task = None

    # -- raw requests ------------------------------------------------------------------

    async def create(self, res: Resource, obj: Obj, ns: str | None = NAMESPACE) -> Obj:
        return await rest.request(
            self.client, "POST", res.path(ns if res.namespaced else None), body=obj
        )

    async def get(self, res: Resource, name: str, ns: str | None = NAMESPACE) -> Obj | None:
        try:
            return await rest.request(
                self.client, "GET", res.path(ns if res.namespaced else None, name)
            )
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return None
            raise

    async def list(self, res: Resource, ns: str | None = NAMESPACE) -> list[Obj]:
        out = await rest.request(self.client, "GET", res.path(ns if res.namespaced else None))
        return list(out.get("items") or [])

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Obj,
        ns: str | None = NAMESPACE,
        subresource: str | None = None,
    ) -> Obj:
        return await rest.request(
            self.client,
            "PATCH",
            res.path(ns if res.namespaced else None, name, subresource),
            body=body,
            content_type=MERGE_PATCH,
        )

    async def delete(self, res: Resource, name: str, ns: str | None = NAMESPACE) -> None:
        with contextlib.suppress(rest.ApiError):
            await rest.request(
                self.client, "DELETE", res.path(ns if res.namespaced else None, name)
            )

    async def delete_strict(self, res: Resource, name: str, ns: str | None = NAMESPACE) -> None:
        await rest.request(self.client, "DELETE", res.path(ns if res.namespaced else None, name))

    # -- playing the scheduler and the node ----------------------------------------------

    async def set_podgroup_phase(self, name: str, phase: str, ns: str = NAMESPACE) -> None:
        await self.patch(PODGROUPS, name, {"status": {"phase": phase}}, ns)

    async def set_pod_phase(
        self, name: str, phase: str, ns: str = NAMESPACE, exit_code: int | None = None
    ) -> None:
        status: Obj = {"phase": phase}
        if exit_code is not None:
            status["containerStatuses"] = [
                {
                    "name": "main",
                    "ready": False,
                    "restartCount": 0,
                    "image": "busybox",
                    "imageID": "",
                    "state": {"terminated": {"exitCode": exit_code, "reason": "Error"}},
                }
            ]
        await self.patch(PODS, name, {"status": status}, ns, subresource="status")

    async def queue_state(self, name: str) -> str:
        q = await self.get(QUEUES, name, None)
        return ((q or {}).get("status") or {}).get("state", "")

    async def job(self, name: str, ns: str = NAMESPACE) -> Obj | None:
        return await self.get(VCJOBS, name, ns)

    async def job_phase(self, name: str, ns: str = NAMESPACE) -> str:
        job = await self.job(name, ns)
        return (((job or {}).get("status") or {}).get("state") or {}).get("phase", "")


async def eventually(
    check: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0, interval: float = 0.05
) -> None:
    """Wait until ``check()`` is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)


@functools.cache
def _volcano_crds() -> tuple[Obj, ...]:
    """Volcano's CRDs as packaged (parsed with libyaml: the pure-Python parser takes
    seconds over these schemas)."""
    folder = resources.files("lahar") / "manifests" / "crds"
    out: list[Obj] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml") and "volcano.sh" in entry.name:
            out.extend(d for d in yaml.load_all(entry.read_text(), Loader=yaml.CSafeLoader) if d)
    return tuple(out)


def install_volcano_crds(server: APIServer) -> None:
    """Only Volcano's CRDs (the Ray ones are not needed here)."""
    rt = server.state.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert rt is not None
    for crd in _volcano_crds():
        created = server.state.objects.create(
            rt, "", copy.deepcopy(crd), WriteOptions(field_manager="test")
        )
        crds.established(server.state, created.object)


@pytest.fixture
async def bare() -> AsyncIterator[VC]:
    """The cluster with admission and CRDs, controllers not started."""
    data = Path(tempfile.mkdtemp(prefix="lahar-vc-test-"))
    server = APIServer(data / "data", port=0)
    server.state.bookmark_interval = 0.2
    install_volcano_crds(server)
    install_admission(server.state)
    server.gc.start()  # owner references: a deleted job takes its PodGroup and pods along
    client = kclient.in_process(server.app, token=server.creds.token)
    vc = VC(server, client)
    try:
        yield vc
    finally:
        await vc.stop()
        await client.close()
        await server.close()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
async def vc(bare: VC) -> AsyncIterator[VC]:
    """The cluster with the Volcano controllers running and the default queue Open."""
    bare.start()
    await eventually(lambda: _is_open(bare, "default"))
    yield bare


async def _is_open(vc: VC, name: str) -> bool:
    return await vc.queue_state(name) == "Open"
