"""Restart safety and leader failover with the whole operator running (controllers,
workqueues, informers), not single passes.

The operator is killed (its task cancelled) at random moments while a RayJob is
on its way and restarted with fresh caches and no memory; the test plays the
kubelet, the Job controller and the submitter. Whatever the kill points, exactly
one RayCluster and one submitter Job are created, Ray sees one submission, and
the job still completes.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import lightkube
import pytest

from lahar.kube.informer import Informer
from lahar.kuberay.operator import OperatorOptions, build_operator, kinds
from lahar.kuberay.operator.run import Operator
from tests.kuberay.operator.conftest import NS, World, cluster_body, eventually, job_body
from tests.kuberay.operator.fakeray import FakeRayFleet

Obj = dict[str, Any]
FAST = {"job_requeue": 0.05, "cluster_status_requeue": 0.05, "cluster_requeue": 0.5}


class Adds:
    """Counts the distinct objects of a kind that ever existed (a watch of its own)."""

    def __init__(self, client: lightkube.AsyncClient, res: kinds.Resource) -> None:
        self.informer = Informer(client, res, namespace=NS)
        self.uids: set[str] = set()
        self.informer.add_handler(on_add=lambda o: self.uids.add(o["metadata"]["uid"]))


@contextlib.asynccontextmanager
async def watching(
    client: lightkube.AsyncClient, *res: kinds.Resource
) -> AsyncIterator[list[Adds]]:
    counters = [Adds(client, r) for r in res]
    for c in counters:
        c.informer.start()
        assert await c.informer.wait_for_sync(10)
    try:
        yield counters
    finally:
        for c in counters:
            await c.informer.stop()


async def play_world(world: World, fleet: FakeRayFleet) -> None:
    """Kubelet + Job controller + the K8sJobMode submitter, forever."""
    while True:
        with contextlib.suppress(Exception):
            await world.run_pods()
            for job in await world.list(kinds.JOBS):
                if (job.get("status") or {}).get("conditions"):
                    continue
                heads = [p for p in await world.list(kinds.PODS, "ray.io/node-type=head")
                         if (p.get("status") or {}).get("podIP")]  # fmt: skip
                if not heads:
                    continue
                dash = fleet.at(heads[0]["status"]["podIP"])
                env = {
                    e["name"]: e.get("value")
                    for e in job["spec"]["template"]["spec"]["containers"][0]["env"]
                }
                sid = env["RAY_JOB_SUBMISSION_ID"]
                if sid not in dash.jobs:  # the script: status first, then submit
                    dash.handle(
                        "POST",
                        "/api/jobs/",
                        f'{{"entrypoint": "x", "submission_id": "{sid}"}}'.encode(),
                    )
                elif dash.jobs[sid].status in ("SUCCEEDED", "FAILED", "STOPPED"):
                    await world.finish_job(job["metadata"]["name"], at=time.time())
        await asyncio.sleep(0.02)


async def run_for(op: Operator, seconds: float) -> None:
    task = asyncio.create_task(op.run())
    await asyncio.sleep(seconds)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


@pytest.mark.parametrize(
    ("mode", "seed"), [("HTTPMode", 1), ("HTTPMode", 2), ("K8sJobMode", 3), ("K8sJobMode", 4)]
)
async def test_killed_operator_never_duplicates(
    client: lightkube.AsyncClient, mode: str, seed: int
) -> None:
    rng = random.Random(seed)
    fleet = FakeRayFleet(script=["RUNNING", "RUNNING", "SUCCEEDED"])
    world = World(client)
    await world.create(kinds.RAYJOBS, job_body(submissionMode=mode))
    options = OperatorOptions(health_port=None, dashboard_transport=fleet.transport, **FAST)
    player = asyncio.create_task(play_world(world, fleet))
    try:
        async with watching(client, kinds.RAYCLUSTERS, kinds.JOBS) as (clusters, jobs):
            deadline = time.monotonic() + 90
            restarts = extra = killed_on_the_way = 0
            while time.monotonic() < deadline and extra < 2:
                # The first kills come fast, so that even on a loaded machine the job is
                # interrupted more than once on its way; later ones spread out.
                span = (0.002, 0.01) if restarts < 3 else (0.005, 0.06)
                await run_for(
                    build_operator(client, options=options),
                    rng.uniform(*span) * (1 + restarts / 10),
                )
                restarts += 1
                status = ((await world.get(kinds.RAYJOBS, "job")) or {}).get("status") or {}
                if status.get("jobDeploymentStatus") == "Complete":
                    extra += 1  # keep killing and restarting after the end, too
                else:
                    killed_on_the_way = restarts
            assert status.get("jobDeploymentStatus") == "Complete", status
            assert status["jobStatus"] == "SUCCEEDED"
            assert len(clusters.uids) == 1
            assert len(jobs.uids) == (1 if mode == "K8sJobMode" else 0)
            assert fleet.submissions == 1
            assert killed_on_the_way >= 2, killed_on_the_way
    finally:
        player.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await player


async def test_leader_failover(client: lightkube.AsyncClient) -> None:
    election = {
        "leader_elect": True,
        "lease_duration": 2.0,
        "renew_deadline": 1.5,
        "retry_period": 0.3,
    }
    a = build_operator(client, options=OperatorOptions(health_port=None, **FAST, **election))
    b = build_operator(client, options=OperatorOptions(health_port=None, **FAST, **election))
    world = World(client)
    task_a = asyncio.create_task(a.run())
    task_b: asyncio.Task[None] | None = None
    try:
        await eventually(lambda: a.manager.is_leader)
        task_b = asyncio.create_task(b.run())
        await b.manager.wait_started(10)
        await world.create(kinds.RAYCLUSTERS, cluster_body("first"))
        await eventually(lambda: _pods(world, "first"))
        await asyncio.sleep(0.5)
        assert a.clusters.status_writes > 0
        assert b.clusters.status_writes == 0 and not b.manager.is_leader
        task_a.cancel()  # a clean stop releases the Lease
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task_a
        await eventually(lambda: b.manager.is_leader, timeout=10)
        await world.create(kinds.RAYCLUSTERS, cluster_body("second"))
        await eventually(lambda: _pods(world, "second"))
        assert b.clusters.status_writes > 0
        lease = await kinds.get(client, kinds.Resource("coordination.k8s.io", "v1", "leases", "Lease"),
                                "kube-system", "kuberay-operator")  # fmt: skip
        assert lease is not None and lease["spec"]["holderIdentity"]
    finally:
        for task in (task_a, task_b):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def _pods(world: World, cluster: str) -> bool:
    return len(await world.list(kinds.PODS, f"ray.io/cluster={cluster}")) == 2


async def test_rayjob_polling_does_not_starve_clusters(client: lightkube.AsyncClient) -> None:
    """Many Running RayJobs whose dashboard hangs: RayClusters still get reconciled."""
    import httpx2

    async def hang(request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(30)
        return httpx2.Response(500)

    options = OperatorOptions(
        health_port=None, dashboard_transport=httpx2.MockTransport(hang), reconcile_concurrency=2,
        dashboard_max_concurrency=2, dashboard_timeout=0.5, **FAST,
    )  # fmt: skip
    op = build_operator(client, options=options)
    world = World(client)
    task = asyncio.create_task(op.run())
    player = asyncio.create_task(play_world(world, FakeRayFleet()))
    try:
        await op.manager.wait_started(10)
        for i in range(6):
            await world.create(kinds.RAYJOBS, job_body(f"j{i}", submissionMode="HTTPMode"))

        async def all_running() -> bool:
            jobs = await world.list(kinds.RAYJOBS)
            states = [(j.get("status") or {}).get("jobDeploymentStatus") for j in jobs]
            return states.count("Running") == 6

        await eventually(all_running, timeout=20)
        await asyncio.sleep(0.3)  # every RayJob worker is now stuck on a dashboard call
        assert op.ctx.metrics.dashboard_calls.labels("get_job_info", "ok")._value.get() == 0
        await world.create(kinds.RAYCLUSTERS, cluster_body("standalone"))
        await eventually(lambda: _pods(world, "standalone"), timeout=5)
    finally:
        for t in (task, player):
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
