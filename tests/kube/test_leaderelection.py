"""Leader election within one process: acquire, standby, release on shutdown, the
renew deadline, and the 409 race. (Failover between processes: test_failover.py.)"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import lightkube
import pytest

from lahar.apiserver.server import APIServer
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.leaderelection import (
    LEASES,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
)
from tests.kube.conftest import eventually


class Gate:
    """An ASGI app that forwards to ``app`` while open and holds requests while closed."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.open = asyncio.Event()
        self.open.set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.open.wait()
        await self.app(scope, receive, send)


def config(identity: str, **kw: Any) -> LeaderElectionConfig:
    timing = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
    timing.update(kw)
    return LeaderElectionConfig(name="lock", namespace="default", identity=identity, **timing)


class Candidate:
    """An elector in a task, recording when it started and stopped leading."""

    def __init__(self, client: lightkube.AsyncClient, cfg: LeaderElectionConfig) -> None:
        self.loop = asyncio.get_running_loop()
        self.started: list[float] = []
        self.stopped: list[float] = []
        self.work_cancelled: list[float] = []
        self.elector = LeaderElector(
            client,
            cfg,
            on_started_leading=self._lead,
            on_stopped_leading=lambda: self.stopped.append(self.loop.time()),
        )
        self.task = asyncio.create_task(self.elector.run())

    async def _lead(self) -> None:
        self.started.append(self.loop.time())
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.work_cancelled.append(self.loop.time())
            raise

    async def cancel(self) -> None:
        """Cancel the elector and wait (bounded) for it to stop. The caller's own
        cancellation (a test's deadline) is not swallowed."""
        self.task.cancel()
        done, _ = await asyncio.wait({self.task}, timeout=5)
        assert done, "the elector did not stop within 5 s of being cancelled"
        if not self.task.cancelled():
            with contextlib.suppress(LeadershipLost):
                self.task.result()


async def lease(client: lightkube.AsyncClient) -> dict[str, Any]:
    return (await rest.request(client, "GET", LEASES.path("default", "lock")))["spec"]


def test_config_validates_timing() -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig(name="x", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElectionConfig(name="x", renew_deadline=2, retry_period=2)
    cfg = LeaderElectionConfig(name="x")
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)


async def test_one_leader_and_handover_on_clean_shutdown(client: lightkube.AsyncClient) -> None:
    a = Candidate(client, config("a"))
    await eventually(lambda: bool(a.started))
    b = Candidate(client, config("b"))
    try:
        spec = await lease(client)
        assert spec["holderIdentity"] == "a" and spec["leaseTransitions"] == 0
        assert spec["leaseDurationSeconds"] == 1 and spec["acquireTime"] and spec["renewTime"]
        first_renew = spec["renewTime"]
        await asyncio.sleep(1.5)  # longer than the lease: a keeps renewing, b waits
        assert not b.started and a.elector.is_leader
        assert b.elector.leader == "a"
        spec = await lease(client)
        assert spec["renewTime"] > first_renew and spec["acquireTime"] < spec["renewTime"]
        t0 = a.loop.time()
        await a.cancel()  # releases the lease
        assert a.stopped and a.work_cancelled and not a.elector.is_leader
        await eventually(lambda: bool(b.started), timeout=5)
        assert b.started[0] - t0 < 0.8  # did not wait for the lease to expire
        spec = await lease(client)
        assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    finally:
        await a.cancel()
        await b.cancel()


async def test_cancel_right_after_a_renewal_stops_the_elector(
    client: lightkube.AsyncClient,
) -> None:
    """A cancellation that arrives after a renewal finished but before the elector's loop
    resumed must stop it (asyncio.wait_for on Python 3.11 swallowed it: the cancelled
    elector kept renewing forever, and whoever awaited it hung)."""
    elector = LeaderElector(client, config("a"))
    task = asyncio.create_task(elector.run())
    renewals = 0
    attempt = elector.try_acquire_or_renew

    async def renew() -> bool:
        nonlocal renewals
        ok = await attempt()
        renewals += 1
        if renewals == 3:  # the first acquire, then renewals inside the renew loop
            asyncio.get_running_loop().call_soon(task.cancel)
        return ok

    elector.try_acquire_or_renew = renew  # type: ignore[method-assign]
    try:
        done, _ = await asyncio.wait({task}, timeout=3)
        assert done and task.cancelled(), f"still running after {renewals} attempts"
        assert not elector.is_leader
        assert (await lease(client))["holderIdentity"] == ""  # released on the way out
    finally:
        task.cancel()
        await asyncio.wait({task}, timeout=5)


async def test_leader_that_cannot_renew_stops_before_another_takes_over(
    server: APIServer, client: lightkube.AsyncClient
) -> None:
    gate = Gate(server.app)
    a_client = kclient.in_process(gate, token=server.creds.token)
    a = Candidate(a_client, config("a"))
    b: Candidate | None = None
    try:
        await eventually(lambda: bool(a.started))
        b = Candidate(client, config("b"))
        await asyncio.sleep(0.3)
        gate.open.clear()  # a's requests now hang: it cannot renew
        cut = a.loop.time()
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(a.task, 5)
        await eventually(lambda: bool(b.started), timeout=5)
        # a stopped within its renew deadline (measured from its last renew, before the cut)
        assert a.stopped[0] - cut <= 0.6 + 0.4
        assert a.work_cancelled[0] <= a.stopped[0] < b.started[0]
        assert b.started[0] - cut >= 0.6  # b waited out the lease (1 s since the last renew)
    finally:
        gate.open.set()
        await a.cancel()
        if b is not None:
            await b.cancel()
        await a_client.close()


async def test_concurrent_writers_one_wins(client: lightkube.AsyncClient) -> None:
    a = LeaderElector(client, config("a"))
    b = LeaderElector(client, config("b"))
    results = await asyncio.gather(a.try_acquire_or_renew(), b.try_acquire_or_renew())
    assert sorted(results) == [False, True]  # both saw no lease; one create got 409
    leader, other = (a, b) if results[0] else (b, a)
    await asyncio.sleep(1.1)  # the lease expires from other's point of view
    c = LeaderElector(client, config("c"))
    assert not await c.try_acquire_or_renew()  # c has only just seen it: must wait
    await asyncio.sleep(1.1)
    results = await asyncio.gather(other.try_acquire_or_renew(), c.try_acquire_or_renew())
    assert sorted(results) == [False, True]  # same resourceVersion read; one PUT got 409
    spec = await lease(client)
    assert spec["holderIdentity"] in ("b", "c", "a") and spec["holderIdentity"] != leader.identity
    assert spec["leaseTransitions"] == 1
