"""Leader election on a coordination.k8s.io/v1 Lease: at most one active replica.

Replicas of a daemon (scheduler, operator) all run, but only the holder of the Lease
acts. The Lease records ``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
``renewTime`` and ``leaseTransitions``; every write is a replace carrying the
resourceVersion that was read, so of two replicas racing for it one gets 409 Conflict
and loses.

Why two leaders never act at once, even across clock skew:

* A candidate does not trust the ``renewTime`` written by another machine's clock. It
  notes, on its own monotonic clock, when it last saw the Lease *change*, and only
  takes over once the Lease has not changed for ``leaseDurationSeconds`` after that.
* The leader measures its renewals from the moment it *sent* the last successful one
  (which is before the server stored it, hence before any candidate saw it). If it has
  not renewed within ``renew_deadline`` of that moment it stops acting: the leading
  task is cancelled and ``on_stopped_leading`` is called. Since ``renew_deadline <
  lease_duration``, that happens before any candidate may take over.

A clean shutdown releases the Lease (empty holder, ``leaseDurationSeconds: 1``) so a
standby can take over at once instead of waiting out the lease (``release_on_cancel``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import math
import os
import random
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.resource import Resource

__all__ = ["LEASES", "LeaderElectionConfig", "LeaderElector", "LeadershipLost"]

log = logging.getLogger("lahar.kube.leaderelection")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
JITTER = 1.2


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def micro_time(when: dt.datetime | None = None) -> str:
    """A Kubernetes MicroTime: RFC 3339 in UTC with microseconds."""
    return (when or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeadershipLost(Exception):
    """The Lease could not be renewed in time: this replica stopped acting."""


@dataclass
class LeaderElectionConfig:
    """Which Lease to hold and the timing (seconds). Defaults match client-go's."""

    name: str
    namespace: str = "kube-system"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if not self.renew_deadline > JITTER * self.retry_period:
            raise ValueError(f"renew_deadline must be greater than {JITTER} * retry_period")
        if not self.identity:
            raise ValueError("identity must not be empty")


