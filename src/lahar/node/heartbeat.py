"""Keeping many nodes alive cheaply: Lease renewals and Ready heartbeats.

A kubelet renews its node's Lease every 10 s (40 s duration) and re-posts its
conditions now and then even when nothing changed; the node lifecycle controller and
the API server's pod collector judge liveness by the Lease. An agent with a thousand
nodes must not do that as a thousand timers firing in bursts. One loop wakes a few
times a second, picks the nodes that are due (each node's first due time is spread at
random over a period, so the writes are spread evenly) and sends their writes as one
batch with bounded concurrency: a lease renewal is one small merge patch, a status
heartbeat is one merge patch of the conditions.

A node can be taken down (its agent "dies"): renewals stop, and its conditions are
reported Unknown at once (what the node lifecycle controller would write some 40 s
later, so that without one the node still shows NotReady). Bringing it up renews the
Lease and reports Ready again, with fresh transition times.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.node.podstatus import rfc3339
from lahar.node.registration import (
    HEALTHY,
    MERGE,
    NODES,
    UNKNOWN,
    bounded,
    condition_list,
    ensure_lease,
    renew_lease,
)

log = logging.getLogger("lahar.node.heartbeat")


@dataclass
class _Beat:
    name: str
    uid: str | None
    next_lease: float
    next_status: float
    lease: dict[str, Any] | None = None  # as last written (for the next update)
    down: bool = False
    since: str = field(default_factory=rfc3339)  # when the conditions last changed


class Heartbeater:
    """Lease renewals every ``lease_period`` and condition heartbeats every
    ``status_period`` for every node added, until :meth:`stop`."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        *,
        lease_period: float = 10.0,
        lease_duration: int = 40,
        status_period: float = 300.0,
        concurrency: int = 16,
        on_gone: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.lease_period = lease_period
        self.lease_duration = lease_duration
        self.status_period = status_period
        self.concurrency = concurrency
        self.on_gone = on_gone
        self.renewals = 0  # lease writes sent
        self.heartbeats = 0  # status writes sent
        self._nodes: dict[str, _Beat] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- the set of nodes --------------------------------------------------------------

    def add(
        self,
        name: str,
        uid: str | None = None,
        *,
        lease: dict[str, Any] | None = None,
        down: bool = False,
    ) -> None:
        """Heartbeat ``name`` (just registered, with ``lease`` as written then: its first
        beats are spread over a period)."""
        now = time.monotonic()
        self._nodes[name] = _Beat(
            name,
            uid,
            next_lease=now + self.lease_period * random.random(),
            next_status=now + self.status_period * random.random(),
            lease=lease,
            down=down,
        )
        if down:  # report it down now
            self._nodes[name].next_status = now
            self._wake.set()

    def remove(self, name: str) -> None:
        self._nodes.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def is_down(self, name: str) -> bool:
        beat = self._nodes.get(name)
        return beat is not None and beat.down

    def set_down(self, name: str, down: bool) -> bool:
        """Take a node down or bring it back; True if that changed anything."""
        beat = self._nodes.get(name)
        if beat is None or beat.down == down:
            return False
        beat.down = down
        beat.since = rfc3339()
        now = time.monotonic()
        beat.next_status = now
        if not down:
            beat.next_lease = now
        self._wake.set()
        return True

    # -- the loop ----------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name="node heartbeats")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def run(self) -> None:
        tick = max(0.05, min(1.0, self.lease_period / 4))
        while True:
            try:
                await self.beat_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("heartbeat round failed")
            self._wake.clear()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation
            # that lands just as the wait ends, and stop() would wait on this loop forever
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(tick):
                    await self._wake.wait()

    async def beat_due(self) -> None:
        """Send every write that is due now, as one bounded batch."""
        now = time.monotonic()
        calls: list[Callable[[], Awaitable[None]]] = []
        for beat in list(self._nodes.values()):
            if not beat.down and beat.next_lease <= now:
                beat.next_lease = now + self.lease_period
                calls.append(lambda b=beat: self._renew(b))
            if beat.next_status <= now:
                beat.next_status = now + self.status_period
                calls.append(lambda b=beat: self._post_status(b))
        if calls:
            await bounded(calls, self.concurrency)

    async def _renew(self, beat: _Beat) -> None:
        try:
            if beat.lease is None:
                beat.lease = await ensure_lease(
                    self.client, beat.name, beat.uid, self.lease_duration
                )
            else:
                beat.lease = await renew_lease(self.client, beat.lease)
        except rest.ApiError as exc:
            beat.lease = None  # read it again next time
            if rest.status_code(exc) in (404, 409):  # gone, or written by someone else
                beat.next_lease = time.monotonic()  # try again at the next tick
            else:
                log.warning("renewing the lease of node %s failed: %s", beat.name, exc)
            return
        self.renewals += 1

    async def _post_status(self, beat: _Beat) -> None:
        conditions = UNKNOWN if beat.down else HEALTHY
        body = {"status": {"conditions": condition_list(conditions, rfc3339(), beat.since)}}
        try:
            await rest.request(
                self.client,
                "PATCH",
                NODES.path(name=beat.name, subresource="status"),
                body=body,
                content_type=MERGE,
            )
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                log.warning("node %s was deleted; no longer heartbeating it", beat.name)
                self.remove(beat.name)
                if self.on_gone is not None:
                    self.on_gone(beat.name)
                return
            log.warning("posting the status of node %s failed: %s", beat.name, exc)
            return
        self.heartbeats += 1
