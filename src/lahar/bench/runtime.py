"""``lahar bench runtime``: how fast the controller runtime reconciles, and what its
informer cache costs in memory.

**Reconcile rate.** A controller (a real :class:`~lahar.kube.manager.Manager` with one
controller, the same code every lahar daemon runs) watches ``objects`` custom
resources of a CRD with a status subresource and, per object, writes one status
update (a conditional ``PUT .../status`` carrying the resourceVersion it read). It
is run at each concurrency (``max_concurrent_reconciles``) in turn on the same
objects; the rate is objects reconciled (status written) per second, from the first
reconcile to the last write, so the initial list is timed separately
(``list_s``). Status writes do not change ``metadata.generation``, so with the usual
``generation_changed`` predicate they cause no echo reconciles.

**Where the server runs.** By default in the benchmark's own process and event loop,
reached through the in-process transport: that is how ``lahar up`` (lahar's default,
embedded deployment) runs the built-in controllers, and it is the stingy measure of
CPU, since server and controller take turns on one core and every figure includes the
server's share of each write (admission, validation, SQLite commit, watch fan-out).
What it leaves out is TLS and HTTP. ``--subprocess`` measures that path instead: a
separate ``lahar apiserver`` process over HTTPS through a kubeconfig, as in the
split-process and real-cluster deployments (the server then has a core of its own,
but each write pays for TLS and HTTP on both sides; on this 2-core machine it comes
out at roughly half the in-process rate). Nothing is faked or batched in either.

**Informer memory.** 10,000 pods as the server returns them (one real pod, created on
the server with every default, cloned with distinct names, uids, IPs, nodes and
labels) are decoded from JSON and stored through the informer's default transform
into its :class:`~lahar.kube.cache.Cache` with the standard indexes, under
``tracemalloc``; the figure is the memory the cache then holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import shutil
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import lightkube
import msgspec

from lahar.bench.common import ServerProcess, machine
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.cache import Cache, compact
from lahar.kube.controller import generation_changed
from lahar.kube.manager import Manager
from lahar.kube.reconcile import Request, Result
from lahar.kube.resource import Resource

Obj = dict[str, Any]
GROUP = "bench.lahar.dev"
ITEMS = Resource(GROUP, "v1", "benchitems", "BenchItem")
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition"
)
PODS = Resource("", "v1", "pods", "Pod")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NS = "bench-runtime"

CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"benchitems.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "benchitems", "singular": "benchitem", "kind": "BenchItem"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"size": {"type": "integer"}},
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "round": {"type": "integer"},
                                    "observedGeneration": {"type": "integer"},
                                    "message": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


async def _install(client: lightkube.AsyncClient) -> None:
    with contextlib.suppress(rest.ApiError):
        await rest.request(client, "POST", NAMESPACES.path(), body={"metadata": {"name": NS}})
    await rest.request(client, "POST", CRDS.path(), body=CRD)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(rest.ApiError):
            await rest.request(client, "GET", ITEMS.path(NS), params={"limit": "1"})
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("the benchmark CRD was not served in time")


async def _create_items(client: lightkube.AsyncClient, n: int, writers: int = 32) -> float:
    started = time.perf_counter()
    path = ITEMS.path(NS)

    async def writer(w: int) -> None:
        for i in range(w, n, writers):
            body = {
                "apiVersion": f"{GROUP}/v1",
                "kind": "BenchItem",
                "metadata": {"name": f"item-{i:05d}", "labels": {"bench": "runtime"}},
                "spec": {"size": i},
            }
            await rest.request(client, "POST", path, body=body)

    await asyncio.gather(*(writer(w) for w in range(writers)))
    return time.perf_counter() - started


async def _round(client: lightkube.AsyncClient, n: int, concurrency: int, round_no: int) -> Obj:
    """Run a fresh manager until every object carries this round's status."""
    mgr = Manager(client, name=f"bench-{concurrency}", health_port=None)
    cache = mgr.cache(ITEMS, namespace=NS)
    written = 0
    calls = 0
    first: float | None = None
    last = 0.0
    done = asyncio.Event()

    async def reconcile(req: Request) -> Result | None:
        nonlocal written, calls, first, last
        calls += 1
        if first is None:
            first = time.perf_counter()
        obj = cache.get(req.name, req.namespace)
        if obj is None or (obj.get("status") or {}).get("round") == round_no:
            return None
        status = {
            "round": round_no,
            "observedGeneration": obj["metadata"].get("generation", 1),
            "message": f"reconciled by worker pool of {concurrency}",
        }
        body = {**obj, "status": status}
        await rest.request(client, "PUT", ITEMS.path(NS, req.name, "status"), body=body)
        written += 1
        last = time.perf_counter()
        if written == n:
            done.set()
        return None

    mgr.controller("bench", reconcile, max_concurrent_reconciles=concurrency).for_(
        ITEMS, namespace=NS, update_predicate=generation_changed
    )
    listed = time.perf_counter()
    task = asyncio.create_task(mgr.run())
    try:
        await mgr.informers.wait_for_sync(120)
        list_s = time.perf_counter() - listed
        await asyncio.wait_for(done.wait(), 600)
    finally:
        mgr.stop()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, 30)
    assert first is not None
    elapsed = last - first
    return {
        "reconciles_per_s": round(n / elapsed, 1),
        "seconds": round(elapsed, 3),
        "list_s": round(list_s, 3),
        "status_writes": written,
        "reconcile_calls": calls,
    }


