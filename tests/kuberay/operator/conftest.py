"""Fixtures for the operator tests: an in-process API server with lahar's CRDs and
admission, a controllable wall clock, the stand-in Ray dashboard, and a harness
that runs the operator's informers and calls its reconcilers one pass at a time.

No built-in Job controller, scheduler or node agent runs: tests play them by
patching objects (pods Running and Ready with an IP, Job conditions).
"""

from __future__ import annotations

import asyncio
import copy
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import lightkube
import pytest

from lahar.apiserver.server import APIServer
from lahar.embedded import admission_chain, install_crds
from lahar.kube import rest
from lahar.kube.reconcile import Request, Result
from lahar.kuberay.operator import OperatorOptions, build_operator, kinds
from tests.embedded import closing_server, fast_server, in_process_client
from tests.kuberay.helpers import minimal_cluster, minimal_job
from tests.kuberay.operator.fakeray import FakeRayFleet

Obj = dict[str, Any]
NS = "default"
START = 1_800_000_000.0


class Clock:
    """A wall clock that moves only when told."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def tmp_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lahar-operator-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def template_dir() -> Iterator[Path]:
    """A data dir with lahar's CRDs installed once per session (installing them is
    the slow part); every test's server starts from a copy."""
    path = Path(tempfile.mkdtemp(prefix="lahar-operator-template-"))
    try:
        srv = APIServer(path / "data", port=0)
        install_crds(srv.state)
        asyncio.run(srv.close())
        yield path / "data"
    finally:
        shutil.rmtree(path, ignore_errors=True)


def new_server(path: Path, template: Path, *, admission: bool = True) -> APIServer:
    shutil.copytree(template, path)
    return fast_server(path, admission=admission_chain() if admission else None)


@pytest.fixture
async def server(tmp_dir: Path, template_dir: Path) -> AsyncIterator[APIServer]:
    async with closing_server(new_server(tmp_dir / "data", template_dir)) as srv:
        yield srv


@pytest.fixture
async def client(server: APIServer) -> AsyncIterator[lightkube.AsyncClient]:
    async with in_process_client(server) as c:
        yield c


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fleet(clock: Clock) -> FakeRayFleet:
    return FakeRayFleet(clock=clock)


def cluster_body(name: str = "demo", **spec: Any) -> Obj:
    obj = minimal_cluster(**spec)
    obj["metadata"] = {"name": name, "namespace": NS}
    return obj


def job_body(name: str = "job", **spec: Any) -> Obj:
    obj = minimal_job(**spec)
    obj["metadata"] = {"name": name, "namespace": NS}
    return obj


async def eventually(
    check: Callable[[], Any | Awaitable[Any]], timeout: float = 10.0, interval: float = 0.02
) -> Any:
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


