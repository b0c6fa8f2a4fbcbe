"""Manager: probes and Prometheus metrics over HTTP, controllers only on the leader,
shared caches between managers, clean stop, and exit on a lost Lease."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx2
import lightkube
import pytest

from lahar.apiserver.server import APIServer
from lahar.kube import client as kclient
from lahar.kube.factory import InformerFactory
from lahar.kube.leaderelection import LeaderElectionConfig, LeadershipLost
from lahar.kube.manager import Manager
from lahar.kube.reconcile import Request, Result
from tests.kube.conftest import CONFIGMAPS, create_cm, eventually
from tests.kube.test_leaderelection import Gate


@contextlib.asynccontextmanager
async def running(mgr: Manager) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(mgr.run())
    try:
        await mgr.wait_started(10)
        yield task
    finally:
        mgr.stop()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, 10)


async def get(mgr: Manager, path: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.get(f"http://127.0.0.1:{mgr.port}{path}")


def lease_config(identity: str) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        name="mgr",
        namespace="default",
        identity=identity,
        lease_duration=1.0,
        renew_deadline=0.6,
        retry_period=0.1,
    )


async def test_probes_and_metrics(client: lightkube.AsyncClient) -> None:
    seen: list[Request] = []

    async def reconcile(req: Request) -> Result:
        seen.append(req)
        return Result()

    mgr = Manager(client, name="test")
    mgr.controller("cms", reconcile, max_concurrent_reconciles=2).for_(CONFIGMAPS)
    gate = asyncio.Event()
    mgr.add_ready_check("gate", gate.is_set)
    await create_cm(client, "x")
    async with running(mgr):
        assert mgr.port
        r = await get(mgr, "/healthz")
        assert (r.status_code, r.text) == (200, "ok")
        await eventually(lambda: bool(seen))
        r = await get(mgr, "/readyz")
        assert r.status_code == 500 and "[-]gate failed" in r.text and "[+]informers ok" in r.text
        gate.set()
        r = await get(mgr, "/readyz")
        assert (r.status_code, r.text) == (200, "ok")
        r = await get(mgr, "/readyz?verbose")
        assert "[+]informers ok" in r.text
        assert (await get(mgr, "/nope")).status_code == 404
        text = (await get(mgr, "/metrics")).text
        for line in (
            'controller_runtime_reconcile_total{controller="cms",result="success"} 1.0',
            'controller_runtime_reconcile_total{controller="cms",result="error"} 0.0',
            'controller_runtime_reconcile_errors_total{controller="cms"} 0.0',
            'controller_runtime_max_concurrent_reconciles{controller="cms"} 2.0',
            'workqueue_adds_total{controller="cms",name="cms"} 1.0',
            'workqueue_depth{controller="cms",name="cms"} 0.0',
            'workqueue_retries_total{controller="cms",name="cms"} 0.0',
        ):
            assert line in text, line
        for family in (
            "controller_runtime_reconcile_time_seconds_bucket",
            "workqueue_queue_duration_seconds_bucket",
            "workqueue_work_duration_seconds_bucket",
            "workqueue_unfinished_work_seconds",
            "controller_runtime_active_workers",
            "workqueue_longest_running_processor_seconds",
        ):
            assert family in text, family
        port = mgr.port
    with pytest.raises(httpx2.ConnectError):  # the endpoint is gone after stop
        async with httpx2.AsyncClient() as http:
            await http.get(f"http://127.0.0.1:{port}/healthz")


async def test_only_the_leader_reconciles_and_caches_are_shared(
    client: lightkube.AsyncClient,
) -> None:
    shared = InformerFactory(client)
    seen: dict[str, list[Request]] = {"a": [], "b": []}

    def manager(name: str) -> Manager:
        async def reconcile(req: Request) -> Result:
            seen[name].append(req)
            return Result()

        mgr = Manager(client, name=name, informers=shared, leader_election=lease_config(name))
        mgr.controller("cms", reconcile).for_(CONFIGMAPS)
        return mgr

    a, b = manager("a"), manager("b")
    await create_cm(client, "x")
    try:
        async with running(a):
            await eventually(lambda: a.is_leader and bool(seen["a"]))
            async with running(b):
                await asyncio.sleep(0.5)
                assert not b.is_leader and not seen["b"]
                assert len(shared) == 1  # one informer for both managers
                text = (await get(b, "/metrics")).text
                assert 'leader_election_master_status{name="mgr"} 0.0' in text
                a.stop()  # clean stop: releases the lease
                await eventually(lambda: b.is_leader and bool(seen["b"]), timeout=5)
                text = (await get(b, "/metrics")).text
                assert 'leader_election_master_status{name="mgr"} 1.0' in text
    finally:
        await shared.stop()


async def test_lost_lease_stops_the_manager(server: APIServer) -> None:
    gate = Gate(server.app)
    c = kclient.in_process(gate, token=server.creds.token)
    stopped = asyncio.Event()

    async def leader_work() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    mgr = Manager(c, name="a", leader_election=lease_config("a"), health_port=None)
    mgr.add(leader_work)
    task = asyncio.create_task(mgr.run())
    try:
        await eventually(lambda: mgr.is_leader)
        gate.open.clear()
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(task, 5)
        assert stopped.is_set() and not mgr.is_leader
    finally:
        gate.open.set()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await c.close()
