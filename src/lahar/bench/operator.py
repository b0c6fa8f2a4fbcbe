"""``lahar bench operator``: N RayClusters to Running pods, through the whole stack.

What it takes, end to end, to go from N RayCluster objects (1 head + 3 workers each,
small requests) to every one of their pods Running: the Ray operator (with the
Volcano adapter, so each cluster gets a PodGroup) creating Services, PodGroups and
pods, the Volcano controllers and the scheduler gang-scheduling them, and simulated
nodes starting them. The API server runs in a child process reached over HTTPS (TLS
and a token, as in a split-process deployment; see ``common.EmbeddedStack``); every
other component shares this process's event loop, as in ``lahar up``.

Figures: ``seconds`` (first RayCluster create to the last pod seen Running through
the pod informer), ``pods_per_s`` (pods / seconds) and ``reconciles_per_s`` (the
operator's ``controller_runtime_reconcile_total`` over the same time, both
controllers), plus when the last pod was created and bound, and the API server's
busiest request kinds.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from typing import Any

from lahar.bench.common import embedded_stack, machine
from lahar.bench.e2e import _wait_queue_open, request_counts

NAMESPACE = "default"
RAYCLUSTER_PATH = "/apis/ray.io/v1/namespaces/{ns}/rayclusters"
IMAGE = "rayproject/ray:2.52.0"


def raycluster(name: str, workers: int) -> dict[str, Any]:
    def container(kind: str) -> dict[str, Any]:
        return {
            "name": f"ray-{kind}",
            "image": IMAGE,
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        }

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container("head")]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "w",
                    "replicas": workers,
                    "minReplicas": workers,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container("worker")]}},
                }
            ],
        },
    }


def _reconciles(op: Any) -> float:
    total = 0.0
    for metric in op.manager.metrics.reconcile_total.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                total += sample.value
    return total


async def _measure(
    clusters: int, workers: int, nodes: int, concurrency: int, timeout: float
) -> dict[str, Any]:
    from lahar.kube import rest
    from lahar.kuberay.operator import OperatorOptions, build_operator
    from lahar.node.registration import PODS
    from lahar.scheduler.daemon import SchedulerOptions, run_scheduler
    from lahar.volcano.controllers.manager import run_volcano_controllers

    stack = await embedded_stack("lahar-bench-operator-", nodes)
    client = stack.client
    informers, fleet = stack.informers, stack.fleet
    expected = clusters * (1 + workers)
    created: dict[str, float] = {}
    bound: dict[str, float] = {}
    running: dict[str, float] = {}

    def seen(obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        if "ray.io/cluster" not in (md.get("labels") or {}):
            return
        name, now = md["name"], time.perf_counter()
        created.setdefault(name, now)
        if (obj.get("spec") or {}).get("nodeName"):
            bound.setdefault(name, now)
        if (obj.get("status") or {}).get("phase") == "Running":
            running.setdefault(name, now)

    informers.informer(PODS).add_handler(on_add=seen, on_update=lambda _o, new: seen(new))
    op = build_operator(
        client,
        informers=informers,
        options=OperatorOptions(batch_scheduler="volcano", health_port=None),
    )
    tasks: list[asyncio.Task[Any]] = []
    try:
        await fleet.start()
        await fleet.wait_for_sync(60)
        tasks.append(asyncio.create_task(run_volcano_controllers(client, informers=informers)))
        sched = SchedulerOptions(schedule_period=0.2, health_port=None, queue_counts=False)
        tasks.append(asyncio.create_task(run_scheduler(client, informers=informers, options=sched)))
        tasks.append(asyncio.create_task(op.run()))
        await _wait_queue_open(client, "default")
        await asyncio.sleep(0.5)  # the operator's informers sync
        reconciles0 = _reconciles(op)
        sem = asyncio.Semaphore(concurrency)

        async def create(i: int) -> None:
            async with sem:
                await rest.request(
                    client,
                    "POST",
                    RAYCLUSTER_PATH.format(ns=NAMESPACE),
                    body=raycluster(f"rc-{i:05d}", workers),
                )

        start = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(clusters)))
        applied = time.perf_counter() - start
        deadline = start + timeout
        while len(running) < expected and time.perf_counter() < deadline:
            for task in tasks:
                if task.done():
                    task.result()  # a component died: say why
            await asyncio.sleep(0.05)
        end = max(running.values()) if running else time.perf_counter()
        seconds = end - start
        reconciles = _reconciles(op) - reconciles0
        return {
            "seconds": round(seconds, 3),
            "pods_per_s": round(len(running) / seconds, 1) if seconds > 0 else 0.0,
            "reconciles_per_s": round(reconciles / seconds, 1) if seconds > 0 else 0.0,
            "pods_running": len(running),
            "pods_expected": expected,
            "timed_out": len(running) < expected,
            "reconciles": int(reconciles),
            "apply_seconds": round(applied, 3),
            "last_pod_created_s": round(max(created.values()) - start, 3) if created else None,
            "last_pod_bound_s": round(max(bound.values()) - start, 3) if bound else None,
            "api_requests": request_counts(await stack.metrics_text()),
        }
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        fleet.options.keep_nodes = True  # the whole store goes with the temp dir
        with contextlib.suppress(Exception):
            await fleet.close()
        with contextlib.suppress(Exception):
            await informers.stop()
        await stack.close()


def run(
    *,
    clusters: int = 1000,
    workers: int = 3,
    nodes: int | None = None,
    concurrency: int = 32,
    timeout: float = 600.0,
) -> dict[str, Any]:
    """Run the benchmark; one JSON-ready dict (figures, parameters, machine)."""
    pods = clusters * (1 + workers)
    nodes = nodes or max(4, math.ceil(pods / 50))
    figures = asyncio.run(_measure(clusters, workers, nodes, concurrency, timeout))
    return {
        **figures,
        "parameters": {
            "clusters": clusters,
            "workers_per_cluster": workers,
            "pods": pods,
            "nodes": nodes,
            "create_concurrency": concurrency,
            "pod_requests": "100m cpu / 256Mi",
            "node_shape": "32 cpu / 128Gi / 110 pods (simulated)",
            "setup": "two processes: the API server (child, HTTPS on loopback with TLS and a "
            "token); operator (volcano) + Volcano controllers + scheduler + simulated nodes "
            "(one loop)",
        },
        "machine": machine(),
    }
