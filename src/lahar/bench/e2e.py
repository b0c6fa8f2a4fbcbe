"""``lahar bench e2e``: pods bound per second through the whole scheduling path.

Where ``lahar bench scheduler`` times one session on objects in memory, this one
measures what a user sees: M pods in gangs (PodGroups of mixed sizes, ``schedulerName:
volcano``) created through the API server on N simulated nodes, with the live
scheduler daemon running, until every pod is bound. The API server (lahar's CRDs and
admission, as in ``lahar up``) runs in a child process and is reached over HTTPS with
TLS and a token, as in a split-process deployment; the scheduler daemon (its sessions
in a worker thread), the Volcano controllers and the simulated node fleet share this
process's event loop and talk to it through the client seam. The pods are created by
a third process (``loadgen.py``), a client like any other: in a cluster they come
from users and controllers, not from the scheduler's process. (Until session 5 they
were created on this loop, and the load and the scheduler slowed each other down.) So
the figures include the API server's work (admission, storage, watch fan-out) for
every create, bind and status write, the simulated nodes' status writes for the pods
they start, and the TLS and socket costs. ``in_process`` puts the server, and the
load, on this loop behind the in-process transport instead (one core, as ``lahar up``
runs it).

Timestamps: each pod's create time is taken just before its POST; its bound time when
the pod informer (one watch over all pods) first shows ``spec.nodeName``. Figures:
``pods_per_s`` (pods bound / seconds from the first create to the last bind seen),
``create_to_bound_p50_ms`` / ``_p99_ms``, and the phases (``timeline``: pods created
and bound by the end of each second), and ``cpu_ms_per_pod``: CPU time per pod bound of
the API server's process, of this one (``components``) and of the load's, from the
first create to the last bind (a figure that contention on the machine changes far
less than the rate). The load creates pods faster than they are bound, so the
latencies include the wait in a backlog of pending pods. ``profile``
(optional) adds
the top functions by cumulative time (cProfile over this process: the components, and
the API server too with ``in_process``) to find where the time goes.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import cProfile
import io
import pstats
import random
import time
from typing import Any

from lahar.bench.common import embedded_stack, machine, percentile
from lahar.bench.loadgen import LoadProcess

GANG_SIZES = (1, 2, 4, 8, 16)
SHAPES = (("100m", "128Mi"), ("250m", "256Mi"), ("500m", "512Mi"), ("1", "1Gi"))
NAMESPACE = "default"
SETUP_SPLIT = (
    "three processes: the API server (child, HTTPS on loopback with TLS and a token); "
    "scheduler daemon + Volcano controllers + simulated nodes (one loop); "
    "the load (child, its own client and connections)"
)
SETUP_IN_PROCESS = "in-process: API server + scheduler daemon + simulated nodes, one loop"
PODGROUP_PATH = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
POD_PATH = "/api/v1/namespaces/{ns}/pods"
QUEUE_PATH = "/apis/scheduling.volcano.sh/v1beta1/queues"


async def _wait_queue_open(client: Any, name: str, timeout: float = 30.0) -> None:
    """Volcano's queue controller makes the default queue and opens it."""
    from lahar.kube import rest

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        with contextlib.suppress(rest.ApiError):
            queue = await rest.request(client, "GET", f"{QUEUE_PATH}/{name}")
            if (queue.get("status") or {}).get("state") == "Open":
                return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"queue {name} did not open within {timeout}s")


def gangs(pods: int, seed: int = 0) -> list[tuple[str, int, tuple[str, str]]]:
    """(name, size, shape) of the gangs that add up to ``pods`` pods."""
    rng = random.Random(seed)
    out: list[tuple[str, int, tuple[str, str]]] = []
    left, i = pods, 0
    while left > 0:
        size = min(rng.choice(GANG_SIZES), left)
        out.append((f"g{i:05d}", size, rng.choice(SHAPES)))
        left -= size
        i += 1
    return out


def podgroup_body(name: str, size: int, shape: tuple[str, str]) -> dict[str, Any]:
    cpu, mem = shape
    from lahar.api.quantity import format_quantity, parse_quantity

    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "minMember": size,
            "queue": "default",
            "minResources": {
                "cpu": format_quantity(parse_quantity(cpu) * size),
                "memory": format_quantity(parse_quantity(mem) * size, binary=True),
            },
        },
    }


def pod_body(group: str, index: int, shape: tuple[str, str]) -> dict[str, Any]:
    cpu, mem = shape
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{group}-{index}",
            "namespace": NAMESPACE,
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": "volcano",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "example/bench:1",
                    "resources": {"requests": {"cpu": cpu, "memory": mem}},
                }
            ],
        },
    }


