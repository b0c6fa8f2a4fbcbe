"""Evicting victims and nominating preemptors: what preempt and reclaim leave to do.

An eviction is a POST to ``pods/{name}/eviction`` (the graceful, policy-checked delete
kubectl drain uses), sent after the session from a small pool. Until the informer shows
the pod terminating, the cache shows it Releasing (the evicting overlay), so the next
session does not count its resources as free twice nor pick it again. Events follow
Volcano (§8): a Warning ``Evict`` on the pod and a Normal ``Evict`` on its PodGroup,
whose message is the action that chose it. A failed eviction (other than the pod being
gone already) puts the pod back as it was; the next session decides again.

A preemptor that waits on a node being freed gets ``status.nominatedNodeName``, as
Volcano and kube-scheduler write it (never cleared by the scheduler).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.events import EventRecorder
from lahar.scheduler.daemon.binder import pod_ref
from lahar.scheduler.daemon.cache import PODGROUPS, PODS, SchedulerCache
from lahar.scheduler.daemon.metrics import SchedulerMetrics

__all__ = ["EvictRequest", "Evictor"]

log = logging.getLogger("lahar.scheduler.evictor")


@dataclass(frozen=True)
class EvictRequest:
    namespace: str
    name: str
    uid: str
    reason: str  # the action: preempt, reclaim...
    podgroup: str = ""  # name of the victim's PodGroup (same namespace)
    podgroup_uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Evictor:
    """Sends evictions and nominations in the background, a few at a time."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        cache: SchedulerCache,
        recorder: EventRecorder,
        metrics: SchedulerMetrics,
        *,
        workers: int = 8,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.metrics = metrics
        self._limit = asyncio.Semaphore(max(1, workers))
        self._tasks: set[asyncio.Task[None]] = set()
        self.evicted = 0

    def submit(self, evictions: list[EvictRequest], nominations: dict[str, str]) -> None:
        """Mark victims Releasing at once, then evict them (and nominate) in the background."""
        for req in evictions:
            self.cache.evict(req.key, req.uid)
            self.metrics.evictions.labels(req.reason or "unknown").inc()
            if req.podgroup:
                self.recorder.normal(
                    {
                        "apiVersion": PODGROUPS.api_version,
                        "kind": PODGROUPS.kind,
                        "metadata": {
                            "namespace": req.namespace,
                            "name": req.podgroup,
                            "uid": req.podgroup_uid,
                        },
                    },
                    "Evict",
                    req.reason,
                )
            self._spawn(self.evict(req))
        for key, node in nominations.items():
            self._spawn(self.nominate(key, node))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(self._limited(coro), name="scheduler evict")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _limited(self, coro: Coroutine[Any, Any, None]) -> None:
        async with self._limit:
            await coro

    async def wait_idle(self, timeout: float | None = None) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)

    async def close(self, grace: float = 2.0) -> None:
        await self.wait_idle(grace)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def evict(self, req: EvictRequest) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": req.name, "namespace": req.namespace},
            "deleteOptions": {"preconditions": {"uid": req.uid}},
        }
        try:
            await rest.request(
                self.client, "POST", PODS.path(req.namespace, req.name, "eviction"), body=body
            )
        except Exception as exc:
            if rest.is_status(exc, 404):
                return  # gone already: what the eviction wanted
            self.cache.eviction_failed(req.key, req.uid)
            log.warning("eviction of %s failed: %s", req.key, exc)
            return
        self.evicted += 1
        self.recorder.warning(
            pod_ref(req.namespace, req.name, req.uid),
            "Evict",
            f"Pod is evicted by the scheduler ({req.reason})",
        )

    async def nominate(self, key: str, node: str) -> None:
        pod = self.cache.pods.get_by_key(key)
        if pod is None or (pod.get("status") or {}).get("nominatedNodeName") == node:
            return
        ns, _, name = key.partition("/")
        try:
            await rest.request(
                self.client,
                "PATCH",
                PODS.path(ns, name, "status"),
                body={"status": {"nominatedNodeName": node}},
                content_type="application/merge-patch+json",
            )
        except Exception as exc:
            log.warning("could not nominate %s to node %s: %s", key, node, exc)