async def _sample_pod(client: lightkube.AsyncClient) -> Obj:
    """A pod as the server returns it, with every default and admission field."""
    body = {
        "metadata": {
            "name": "sample",
            "namespace": NS,
            "labels": {
                "app.kubernetes.io/name": "ray",
                "ray.io/cluster": "raycluster-sample",
                "ray.io/node-type": "worker",
                "ray.io/group": "small-group",
            },
            "annotations": {"ray.io/ft-enabled": "false"},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.41.0",
                    "command": ["/bin/bash", "-lc", "--"],
                    "args": ["ulimit -n 65536; ray start --address=raycluster-sample-head:6379"],
                    "env": [
                        {"name": "RAY_CLUSTER_NAME", "value": "raycluster-sample"},
                        {"name": "RAY_USAGE_STATS_ENABLED", "value": "0"},
                    ],
                    "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "1", "memory": "1Gi"},
                    },
                    "volumeMounts": [{"mountPath": "/dev/shm", "name": "shared-mem"}],
                }
            ],
            "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory"}}],
        },
    }
    await rest.request(client, "POST", PODS.path(NS), body=body)
    # (the owner reference is added to the copy only: the server's garbage collector
    # would delete a pod whose owner does not exist)
    status = {
        "status": {
            "phase": "Running",
            "hostIP": "10.0.0.1",
            "podIP": "10.1.0.1",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": "ray-worker",
                    "ready": True,
                    "restartCount": 0,
                    "image": "rayproject/ray:2.41.0",
                    "imageID": "docker.io/rayproject/ray@sha256:" + "ab" * 32,
                    "containerID": "containerd://" + "cd" * 32,
                    "started": True,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:01Z"}},
                }
            ],
        }
    }
    pod = await rest.request(
        client,
        "PATCH",
        PODS.path(NS, "sample", "status"),
        body=status,
        content_type="application/merge-patch+json",
    )
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": "raycluster-sample",
            "uid": str(uuid.uuid4()),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return pod


def _informer_mb(sample: Obj, n: int = 10000, nodes: int = 100) -> float:
    """MiB held by a cache of ``n`` pods like ``sample``, as the informer stores them."""
    raws: list[bytes] = []
    for i in range(n):
        pod = copy.deepcopy(sample)
        md = pod["metadata"]
        md["name"] = f"raycluster-sample-worker-{i:05d}"
        md["uid"] = str(uuid.uuid4())
        md["resourceVersion"] = str(100000 + i)
        md["labels"]["ray.io/cluster"] = f"raycluster-{i // 50}"
        pod["spec"]["nodeName"] = f"node-{i % nodes:04d}"
        pod["status"]["podIP"] = f"10.{1 + i // 65536}.{(i // 256) % 256}.{i % 256}"
        pod["status"]["containerStatuses"][0]["containerID"] = (
            "containerd://" + uuid.uuid4().hex * 2
        )
        raws.append(msgspec.json.encode(pod))
    cache = Cache()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for raw in raws:
            obj = compact(msgspec.json.decode(raw))
            obj.setdefault("apiVersion", "v1")
            obj.setdefault("kind", "Pod")
            cache.upsert(obj)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(cache) == n
    return (after - before) / 2**20 * (10000 / n)


async def _measure(client: lightkube.AsyncClient, objects: int, levels: list[int]) -> Obj:
    await _install(client)
    sample = await _sample_pod(client)
    create_s = await _create_items(client, objects)
    by_level: dict[str, Obj] = {}
    for round_no, level in enumerate(levels, start=1):
        by_level[str(level)] = await _round(client, objects, level, round_no)
    return {"create_s": create_s, "rounds": by_level, "sample_pod": sample}


def run(
    objects: int = 10000,
    concurrency: tuple[int, ...] = (1, 4, 16),
    in_process: bool = True,
    informer_pods: int = 10000,
) -> Obj:
    levels = list(concurrency)
    if in_process:
        from lahar.apiserver.server import APIServer

        data = Path(tempfile.mkdtemp(prefix="lahar-bench-runtime-"))

        async def inproc() -> Obj:
            server = APIServer(data / "data", port=0)
            server.gc.start()  # as `lahar up` runs it: its share of the CPU counts too
            client = kclient.in_process(server.app, token=server.creds.token)
            try:
                return await _measure(client, objects, levels)
            finally:
                await client.close()
                await server.close()

        try:
            measured = asyncio.run(inproc())
        finally:
            shutil.rmtree(data, ignore_errors=True)
        transport = "in-process ASGI transport, server in the benchmark's event loop"
    else:
        with ServerProcess() as server:

            async def remote() -> Obj:
                client = kclient.from_kubeconfig(server.kubeconfig, field_manager="bench")
                try:
                    return await _measure(client, objects, levels)
                finally:
                    await client.close()

            measured = asyncio.run(remote())
        transport = "https to a separate `lahar apiserver` process"
    rounds = measured["rounds"]
    rates = {k: v["reconciles_per_s"] for k, v in rounds.items()}
    best = max(rates, key=lambda k: rates[k])
    return {
        "reconciles_per_s": rates[best],
        "reconciles_per_s_by_concurrency": rates,
        "informer_mb_per_10k_pods": round(_informer_mb(measured["sample_pod"], informer_pods), 2),
        "best_concurrency": int(best),
        "rounds": rounds,
        "targets": {"reconciles_per_s": ">= 500"},
        "parameters": {
            "objects": objects,
            "concurrency": levels,
            "status_writes_per_object": 1,
            "kind": f"benchitems.{GROUP} (CRD with a status subresource)",
            "write": "PUT .../status with the resourceVersion read (conditional)",
            "server": transport,
            "create_s": round(measured["create_s"], 2),
            "informer_pods": informer_pods,
        },
        "machine": machine(),
    }
