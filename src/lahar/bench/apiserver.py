"""``lahar bench apiserver``: write throughput and watch delivery latency.

Writes go through lahar's own client seam (lightkube over HTTPS with the token,
exactly what every component uses) to a separate ``lahar apiserver`` process:
creates, then updates, from concurrent workers for a fixed time each. Watch
latency is the time from just before a write is sent to the moment each watcher
receives its event, with 1 and then 50 concurrent watchers, while a writer makes
a steady stream of changes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace

from lahar.bench.common import ServerProcess, machine, percentile
from lahar.kube import client as kclient


async def _writes(kubeconfig: str, seconds: float, concurrency: int) -> dict[str, float]:
    c = kclient.from_kubeconfig(kubeconfig, field_manager="bench")
    await c.create(Namespace(metadata=ObjectMeta(name="bench-writes")))
    created: list[str] = []
    try:

        async def creator(w: int, until: float) -> int:
            n = 0
            while time.perf_counter() < until:
                name = f"w{w}-{n}"
                await c.create(
                    ConfigMap(metadata=ObjectMeta(name=name), data={"n": str(n)}),
                    namespace="bench-writes",
                )
                created.append(name)
                n += 1
            return n

        start = time.perf_counter()
        counts = await asyncio.gather(*(creator(w, start + seconds) for w in range(concurrency)))
        create_rate = sum(counts) / (time.perf_counter() - start)

        async def updater(names: list[str], until: float) -> int:
            n = 0
            while time.perf_counter() < until:
                name = names[n % len(names)]
                await c.patch(ConfigMap, name, {"data": {"u": str(n)}}, namespace="bench-writes")
                n += 1
            return n

        shards = [created[i::concurrency] for i in range(concurrency)]
        start = time.perf_counter()
        counts = await asyncio.gather(*(updater(s, start + seconds) for s in shards if s))
        update_rate = sum(counts) / (time.perf_counter() - start)
    finally:
        await c.close()
    return {"creates_per_s": create_rate, "updates_per_s": update_rate, "objects": len(created)}


async def _watch_latency(
    kubeconfig: str, watchers: int, events: int, rate: float
) -> dict[str, float]:
    ns = f"bench-watch-{watchers}"
    writer = kclient.from_kubeconfig(kubeconfig, field_manager="bench")
    await writer.create(Namespace(metadata=ObjectMeta(name=ns)))
    sent: dict[str, float] = {}
    latencies: list[float] = []
    ready = 0
    clients = [kclient.from_kubeconfig(kubeconfig) for _ in range(watchers)]
    _, rv = [], None
    listing = writer.list(ConfigMap, namespace=ns)
    async for _ in listing:
        pass
    rv = listing.resourceVersion

    async def watch(cl: Any) -> None:
        nonlocal ready
        got = 0
        ready += 1
        async for typ, obj in cl.watch(ConfigMap, namespace=ns, resource_version=rv):
            now = time.perf_counter()
            if typ == "ADDED" and obj.metadata.name in sent:
                latencies.append((now - sent[obj.metadata.name]) * 1000)
                got += 1
                if got >= events:
                    return

    tasks = [asyncio.create_task(watch(cl)) for cl in clients]
    try:
        while ready < watchers:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
        interval = 1.0 / rate
        for i in range(events):
            name = f"e{i}"
            sent[name] = time.perf_counter()
            await writer.create(ConfigMap(metadata=ObjectMeta(name=name)), namespace=ns)
            await asyncio.sleep(interval)
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for cl in clients:
            await cl.close()
        await writer.close()
    return {
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
        "samples": len(latencies),
    }


def run(
    seconds: float = 5.0, concurrency: int = 16, events: int = 200, rate: float = 50.0
) -> dict[str, Any]:
    with ServerProcess() as server:
        kc = str(server.kubeconfig)
        writes = asyncio.run(_writes(kc, seconds, concurrency))
        one = asyncio.run(_watch_latency(kc, 1, events, rate))
        fifty = asyncio.run(_watch_latency(kc, 50, events, rate))
    total = (writes["creates_per_s"] + writes["updates_per_s"]) / 2
    return {
        "writes_per_s": round(total, 1),
        "watch_p50_ms": round(fifty["p50_ms"], 2),
        "watch_p99_ms": round(fifty["p99_ms"], 2),
        "creates_per_s": round(writes["creates_per_s"], 1),
        "updates_per_s": round(writes["updates_per_s"], 1),
        "watch_1": {k: round(v, 2) for k, v in one.items()},
        "watch_50": {k: round(v, 2) for k, v in fifty.items()},
        "targets": {"writes_per_s": ">= 1000", "watch_p99_ms": "<= 50"},
        "parameters": {
            "seconds": seconds,
            "concurrency": concurrency,
            "watch_events": events,
            "watch_write_rate_per_s": rate,
            "transport": "https, separate server process",
        },
        "machine": machine(),
    }