async def _measure(
    nodes: int,
    pods: int,
    seed: int,
    concurrency: int,
    period: float,
    timeout: float,
    session_in_thread: bool = True,
    split: bool = True,
) -> dict[str, Any]:
    from lahar.kube import rest
    from lahar.node.registration import PODS
    from lahar.scheduler.daemon import SchedulerOptions, run_scheduler
    from lahar.volcano.controllers.manager import run_volcano_controllers

    stack = await embedded_stack("lahar-bench-e2e-", nodes, split=split)
    client = stack.client
    informers, fleet = stack.informers, stack.fleet
    created: dict[str, float] = {}
    bound: dict[str, float] = {}

    def seen(obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if (obj.get("spec") or {}).get("nodeName") and name not in bound:
            bound[name] = time.perf_counter()

    pod_informer = informers.informer(PODS)
    pod_informer.add_handler(on_add=seen, on_update=lambda _old, new: seen(new))
    tasks: list[asyncio.Task[Any]] = []
    load: LoadProcess | None = None
    try:
        t0 = time.perf_counter()
        await fleet.start()
        await fleet.wait_for_sync(60)
        register_s = time.perf_counter() - t0
        options = SchedulerOptions(
            schedule_period=period,
            health_port=None,
            queue_counts=False,
            session_in_thread=session_in_thread,  # off when profiling: cProfile sees one thread
        )
        tasks.append(
            asyncio.create_task(run_scheduler(client, informers=informers, options=options))
        )
        tasks.append(asyncio.create_task(run_volcano_controllers(client, informers=informers)))
        await _wait_queue_open(client, "default")
        plan = gangs(pods, seed)
        for name, size, shape in plan:  # PodGroups first: their pods wait for Inqueue
            await rest.request(
                client,
                "POST",
                PODGROUP_PATH.format(ns=NAMESPACE),
                body=podgroup_body(name, size, shape),
            )
        bodies = [pod_body(g, i, shape) for g, size, shape in plan for i in range(size)]
        if split:  # the load in a process of its own (loadgen.py)
            load = LoadProcess(stack.server.kubeconfig, bodies, stack.tmp)
            await load.start(concurrency)
        await asyncio.sleep(period)  # let the scheduler's informers settle
        sem = asyncio.Semaphore(concurrency)

        async def create(body: dict[str, Any]) -> None:
            async with sem:
                created[body["metadata"]["name"]] = time.perf_counter()
                await rest.request(client, "POST", POD_PATH.format(ns=NAMESPACE), body=body)

        cpu_before = stack.cpu_seconds()
        start = time.perf_counter()
        if load is not None:
            times, load_cpu = await load.run()
            created.update(times)
        else:
            await asyncio.gather(*(create(b) for b in bodies))
        created_s = time.perf_counter() - start
        deadline = time.perf_counter() + timeout
        while len(bound) < pods and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        cpu_after = stack.cpu_seconds()
        if load is not None:
            cpu_before["load"], cpu_after["load"] = 0.0, load_cpu
        first = min(created.values())
        last = max(bound.values()) if bound else time.perf_counter()
        latencies = [(bound[n] - created[n]) * 1000 for n in bound if n in created]
        requests = request_counts(await stack.metrics_text())
        elapsed = last - first
        return {
            "pods_per_s": round(len(bound) / elapsed, 1) if elapsed > 0 else 0.0,
            "create_to_bound_p50_ms": round(percentile(latencies, 0.5), 1),
            "create_to_bound_p99_ms": round(percentile(latencies, 0.99), 1),
            "bound": len(bound),
            "seconds": round(elapsed, 3),
            "create_seconds": round(created_s, 3),
            "cpu_ms_per_pod": {
                part: round((cpu_after[part] - cpu_before[part]) * 1000 / max(1, len(bound)), 3)
                for part in cpu_before
            },
            "timeline": timeline(first, created, bound),
            "creates_per_s": round(pods / created_s, 1) if created_s > 0 else 0.0,
            "gangs": len(plan),
            "node_register_seconds": round(register_s, 3),
            "timed_out": len(bound) < pods,
            "api_requests_per_pod": round(sum(requests.values()) / max(1, pods), 1),
            "api_requests": requests,
        }
    finally:
        if load is not None:
            await load.close()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        fleet.options.keep_nodes = True  # the whole store goes away with the temp dir
        with contextlib.suppress(Exception):
            await fleet.close()
        with contextlib.suppress(Exception):
            await informers.stop()
        await stack.close()


def timeline(first: float, created: dict[str, float], bound: dict[str, float]) -> list[list[int]]:
    """``[second, created, bound]`` at the end of each second from the first create: how
    far the binds trailed the creates (the pipeline's phases at a glance)."""
    if not created:
        return []
    end = max([*created.values(), *bound.values()])
    made, done = sorted(created.values()), sorted(bound.values())
    rows: list[list[int]] = []
    for second in range(1, int(end - first) + 2):
        t = first + second
        rows.append([second, bisect.bisect_right(made, t), bisect.bisect_right(done, t)])
    return rows


def request_counts(text: str, top: int = 12) -> dict[str, int]:
    """The API server's request counts by verb and resource (its own
    ``apiserver_request_total`` in its metrics ``text``), the ``top`` largest: where the
    server's work went."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        inner = line[line.index("{") + 1 : line.index("}")]
        labels = dict(part.split("=", 1) for part in inner.split(","))
        names = (labels.get(k, "").strip('"') for k in ("verb", "resource", "subresource"))
        key = " ".join(n for n in names if n)
        counts[key] = counts.get(key, 0) + int(float(line.rsplit(" ", 1)[1]))
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:top])


def run(
    *,
    nodes: int = 1000,
    pods: int = 10000,
    seed: int = 0,
    concurrency: int = 64,
    schedule_period: float | None = None,
    timeout: float = 600.0,
    profile: bool = False,
    in_process: bool = False,
) -> dict[str, Any]:
    """Run the benchmark; one JSON-ready dict (figures, parameters, machine).

    ``schedule_period`` defaults to the scheduler's own (1 s, Volcano's): the benchmark
    runs the scheduler as shipped. (Until session 4 it used 0.2 s: more sessions, each
    rewriting more PodGroup statuses, cost both processes ~10% more CPU per pod and
    bound fewer pods per second, 790-830 against 910-920, for a lower p50.)

    ``in_process`` runs the API server on the benchmark's own event loop (one core)
    instead of in a child process reached over HTTPS (see ``common.EmbeddedStack``)."""
    if schedule_period is None:
        from lahar.scheduler.daemon import SchedulerOptions

        schedule_period = SchedulerOptions().schedule_period
    prof = cProfile.Profile() if profile else None
    if prof is not None:
        prof.enable()
    figures = asyncio.run(
        _measure(
            nodes, pods, seed, concurrency, schedule_period, timeout, not profile, not in_process
        )
    )
    out: dict[str, Any] = {
        **figures,
        "parameters": {
            "nodes": nodes,
            "pods": pods,
            "seed": seed,
            "create_concurrency": concurrency,
            "schedule_period": schedule_period,
            "node_shape": "32 cpu / 128Gi / 110 pods (simulated)",
            "gang_sizes": list(GANG_SIZES),
            "setup": SETUP_IN_PROCESS if in_process else SETUP_SPLIT,
        },
        "machine": machine(),
    }
    if prof is not None:
        prof.disable()
        out["profile_seconds_by_component"] = by_component(prof)
        out["profile"] = top_functions(prof)
    return out


COMPONENTS = (
    ("lahar/apiserver/", "apiserver"),
    ("lahar/scheduler/", "scheduler"),
    ("lahar/node/", "sim nodes"),
    ("lahar/volcano/", "volcano controllers"),
    ("lahar/kube/", "client seam (informers, transport, events)"),
    ("lahar/", "lahar (other)"),
    ("sqlite3", "sqlite"),
    ("copy.py", "deepcopy"),
    ("json", "json"),
    ("httpx", "httpx"),
    ("lightkube", "lightkube"),
    ("asyncio", "asyncio"),
)


def by_component(prof: cProfile.Profile) -> dict[str, float]:
    """Own (tottime) seconds summed by where the function lives: which part of the
    stack the process spent its time in."""
    totals: dict[str, float] = {}
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    for (filename, _line, func), (_cc, _nc, tottime, _ct, _callers) in stats.items():
        where = f"{filename}:{func}"
        name = next((n for key, n in COMPONENTS if key in where), "other")
        totals[name] = totals.get(name, 0.0) + tottime
    return {k: round(v, 2) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def top_functions(prof: cProfile.Profile, limit: int = 25) -> list[str]:
    """The ``limit`` functions with the most own (tottime) time, as text lines."""
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(limit)
    lines = [ln.rstrip() for ln in buf.getvalue().splitlines()]
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    return [ln for ln in lines[start:] if ln.strip()][: limit + 1]
