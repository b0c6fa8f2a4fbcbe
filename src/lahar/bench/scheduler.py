"""``lahar bench scheduler``: placements per second of one scheduling session.

Builds a synthetic but realistically shaped cluster as Kubernetes dicts (the objects
``lahar schedule`` reads from YAML): N nodes of 32 CPU / 128 Gi / 110 pods spread over
zones and instance types, a few tainted (``NoSchedule`` for a dedicated pool,
``PreferNoSchedule`` for spot nodes), one daemon pod of another scheduler per node, some
gangs already running, and M pending pods in PodGroups of mixed gang sizes (1 to 32,
``minMember`` = size, ``minResources`` set as Volcano's PodGroup controller sets it)
spread over queues of different weights and three priority classes; a tenth of the gangs
select a zone and some tolerate the dedicated pool.

Then it times, separately, the snapshot (:func:`lahar.scheduler.snapshot.build_cluster`)
and ONE session with Volcano's default configuration through
:func:`lahar.scheduler.run.run_session`, the function behind ``lahar schedule``. The
headline ``placements_per_s`` is pods placed (bound) divided by ``session_seconds``
(open session + actions + close); building the objects, the snapshot and collecting the
result are reported apart. Timings are whatever this machine gives at the time: on
shared machines take the best of several runs.
"""

from __future__ import annotations

import gc
import random
import resource
import time
from typing import Any

from lahar.bench.common import machine

ZONES = ("zone-a", "zone-b", "zone-c", "zone-d")
INSTANCE_TYPES = ("m6.8xlarge", "c6.8xlarge", "r6.8xlarge")
QUEUES = (("batch", 1), ("research", 2), ("prod", 4), ("ml", 3))
PRIORITY_CLASSES = (("low", 100), ("normal", 1000), ("high", 10000))
GANG_SIZES = (1, 2, 4, 8, 16, 32)
# (cpu, memory) shapes of pending tasks; all tasks of one gang share one shape
SHAPES = (("500m", "1Gi"), ("1", "2Gi"), ("1", "4Gi"), ("2", "4Gi"), ("2", "8Gi"), ("4", "8Gi"))
NAMESPACES = tuple(f"team-{i}" for i in range(8))
CREATED = "2026-01-01T00:{:02d}:{:02d}Z"
DEDICATED_TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
SPOT_TAINT = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}


def _node(i: int, rng: random.Random) -> dict[str, Any]:
    name = f"node-{i:05d}"
    alloc = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    taints = []
    if i % 50 == 7:
        taints.append(DEDICATED_TAINT)
    if i % 20 == 3:
        taints.append(SPOT_TAINT)
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
                "node.kubernetes.io/instance-type": rng.choice(INSTANCE_TYPES),
            },
        },
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _created(n: int) -> str:
    return CREATED.format((n // 60) % 60, n % 60)


def _pod(
    name: str,
    namespace: str,
    cpu: str,
    memory: str,
    *,
    group: str | None,
    priority_class: str | None,
    node: str | None = None,
    scheduler: str = "volcano",
    created: str = "2026-01-01T00:00:00Z",
    extra_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    annotations = {}
    if group is not None:
        annotations["scheduling.k8s.io/group-name"] = group
        annotations["volcano.sh/task-spec"] = "worker"
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "registry.example/worker:1",
                "resources": {
                    "requests": {"cpu": cpu, "memory": memory},
                    "limits": {"cpu": cpu, "memory": memory},
                },
            }
        ],
        **(extra_spec or {}),
    }
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "annotations": annotations,
            "labels": {"app": group or name},
            "creationTimestamp": created,
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _podgroup(
    name: str, namespace: str, size: int, queue: str, prio: str, phase: str, cpu: str, mem: str
) -> dict[str, Any]:
    from lahar.api.quantity import format_quantity, parse_quantity

    min_resources = {
        "cpu": format_quantity(parse_quantity(cpu) * size),
        "memory": format_quantity(parse_quantity(mem) * size, binary=True),
    }
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": _created(0)},
        "spec": {
            "minMember": size,
            "queue": queue,
            "priorityClassName": prio,
            "minResources": min_resources,
        },
        "status": {"phase": phase},
    }


def _gang_sizes(pods: int, rng: random.Random) -> list[int]:
    sizes: list[int] = []
    left = pods
    while left > 0:
        size = min(rng.choice(GANG_SIZES), left)
        sizes.append(size)
        left -= size
    return sizes


