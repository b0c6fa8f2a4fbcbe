"""The whole stack in one process: two RayJobs in a queue too small for both.

Unlike the reconciler tests next to it, nothing is played by hand except Ray itself:
an in-process API server with lahar's admission, the built-in Job controller (the
submitter Jobs), the Volcano controllers, the scheduler daemon, the operator with the
Volcano adapter, and simulated nodes that run the pods. Ray's dashboard is the
stand-in of :mod:`fakeray`, reached through the operator's ``dashboard_transport``
seam at the head pod's (simulated) IP; the test also plays the one thing a simulated
submitter container cannot do, ``ray job submit``: when a submitter pod is Running,
the job appears in its cluster's stand-in dashboard, which reports it RUNNING and then
SUCCEEDED.

The queue's capability fits one Ray cluster, not two: Volcano's enqueue keeps the
second gang Pending until the first RayJob finishes and its cluster goes
(``shutdownAfterJobFinishes``). The test samples the pods all along: a cluster is never
partly bound, and the two clusters never hold nodes at the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import lightkube

from lahar.apiserver.server import APIServer
from lahar.embedded import install_volcano_admission
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.factory import InformerFactory
from lahar.kuberay.operator import OperatorOptions, kinds, run_operator
from tests.kuberay.operator.conftest import new_server
from tests.kuberay.operator.fakeray import FakeRayFleet

Obj = dict[str, Any]
NS = "default"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
IMAGE = "rayproject/ray:2.52.0"


def _container(name: str, cpu: str, memory: str, **extra: Any) -> Obj:
    return {
        "name": name,
        "image": IMAGE,
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
        **extra,
    }


def rayjob(name: str, queue: str) -> Obj:
    """Head 1 CPU + 2 workers of 1 CPU (+ a 500m submitter): 3.5 CPU as one gang."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"ray.io/scheduler-name": "volcano", "volcano.sh/queue-name": queue},
        },
        "spec": {
            "entrypoint": f"python -c 'print(\"{name}\")'",
            "shutdownAfterJobFinishes": True,
            "submitterPodTemplate": {
                "metadata": {"annotations": {"lahar.dev/sim-duration": "2s"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        _container(
                            "ray-job-submitter",
                            "500m",
                            "200Mi",
                            command=["ray", "job", "submit", "--", "python", "job.py"],
                        )
                    ],
                },
            },
            "rayClusterSpec": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [_container("ray-head", "1", "1Gi")]}},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "w",
                        "replicas": 2,
                        "minReplicas": 2,
                        "maxReplicas": 2,
                        "rayStartParams": {},
                        "template": {
                            "spec": {"containers": [_container("ray-worker", "1", "1Gi")]}
                        },
                    }
                ],
            },
        },
    }


