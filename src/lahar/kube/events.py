"""Recording core/v1 Events about objects, aggregated the way client-go does.

``kubectl describe`` shows Events; they are how a controller tells a user why a pod is
pending or a RayJob failed. Controllers emit the same event over and over (every
reconcile of a stuck object), so repeats must not flood the API server or the
output: an event with the same involved object, type, reason, message and source as
one recorded in the last ten minutes updates that Event instead (``count`` + 1 and a
new ``lastTimestamp``, one PATCH) rather than creating another, like client-go's
event correlator.

A second limit keeps one object from flooding the server through patches: each
(source, object) pair has a token bucket of 25 events refilled at one per five
minutes, as in client-go's spam filter; events beyond it are dropped.

Recording never blocks and never fails the caller: :meth:`EventRecorder.event` puts
the event on a bounded queue that a background task writes out (dropping, with a
log line, when the queue is full or the server refuses). A full queue is reported
once per ``DROP_LOG_INTERVAL`` with the count dropped meanwhile: a busy scheduler
records thousands of ``Scheduled`` events a second, and a line for each (as
client-go logs them) cost more CPU than the events that were written. ``await flush()`` waits
until everything queued so far is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import itertools
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.resource import Resource

__all__ = ["EVENTS", "NORMAL", "WARNING", "EventRecorder", "object_reference"]

log = logging.getLogger("lahar.kube.events")
EVENTS = Resource("", "v1", "events", "Event")
NORMAL = "Normal"
WARNING = "Warning"
AGGREGATION_WINDOW = 600.0
SPAM_BURST = 25
SPAM_QPS = 1 / 300
DROP_LOG_INTERVAL = 10.0


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(obj: Any) -> dict[str, str]:
    """The ``involvedObject`` of a dict or lightkube object."""
    if not isinstance(obj, dict):
        obj = obj.to_dict()
    md = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": md.get("name", ""),
        "namespace": md.get("namespace") or "",
        "uid": md.get("uid") or "",
        "resourceVersion": md.get("resourceVersion") or "",
    }
    return {k: v for k, v in ref.items() if v}


@dataclass
class _Recorded:
    namespace: str
    name: str
    count: int
    seen_at: float


_Key = tuple[str, ...]


class EventRecorder:
    """Writes Events for one component (``source.component`` / ``reportingComponent``)."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        component: str,
        *,
        host: str | None = None,
        instance: str | None = None,
        window: float = AGGREGATION_WINDOW,
        max_keys: int = 4096,
        queue_size: int = 1000,
        spam_burst: int = SPAM_BURST,
        spam_qps: float = SPAM_QPS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self.instance = instance or self.host
        self.window = window
        self.max_keys = max_keys
        self._clock = clock
        self._recorded: OrderedDict[_Key, _Recorded] = OrderedDict()
        self.spam_burst = spam_burst
        self.spam_qps = spam_qps
        self._buckets: OrderedDict[_Key, tuple[float, float]] = OrderedDict()  # tokens, time
        self.filtered = 0  # events dropped by the spam filter
        self._queue: asyncio.Queue[tuple[dict[str, str], str, str, str]] = asyncio.Queue(queue_size)
        self._task: asyncio.Task[None] | None = None
        self._seq = itertools.count()
        self.dropped = 0
        self._full_drops = 0  # dropped because the queue was full, not yet logged
        self._full_logged_at: float | None = None

    # -- the caller's side -------------------------------------------------------------

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        """Record an event about ``obj`` (``type`` is ``Normal`` or ``Warning``)."""
        if type not in (NORMAL, WARNING):
            raise ValueError(f"event type must be Normal or Warning, not {type!r}")
        ref = object_reference(obj)
        if not self._allow(ref):
            self.filtered += 1
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain(), name=f"events {self.component}")
        try:
            self._queue.put_nowait((ref, type, reason, message))
        except asyncio.QueueFull:
            self.dropped += 1
            self._full_drops += 1
            now = self._clock()
            last = self._full_logged_at
            if last is None or now - last >= DROP_LOG_INTERVAL:
                log.warning(
                    "event queue full; dropped %d event(s), the latest %s %s on %s",
                    self._full_drops,
                    type,
                    reason,
                    ref.get("name"),
                )
                self._full_drops = 0
                self._full_logged_at = now

    def _allow(self, ref: dict[str, str]) -> bool:
        """Take a token from the object's bucket (False when it is empty)."""
        key: _Key = tuple(
            ref.get(k, "") for k in ("uid", "apiVersion", "kind", "namespace", "name")
        )
        now = self._clock()
        tokens, last = self._buckets.pop(key, (float(self.spam_burst), now))
        tokens = min(float(self.spam_burst), tokens + (now - last) * self.spam_qps)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return allowed

    def normal(self, obj: Any, reason: str, message: str) -> None:
        self.event(obj, NORMAL, reason, message)

    def warning(self, obj: Any, reason: str, message: str) -> None:
        self.event(obj, WARNING, reason, message)

    async def flush(self) -> None:
        """Wait until every event recorded so far has been written (or dropped)."""
        if self._task is not None and not self._task.done():
            await self._queue.join()

    async def close(self) -> None:
        """Write what is queued, then stop the background task."""
        await self.flush()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- the writer --------------------------------------------------------------------

    async def _drain(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self.write(*item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.dropped += 1
                log.warning(
                    "could not write %s event %s on %s: %s",
                    item[1],
                    item[2],
                    item[0].get("name"),
                    exc,
                )
            finally:
                self._queue.task_done()

    async def write(
        self, ref: dict[str, str], type: str, reason: str, message: str
    ) -> dict[str, Any]:
        """Create the Event, or bump the one recorded within the window; return it."""
        key: _Key = (
            ref.get("uid", ""),
            ref.get("apiVersion", ""),
            ref.get("kind", ""),
            ref.get("namespace", ""),
            ref.get("name", ""),
            type,
            reason,
            message,
            self.component,
            self.host,
        )
        now = self._clock()
        seen = self._recorded.get(key)
        if seen is not None and now - seen.seen_at <= self.window:
            patch = {"count": seen.count + 1, "lastTimestamp": _now()}
            try:
                updated = await rest.request(
                    self.client,
                    "PATCH",
                    EVENTS.path(seen.namespace, seen.name),
                    body=patch,
                    content_type="application/merge-patch+json",
                )
            except rest.ApiError as exc:
                if not rest.is_status(exc, 404):
                    raise
            else:
                seen.count += 1
                seen.seen_at = now
                self._recorded.move_to_end(key)
                return updated
        created = await self._create(ref, type, reason, message)
        self._recorded[key] = _Recorded(
            created["metadata"]["namespace"], created["metadata"]["name"], 1, now
        )
        self._recorded.move_to_end(key)
        while len(self._recorded) > self.max_keys:
            self._recorded.popitem(last=False)
        return created

    async def _create(
        self, ref: dict[str, str], type: str, reason: str, message: str
    ) -> dict[str, Any]:
        # Events about cluster-scoped objects live in "default", as client-go puts them.
        namespace = ref.get("namespace") or "default"
        stamp = _now()
        name = f"{ref.get('name', 'event')}.{time.time_ns() + next(self._seq):x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        return await rest.request(self.client, "POST", EVENTS.path(namespace), body=body)