def synthetic_cluster(nodes: int, pods: int, seed: int = 0) -> list[dict[str, Any]]:
    """The benchmark's Kubernetes objects (deterministic for a seed)."""
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [_node(i, rng) for i in range(nodes)]
    node_names = [o["metadata"]["name"] for o in objs]
    for name, value in PRIORITY_CLASSES:
        objs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "globalDefault": name == "normal",
            }
        )
    for name, weight in QUEUES:
        objs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": weight, "reclaimable": True},
                "status": {"state": "Open"},
            }
        )
    # one daemon pod (another scheduler, no PodGroup) per node
    for name in node_names:
        objs.append(
            _pod(
                f"node-agent-{name}",
                "kube-system",
                "100m",
                "128Mi",
                group=None,
                priority_class=None,
                node=name,
                scheduler="default-scheduler",
            )
        )
    # running gangs: about one running pod per two nodes
    running = nodes // 2
    for g, size in enumerate(_gang_sizes(running, rng)):
        ns, group = NAMESPACES[g % len(NAMESPACES)], f"running-{g}"
        cpu, mem = rng.choice(SHAPES)
        queue, prio = rng.choice(QUEUES)[0], rng.choice(PRIORITY_CLASSES)[0]
        objs.append(_podgroup(group, ns, size, queue, prio, "Running", cpu, mem))
        for t in range(size):
            objs.append(
                _pod(
                    f"{group}-{t}",
                    ns,
                    cpu,
                    mem,
                    group=group,
                    priority_class=prio,
                    node=rng.choice(node_names),
                )
            )
    # pending gangs
    toleration = [{"key": "dedicated", "operator": "Equal", "value": "infra"}]
    for g, size in enumerate(_gang_sizes(pods, rng)):
        ns, group = NAMESPACES[g % len(NAMESPACES)], f"job-{g}"
        cpu, mem = rng.choice(SHAPES)
        queue, prio = rng.choice(QUEUES)[0], rng.choice(PRIORITY_CLASSES)[0]
        extra: dict[str, Any] = {}
        if g % 10 == 5:
            extra["nodeSelector"] = {"topology.kubernetes.io/zone": rng.choice(ZONES)}
        if g % 7 == 2:
            extra["tolerations"] = toleration
        pg = _podgroup(group, ns, size, queue, prio, "Pending", cpu, mem)
        pg["metadata"]["creationTimestamp"] = _created(g)
        objs.append(pg)
        for t in range(size):
            objs.append(
                _pod(
                    f"{group}-{t}",
                    ns,
                    cpu,
                    mem,
                    group=group,
                    priority_class=prio,
                    created=_created(g),
                    extra_spec=extra,
                )
            )
    return objs


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run(nodes: int, pods: int, seed: int = 0) -> dict[str, Any]:
    """Build the cluster, snapshot it, run one default session; the figures as a dict."""
    from lahar.scheduler.framework.conf import default_conf
    from lahar.scheduler.run import run_session
    from lahar.scheduler.snapshot import build_cluster

    t0 = time.perf_counter()
    objects = synthetic_cluster(nodes, pods, seed)
    t1 = time.perf_counter()
    cluster = build_cluster(objects)
    t2 = time.perf_counter()
    pending = sum(
        1 for job in cluster.jobs.values() for t in job.tasks.values() if t.status.name == "PENDING"
    )
    gc.collect()
    phases: dict[str, float] = {}
    _ssn, result = run_session(cluster, default_conf(), seed=seed, now=0.0, timings=phases)
    session = phases["open"] + sum(phases["actions"].values()) + phases["close"]
    placed = len(result.binds)
    return {
        "placements_per_s": round(placed / session, 1) if session > 0 else 0.0,
        "session_seconds": round(session, 4),
        "session_cpu_seconds": round(phases["cpu"], 4),
        "snapshot_seconds": round(t2 - t1, 4),
        "build_objects_seconds": round(t1 - t0, 4),
        "open_seconds": round(phases["open"], 4),
        "action_seconds": {k: round(v, 4) for k, v in phases["actions"].items()},
        "close_seconds": round(phases["close"], 4),
        "collect_seconds": round(phases["collect"], 4),
        "peak_rss_mb": _peak_rss_mb(),
        "placed": placed,
        "pipelined": len(result.pipelined),
        "pending": pending - placed,
        "pending_before": pending,
        "podgroups": len(cluster.jobs),
        "parameters": {"nodes": nodes, "pods": pods, "seed": seed, "config": "default"},
        "machine": machine(),
    }