class World:
    """Plays the cluster's other components through the API (kubelet, Job controller)."""

    def __init__(self, client: lightkube.AsyncClient) -> None:
        self.client = client
        self._ip = 0

    async def create(self, res: kinds.Resource, body: Obj) -> Obj:
        return await rest.request(self.client, "POST", res.path(NS), body=body)

    async def get(self, res: kinds.Resource, name: str) -> Obj | None:
        return await kinds.get(self.client, res, NS, name)

    async def list(self, res: kinds.Resource, selector: str | None = None) -> list[Obj]:
        params = {"labelSelector": selector} if selector else None
        out = await rest.request(self.client, "GET", res.path(NS), params=params)
        return out["items"]  # type: ignore[no-any-return]

    async def patch(
        self, res: kinds.Resource, name: str, patch: Obj, sub: str | None = None
    ) -> Obj:
        return await rest.request(
            self.client,
            "PATCH",
            res.path(NS, name, sub),
            body=patch,
            content_type=kinds.MERGE_PATCH,
        )

    async def run_pods(self, *, ready: bool = True) -> int:
        """Every Pending pod -> Running (and Ready), with a pod IP. Returns how many."""
        n = 0
        for pod in await self.list(kinds.PODS):
            if (pod.get("status") or {}).get("phase") not in (None, "Pending"):
                continue
            if pod["metadata"].get("deletionTimestamp"):
                continue
            self._ip += 1
            names = [c["name"] for c in pod["spec"]["containers"]]
            status = {
                "phase": "Running",
                "podIP": f"10.244.0.{self._ip}",
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                "containerStatuses": [
                    {
                        "name": n_,
                        "ready": ready,
                        "restartCount": 0,
                        "image": "ray",
                        "imageID": "",
                        "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    }
                    for n_ in names
                ],
            }
            await self.patch(kinds.PODS, pod["metadata"]["name"], {"status": status}, "status")
            n += 1
        return n

    async def finish_job(self, name: str, *, failed: bool = False, at: float = START) -> None:
        """Play the Job controller: the submitter Job completes (or fails)."""
        kind = "Failed" if failed else "Complete"
        stamp = kinds.rfc3339(at)
        conds = [{"type": kind, "status": "True", "lastTransitionTime": stamp}]
        status: Obj = {"conditions": conds, "startTime": stamp}
        if not failed:
            status["completionTime"] = stamp
            status["succeeded"] = 1
        else:
            status["failed"] = 1
        await self.patch(kinds.JOBS, name, {"status": status}, "status")


class Harness:
    """The operator's caches and reconcilers without its controllers: one pass per call."""

    def __init__(self, client: lightkube.AsyncClient, **options: Any) -> None:
        self.client = client
        self.op = build_operator(client, options=OperatorOptions(health_port=None, **options))
        self.ctx = self.op.ctx
        self.world = World(client)

    async def start(self) -> None:
        self.op.manager.informers.start()
        assert await self.op.manager.informers.wait_for_sync(10)
        await self.op.discover()

    async def stop(self) -> None:
        await self.op.manager.informers.stop()
        await self.ctx.dashboards.close()
        await self.ctx.recorder.close()

    async def sync(self) -> None:
        """Wait until every running informer's cache equals a fresh list."""
        for inf in self.op.manager.informers:
            if not inf.running:
                continue
            params = dict(inf._params)

            async def same(inf: Any = inf, params: dict[str, str] = params) -> bool:
                out = await rest.request(self.client, "GET", inf._path, params=params)
                live = {
                    (o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in out["items"]
                }
                cached = {
                    (o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in inf.cache
                }
                return live == cached

            await eventually(same)

    async def cluster(self, name: str = "demo") -> Result:
        await self.sync()
        return await self.op.clusters(Request(NS, name))

    async def job(self, name: str = "job") -> Result:
        await self.sync()
        return await self.op.jobs(Request(NS, name))

    async def ready_cluster(self, name: str, passes: int = 8) -> Obj:
        """Reconcile the cluster and run its pods until its state is ready."""
        for _ in range(passes):
            try:
                await self.cluster(name)
            except Exception:
                pass
            await self.world.run_pods()
            await self.sync()
            live = self.ctx.caches.clusters.get(name, NS)
            if live and (live.get("status") or {}).get("state") == "ready":
                return copy.deepcopy(live)
        raise AssertionError(f"RayCluster {name} did not become ready")

    def job_status(self, name: str = "job") -> Obj:
        job = self.ctx.caches.jobs.get(name, NS)
        assert job is not None
        return dict(job.get("status") or {})

    async def live_status(self, name: str = "job") -> Obj:
        await self.sync()
        return self.job_status(name)


@pytest.fixture
async def harness(
    client: lightkube.AsyncClient, clock: Clock, fleet: FakeRayFleet
) -> AsyncIterator[Harness]:
    h = Harness(client, clock=clock, dashboard_transport=fleet.transport)
    await h.start()
    try:
        yield h
    finally:
        await h.stop()


@pytest.fixture
async def volcano_harness(
    client: lightkube.AsyncClient, clock: Clock, fleet: FakeRayFleet
) -> AsyncIterator[Harness]:
    h = Harness(client, clock=clock, dashboard_transport=fleet.transport, batch_scheduler="volcano")
    await h.start()
    try:
        yield h
    finally:
        await h.stop()
