"""Measuring what simulated nodes cost and how fast they move pods.

Two figures matter for the scheduling benchmarks that run on simulated nodes: how many
pods per second the simulator takes to Running (it must not be what limits a
1,000-pods/s bind rate), and what a fleet of idle nodes costs just to stay alive (Lease
renewals and Ready heartbeats). Both run against an in-process API server, so the CPU
measured is the whole cost: simulator, client and server. ``lahar bench`` can call
these; ``python -m lahar.node.sim.bench`` prints both as JSON.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.node.registration import PODS, bounded
from lahar.node.sim.fleet import SimFleet
from lahar.node.sim.options import SimOptions


async def _server(data_dir: Path) -> Any:
    from lahar.apiserver.server import APIServer

    return APIServer(data_dir, port=0)


async def pod_starts(
    nodes: int = 1000, pods: int = 10000, concurrency: int = 32, kubeconfig: str | None = None
) -> dict[str, Any]:
    """Bind ``pods`` pods over ``nodes`` simulated nodes before the simulator starts, then
    time how long it takes to report every one Running (one status write each).

    In-process (the CPU measured is simulator + server) unless ``kubeconfig`` names a
    server in another process (then it is the simulator's own, HTTPS client included).
    """
    tmp = Path(tempfile.mkdtemp(prefix="lahar-sim-bench-"))
    server = None
    if kubeconfig:
        client = kclient.from_kubeconfig(kubeconfig)
    else:
        server = await _server(tmp / "data")
        client = kclient.in_process(server.app, token=server.creds.token)
    fleet = SimFleet(
        client,
        SimOptions(count=nodes, ready_delay=0.0, concurrency=concurrency),
        logs=server.state.logs if server is not None else None,
    )
    try:
        calls = [
            lambda i=i: rest.request(
                client,
                "POST",
                PODS.path("default"),
                body={
                    "metadata": {"name": f"p{i}", "labels": {"app": "bench"}},
                    "spec": {
                        "nodeName": f"sim-{i % nodes}",
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "example/main:1"}],
                    },
                },
            )
            for i in range(pods)
        ]
        await bounded(calls, 16)
        t0 = time.perf_counter()
        await fleet.start()
        registered = time.perf_counter() - t0
        t1 = time.perf_counter()
        cpu0 = time.process_time()
        while fleet.pods.started < pods or len(fleet.writer):
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - t1
        cpu = time.process_time() - cpu0
        listed = await rest.request(client, "GET", PODS.path("default"))
        running = sum(1 for p in listed["items"] if p["status"].get("phase") == "Running")
        return {
            "server": "in-process" if server is not None else "separate process",
            "nodes": nodes,
            "pods": pods,
            "concurrency": concurrency,
            "register_seconds": round(registered, 3),
            "running_seconds": round(elapsed, 3),
            "pods_running_per_second": round(pods / elapsed, 1),
            "cpu_seconds": round(cpu, 3),
            "cpu_ms_per_pod": round(cpu / pods * 1000, 3),
            "pods_running_per_cpu_second": round(pods / cpu, 1),
            "running_verified": running,
        }
    finally:
        await fleet.close()
        if kubeconfig:
            await bounded(
                [
                    lambda i=i: rest.request(client, "DELETE", PODS.path("default", f"p{i}"))
                    for i in range(pods)
                ],
                16,
            )
        await client.close()
        if server is not None:
            await server.close()
        shutil.rmtree(tmp, ignore_errors=True)


async def idle_cost(
    nodes: int = 1000, seconds: float = 30.0, heartbeat: float = 10.0, status_period: float = 300.0
) -> dict[str, Any]:
    """CPU share (of one core) that ``nodes`` idle simulated nodes cost to stay alive."""
    tmp = Path(tempfile.mkdtemp(prefix="lahar-sim-bench-"))
    server = await _server(tmp / "data")
    client = kclient.in_process(server.app, token=server.creds.token)
    fleet = SimFleet(
        client,
        SimOptions(count=nodes, heartbeat=heartbeat, status_period=status_period),
        logs=server.state.logs,
    )
    try:
        await fleet.start()
        await fleet.wait_for_sync(60)
        await asyncio.sleep(1.0)  # let registration settle
        renewals, beats = fleet.heartbeats.renewals, fleet.heartbeats.heartbeats
        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
        return {
            "nodes": nodes,
            "seconds": round(wall, 2),
            "heartbeat": heartbeat,
            "status_period": status_period,
            "lease_renewals": fleet.heartbeats.renewals - renewals,
            "status_heartbeats": fleet.heartbeats.heartbeats - beats,
            "cpu_share_of_one_core": round(cpu / wall, 4),
        }
    finally:
        await fleet.close()
        await client.close()
        await server.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--kubeconfig", help="time pod starts against this server instead")
    p.add_argument("--skip-idle", action="store_true")
    args = p.parse_args()
    out = {
        "pod_starts": asyncio.run(
            pod_starts(args.nodes, args.pods, args.concurrency, args.kubeconfig)
        )
    }
    if not args.skip_idle:
        out["idle"] = asyncio.run(idle_cost(args.nodes, args.idle_seconds))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