class LeaderElector:
    """Campaign for a Lease, run ``on_started_leading`` while holding it, stop when not."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], Awaitable[Any]] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        on_leader_status: Callable[[bool], None] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.on_leader_status = on_leader_status
        self.leader: str | None = None  # the holder last observed
        self._leading = False
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._path = LEASES.path(config.namespace, config.name)

    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def is_leader(self) -> bool:
        return self._leading

    # -- the whole cycle ---------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead until the Lease is lost (raise :class:`LeadershipLost`), the
        leading coroutine returns, or this task is cancelled (then release)."""
        await self.acquire()
        work: asyncio.Task[Any] | None = None
        if self.on_started_leading is not None:
            work = asyncio.create_task(self.on_started_leading(), name="leader work")
        lost = False
        try:
            lost = not await self._renew_until_lost(work)
        finally:
            await self._stop_leading(work)
            if not lost and self.config.release_on_cancel:
                with contextlib.suppress(Exception):
                    await asyncio.shield(
                        asyncio.wait_for(self.release(), self.config.renew_deadline)
                    )
        if lost:
            raise LeadershipLost(
                f"{self.identity} lost lease {self.config.namespace}/{self.config.name}"
            )
        if work is not None and not work.cancelled() and work.exception() is not None:
            raise work.exception()  # type: ignore[misc]

    async def acquire(self) -> None:
        """Return once this replica holds the Lease."""
        cfg = self.config
        log.info("%s campaigning for lease %s/%s", self.identity, cfg.namespace, cfg.name)
        while True:
            started = asyncio.get_running_loop().time()
            if await self._try_safely():
                self._last_renew = started
                self._set_leading(True)
                log.info("%s acquired lease %s/%s", self.identity, cfg.namespace, cfg.name)
                return
            await asyncio.sleep(cfg.retry_period * (1 + random.random() * JITTER))

    async def _renew_until_lost(self, work: asyncio.Task[Any] | None) -> bool:
        """Renew every retry period. False when the renew deadline passed (or another
        holder was seen); True when ``work`` finished."""
        cfg = self.config
        loop = asyncio.get_running_loop()
        while True:
            if work is not None:
                done, _ = await asyncio.wait({work}, timeout=cfg.retry_period)
                if done:
                    return True
            else:
                await asyncio.sleep(cfg.retry_period)
            deadline = self._last_renew + cfg.renew_deadline
            while True:
                now = loop.time()
                if now >= deadline:
                    log.error(
                        "%s failed to renew lease %s/%s within %.1fs",
                        self.identity,
                        cfg.namespace,
                        cfg.name,
                        cfg.renew_deadline,
                    )
                    return False
                # asyncio.timeout, not wait_for: on Python 3.11, wait_for swallows a
                # cancellation that arrives just after the attempt finished (it returns the
                # result instead), and the cancelled elector would go on renewing forever.
                try:
                    async with asyncio.timeout(deadline - now):
                        ok = await self._try_safely()
                except TimeoutError:
                    ok = False
                if ok:
                    self._last_renew = now
                    break
                if self.leader is not None and self.leader != self.identity:
                    log.error(
                        "%s lost lease %s/%s to %s",
                        self.identity,
                        cfg.namespace,
                        cfg.name,
                        self.leader,
                    )
                    return False
                await asyncio.sleep(max(0.0, min(cfg.retry_period, deadline - loop.time())))

    async def _stop_leading(self, work: asyncio.Task[Any] | None) -> None:
        if work is not None and not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
        if self._leading:
            self._set_leading(False)
            log.info(
                "%s stopped leading lease %s/%s",
                self.identity,
                self.config.namespace,
                self.config.name,
            )
            if self.on_stopped_leading is not None:
                try:
                    self.on_stopped_leading()
                except Exception:
                    log.exception("on_stopped_leading failed")

    def _set_leading(self, leading: bool) -> None:
        self._leading = leading
        if self.on_leader_status is not None:
            self.on_leader_status(leading)

    # -- one attempt -------------------------------------------------------------------

    async def _try_safely(self) -> bool:
        try:
            return await self.try_acquire_or_renew()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("%s: error reading or writing lease %s: %s", self.identity, self._path, exc)
            return False

    async def try_acquire_or_renew(self) -> bool:
        """One attempt: True if this replica holds the Lease afterwards."""
        cfg = self.config
        loop = asyncio.get_running_loop()
        now = micro_time()
        duration = math.ceil(cfg.lease_duration)
        try:
            lease = await rest.request(self.client, "GET", self._path)
        except rest.ApiError as exc:
            if not rest.is_status(exc, 404):
                raise
            spec = {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": duration,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            }
            body = {
                "apiVersion": LEASES.api_version,
                "kind": LEASES.kind,
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": spec,
            }
            try:
                await rest.request(self.client, "POST", LEASES.path(cfg.namespace), body=body)
            except rest.ApiError as exc2:
                if rest.is_status(exc2, 409):
                    return False
                raise
            self._observe(spec, loop.time())
            return True
        spec = lease.get("spec") or {}
        self._observe(spec, loop.time())
        holder = spec.get("holderIdentity") or ""
        held_for = spec.get("leaseDurationSeconds") or duration
        if holder and holder != self.identity and self._observed_at + held_for > loop.time():
            return False
        mine = holder == self.identity
        new_spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": duration,
            "acquireTime": spec.get("acquireTime") if mine and spec.get("acquireTime") else now,
            "renewTime": now,
            "leaseTransitions": (spec.get("leaseTransitions") or 0) + (0 if mine else 1),
        }
        lease["spec"] = new_spec
        try:
            await rest.request(self.client, "PUT", self._path, body=lease)
        except rest.ApiError as exc:
            if rest.is_status(exc, 409):
                return False  # somebody wrote first
            raise
        self._observe(new_spec, loop.time())
        return True

    def _observe(self, spec: dict[str, Any], at: float) -> None:
        record = tuple(
            spec.get(k)
            for k in (
                "holderIdentity",
                "leaseDurationSeconds",
                "acquireTime",
                "renewTime",
                "leaseTransitions",
            )
        )
        if record != self._observed:
            self._observed = record
            self._observed_at = at
        holder = spec.get("holderIdentity") or None
        if holder != self.leader:
            self.leader = holder
            if holder and self.on_new_leader is not None:
                self.on_new_leader(holder)

    async def release(self) -> bool:
        """Give the Lease up if this replica holds it (so a standby takes over at once)."""
        try:
            lease = await rest.request(self.client, "GET", self._path)
        except rest.ApiError:
            return False
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return False
        now = micro_time()
        lease["spec"] = {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": spec.get("leaseTransitions") or 0,
        }
        try:
            await rest.request(self.client, "PUT", self._path, body=lease)
        except rest.ApiError:
            return False
        log.info("%s released lease %s/%s", self.identity, self.config.namespace, self.config.name)
        return True
