"""Binding pods to nodes, asynchronously, through the ``pods/binding`` subresource.

A session's decisions are binds (task -> node). Like Volcano's binder (§8) and
kube-scheduler, they are sent after the session, without holding up the next one:
:meth:`Binder.submit` marks the pods assumed in the cache at once (the next snapshot
counts them on their nodes) and queues them; a bounded pool of workers sends one POST
``pods/{name}/binding`` each, the call kube-scheduler makes. All binds of one job are
queued together, in one step, so a gang is dispatched as a unit; if some of them fail
the others stay bound (Volcano has no gang rollback) and the failed pods are pending
again in the next snapshot, to be placed anew.

Outcomes:

* 201: the pod is on the node. Event ``Scheduled`` ("Successfully assigned ns/pod to
  node"); the cache keeps the pod assumed until the informer shows the nodeName.
* 409 for a pod that is already bound (a bind that landed before a restart, a lost
  reply, another leader): already done. The pod is read once to learn its node, and
  nothing is bound twice.
* anything else (404 pod gone, 409 pod replaced or being deleted, 5xx, a broken
  connection): the cache forgets the assumption, a Warning ``FailedScheduling`` event
  says why, and the next session tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

import lightkube

from lahar.kube import rest
from lahar.kube.events import EventRecorder
from lahar.scheduler.daemon.cache import PODS, SchedulerCache
from lahar.scheduler.daemon.metrics import SchedulerMetrics

__all__ = ["BindRequest", "Binder", "pod_ref"]

log = logging.getLogger("lahar.scheduler.binder")


@dataclass(frozen=True)
class BindRequest:
    namespace: str
    name: str
    uid: str
    node: str
    job: str = ""
    created: str = ""  # the pod's creationTimestamp (task latency metric)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def pod_ref(namespace: str, name: str, uid: str) -> dict[str, object]:
    """A Pod as an Event's involved object."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": namespace, "name": name, "uid": uid},
    }


def since_created(created: str) -> float | None:
    """Milliseconds since an RFC 3339 creationTimestamp (None if unparsable)."""
    if not created:
        return None
    try:
        when = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (time.time() - when.timestamp()) * 1000.0)


class Binder:
    """A queue of binds and a bounded pool of workers sending them."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        cache: SchedulerCache,
        recorder: EventRecorder,
        metrics: SchedulerMetrics,
        *,
        workers: int = 32,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.metrics = metrics
        self.workers = max(1, workers)
        self._queue: asyncio.Queue[BindRequest] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.in_flight = 0
        self.sent = 0  # binding calls made
        self.bound = 0  # answered 201
        self.failed = 0

    def submit(self, binds: Iterable[BindRequest]) -> int:
        """Assume and queue binds (one job's together); returns how many were queued.

        Synchronous: every pod is assumed before any bind is sent, so the next snapshot
        sees the whole group as Binding whatever the pool has got to.
        """
        count = 0
        for req in binds:
            if self.cache.in_flight(req.key):
                continue  # a bind for this pod is already on its way
            self.cache.assume(req.key, req.uid, req.node)
            self._queue.put_nowait(req)
            count += 1
            ms = since_created(req.created)
            if ms is not None:
                self.metrics.task_latency.labels("Assumed").observe(ms)
        self._start()
        return count

    def _start(self) -> None:
        self._tasks = [t for t in self._tasks if not t.done()]
        while len(self._tasks) < self.workers and len(self._tasks) < self._queue.qsize():
            self._tasks.append(asyncio.create_task(self._work(), name="scheduler bind"))

    @property
    def pending(self) -> int:
        return self._queue.qsize() + self.in_flight

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every queued bind has been answered (False on timeout)."""
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
        except TimeoutError:
            return False
        return True

    async def close(self, grace: float = 2.0) -> None:
        """Let queued binds finish for up to ``grace`` seconds, then stop the workers.

        Binds still queued after that are forgotten (the pods are pending again for
        whoever schedules next). The grace is short on purpose: a leader that lost its
        Lease stops at ``renew_deadline`` and must be quiet before ``lease_duration``
        (5 s later with the default timing), when another replica may take over."""
        if self._tasks:
            await self.wait_idle(grace)
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        while not self._queue.empty():
            req = self._queue.get_nowait()
            self.cache.forget(req.key, req.uid)
            self._queue.task_done()

    async def _work(self) -> None:
        while True:
            try:
                req = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return  # the pool shrinks when idle; submit() starts workers again
            self.in_flight += 1
            self.metrics.binds_in_flight.set(self.in_flight)
            try:
                await self.bind(req)
            except asyncio.CancelledError:
                self.cache.forget(req.key, req.uid)
                raise
            except Exception:  # never let one bind kill the worker
                log.exception("bind of %s to %s failed unexpectedly", req.key, req.node)
                self.cache.forget(req.key, req.uid)
            finally:
                self.in_flight -= 1
                self.metrics.binds_in_flight.set(self.in_flight)
                self._queue.task_done()

    async def bind(self, req: BindRequest) -> None:
        """Send one bind and act on its answer."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": req.name, "namespace": req.namespace, "uid": req.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": req.node},
        }
        started = time.perf_counter()
        self.sent += 1
        try:
            await rest.request(
                self.client,
                "POST",
                PODS.path(req.namespace, req.name, "binding"),
                body=body,
            )
        except Exception as exc:
            self.metrics.stage.labels("Bind").observe((time.perf_counter() - started) * 1000)
            if rest.is_status(exc, 409) and await self._already_bound(req):
                return
            self._failed(req, exc)
            return
        self.metrics.stage.labels("Bind").observe((time.perf_counter() - started) * 1000)
        self.bound += 1
        self.cache.bind_answered(req.key, req.uid, req.node)
        self.metrics.attempts.labels("scheduled").inc()
        ms = since_created(req.created)
        if ms is not None:
            self.metrics.task_latency.labels("Bound").observe(ms)
        self.recorder.normal(
            pod_ref(req.namespace, req.name, req.uid),
            "Scheduled",
            f"Successfully assigned {req.namespace}/{req.name} to {req.node}",
        )

    async def _already_bound(self, req: BindRequest) -> bool:
        """After a 409: True if this very pod is bound (then the cache records where)."""
        try:
            pod = await rest.request(self.client, "GET", PODS.path(req.namespace, req.name))
        except Exception:
            return False
        node = (pod.get("spec") or {}).get("nodeName")
        if pod.get("metadata", {}).get("uid") != req.uid or not node:
            return False
        log.info("pod %s was already bound to %s; not binding it again", req.key, node)
        self.cache.bind_answered(req.key, req.uid, node)
        return True

    def _failed(self, req: BindRequest, exc: Exception) -> None:
        self.failed += 1
        self.cache.forget(req.key, req.uid)
        self.metrics.attempts.labels("error").inc()
        code = rest.status_code(exc)
        why = str(exc) or type(exc).__name__
        log.warning("bind of %s to %s failed (%s): %s", req.key, req.node, code, why)
        if code == 404:
            return  # the pod is gone: nobody to tell
        self.recorder.warning(
            pod_ref(req.namespace, req.name, req.uid),
            "FailedScheduling",
            f"Binding rejected: failed to bind to node {req.node}: {why}",
        )