def _labels(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


class Observer:
    """Samples pods and RayJobs; plays ``ray job submit`` for Running submitter pods."""

    def __init__(self, client: lightkube.AsyncClient, fleet: FakeRayFleet) -> None:
        self.client = client
        self.fleet = fleet
        self.partly_bound: list[tuple[str, int, int]] = []
        self.overlaps = 0
        self.bound_clusters: list[str] = []  # in the order they first got nodes
        self.played: set[str] = set()

    async def sample(self) -> list[Obj]:
        pods = (await rest.request(self.client, "GET", kinds.PODS.path(NS)))["items"]
        jobs = (await rest.request(self.client, "GET", kinds.RAYJOBS.path(NS)))["items"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        by_cluster: dict[str, list[Obj]] = {}
        for p in live:
            cluster = _labels(p).get("ray.io/cluster")
            if cluster:
                by_cluster.setdefault(cluster, []).append(p)
        holding = []
        for cluster, members in by_cluster.items():
            bound = sum(1 for p in members if p["spec"].get("nodeName"))
            if bound and bound < 3:
                self.partly_bound.append((cluster, bound, len(members)))
            if bound:
                holding.append(cluster)
                if cluster not in self.bound_clusters:
                    self.bound_clusters.append(cluster)
        if len(holding) > 1:
            self.overlaps += 1
        for job in jobs:
            self._play_submitter(job, live)
        return jobs

    def _play_submitter(self, job: Obj, pods: list[Obj]) -> None:
        name, status = job["metadata"]["name"], job.get("status") or {}
        if name in self.played or not status.get("jobId"):
            return
        submitter = [
            p
            for p in pods
            if name in (_labels(p).get("job-name"), _labels(p).get("batch.kubernetes.io/job-name"))
            and (p.get("status") or {}).get("phase") == "Running"
        ]
        heads = [
            p
            for p in pods
            if _labels(p).get("ray.io/cluster") == status.get("rayClusterName")
            and _labels(p).get("ray.io/node-type") == "head"
            and (p.get("status") or {}).get("podIP")
        ]
        if submitter and heads:
            dash = self.fleet.at(heads[0]["status"]["podIP"])
            body = b'{"entrypoint": "%s", "submission_id": "%s"}' % (
                job["spec"]["entrypoint"].replace('"', '\\"').encode(),
                status["jobId"].encode(),
            )
            resp = dash.handle("POST", "/api/jobs/", body)
            assert resp.status_code == 200, resp.text
            self.played.add(name)


async def _run_stack(server: APIServer, fleet: FakeRayFleet) -> tuple[Observer, list[Obj]]:
    from lahar.controllers import run_builtin_controllers
    from lahar.node.sim import SimOptions, run_sim_nodes
    from lahar.scheduler.daemon import SchedulerOptions, run_scheduler
    from lahar.volcano.controllers.manager import run_volcano_controllers

    client = kclient.in_process(server.app, token=server.creds.token, field_manager="test")
    informers = InformerFactory(client)
    operator = OperatorOptions(
        batch_scheduler="volcano",
        health_port=None,
        dashboard_transport=fleet.transport,
        job_requeue=0.3,
    )
    sched = SchedulerOptions(schedule_period=0.2, health_port=None, queue_counts=False)
    sim = SimOptions(count=2, cpu="4", memory="16Gi", ready_delay=0.1, stop_delay=0.05)
    tasks = [
        asyncio.create_task(run_builtin_controllers(client, informers=informers)),
        asyncio.create_task(run_volcano_controllers(client, informers=informers)),
        asyncio.create_task(run_scheduler(client, informers=informers, options=sched)),
        asyncio.create_task(run_operator(client, informers=informers, options=operator)),
        asyncio.create_task(
            run_sim_nodes(client, options=sim, informers=informers, logs=server.state.logs)
        ),
    ]
    observer = Observer(client, fleet)
    try:
        queue = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "small"},
            "spec": {"weight": 1, "capability": {"cpu": "4", "memory": "8Gi"}},
        }
        await rest.request(client, "POST", QUEUES, body=queue)
        deadline = time.monotonic() + 20
        while True:  # the queue controller opens it
            q = await rest.request(client, "GET", f"{QUEUES}/small")
            if (q.get("status") or {}).get("state") == "Open":
                break
            assert time.monotonic() < deadline, "queue small never opened"
            await asyncio.sleep(0.05)
        for name in ("first", "second"):
            await rest.request(client, "POST", kinds.RAYJOBS.path(NS), body=rayjob(name, "small"))
        deadline = time.monotonic() + 50
        while True:
            for task in tasks:
                if task.done():
                    task.result()  # a component died: show why
            jobs = await observer.sample()
            states = [(j.get("status") or {}).get("jobDeploymentStatus") for j in jobs]
            if len(jobs) == 2 and all(s in ("Complete", "Failed") for s in states):
                return observer, jobs
            assert time.monotonic() < deadline, f"RayJobs not finished: {states}"
            await asyncio.sleep(0.1)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await informers.stop()
        await client.close()


async def test_two_rayjobs_in_a_small_queue_run_one_after_the_other(
    tmp_dir: Path, template_dir: Path
) -> None:
    server = new_server(tmp_dir / "data", template_dir)
    install_volcano_admission(server.state)
    fleet = FakeRayFleet(script=["RUNNING", "SUCCEEDED"])
    try:
        observer, jobs = await _run_stack(server, fleet)
    finally:
        await server.close()
    for job in jobs:
        status = job["status"]
        assert status["jobDeploymentStatus"] == "Complete", status
        assert status["jobStatus"] == "SUCCEEDED", status
    assert observer.partly_bound == [], observer.partly_bound
    assert observer.overlaps == 0, "both Ray clusters held nodes at the same time"
    assert len(observer.bound_clusters) == 2, observer.bound_clusters
    assert fleet.submissions == 2
