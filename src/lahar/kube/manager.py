"""The manager: one object that runs a daemon's informers, controllers and leader election.

A daemon (scheduler, operator, controllers) builds a :class:`Manager`, adds its
controllers and other long-running tasks, and awaits :meth:`Manager.run`. The manager:

* serves ``/healthz``, ``/readyz`` (ready once every cache has synced) and
  ``/metrics`` (controller-runtime's metric names, from this manager's own registry)
  on 127.0.0.1, port 0 by default;
* starts the shared informers at once, so caches are warm on a standby replica too;
* runs the controllers and the tasks that ``need_leader`` only while holding the
  Lease, when leader election is configured, and the other tasks always;
* stops everything when :meth:`stop` is called or the task is cancelled (releasing
  the Lease), and raises :class:`~lahar.kube.leaderelection.LeadershipLost` if the
  Lease was lost: the daemon should exit and be restarted, as controller-runtime's
  managers do, rather than carry on with state built while it was the leader.

Several managers in one process share caches by being given the same
:class:`~lahar.kube.factory.InformerFactory`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import lightkube
from prometheus_client import CollectorRegistry

from lahar.kube.cache import Cache
from lahar.kube.controller import Controller
from lahar.kube.events import EventRecorder
from lahar.kube.factory import InformerFactory
from lahar.kube.health import Check, ProbeServer
from lahar.kube.leaderelection import LeaderElectionConfig, LeaderElector
from lahar.kube.metrics import ControllerMetrics
from lahar.kube.ratelimit import RateLimiter
from lahar.kube.reconcile import Reconciler
from lahar.kube.resource import Resource

__all__ = ["Manager"]

log = logging.getLogger("lahar.kube.manager")
Runnable = Callable[[], Awaitable[Any]]


class Manager:
    """Runs informers, controllers, other tasks, leader election and the probe endpoint."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        *,
        name: str = "lahar",
        informers: InformerFactory | None = None,
        leader_election: LeaderElectionConfig | None = None,
        health_host: str = "127.0.0.1",
        health_port: int | None = 0,
        registry: CollectorRegistry | None = None,
        sync_timeout: float | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self._own_informers = informers is None
        self.informers = informers if informers is not None else InformerFactory(client)
        self.metrics = ControllerMetrics(registry)
        self.leader_election = leader_election
        self.sync_timeout = sync_timeout
        self.probes = (
            ProbeServer(self.metrics.registry, host=health_host, port=health_port)
            if health_port is not None
            else None
        )
        self.elector: LeaderElector | None = None
        self.controllers: list[Controller] = []
        self._runnables: list[tuple[Runnable, bool]] = []
        self._recorders: dict[str, EventRecorder] = {}
        self._stop: asyncio.Event | None = None
        self._started = asyncio.Event()
        self._leading = leader_election is None
        if self.probes is not None:
            self.probes.ready_checks["informers"] = lambda: self.informers.has_synced

    # -- building ----------------------------------------------------------------------

    def controller(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter | None = None,
    ) -> Controller:
        """A new controller on this manager's caches and metrics (wire it with ``for_``)."""
        if any(c.name == name for c in self.controllers):
            raise ValueError(f"controller {name!r} already exists")
        ctrl = Controller(
            name,
            reconciler,
            self.informers,
            max_concurrent_reconciles=max_concurrent_reconciles,
            rate_limiter=rate_limiter,
            metrics=self.metrics,
            sync_timeout=self.sync_timeout,
        )
        self.controllers.append(ctrl)
        return ctrl

    def add(self, runnable: Runnable, *, needs_leader: bool = True) -> None:
        """Run ``runnable()`` with the manager (only while leading, unless told not to)."""
        self._runnables.append((runnable, needs_leader))

    def add_health_check(self, name: str, check: Check) -> None:
        if self.probes is not None:
            self.probes.health_checks[name] = check

    def add_ready_check(self, name: str, check: Check) -> None:
        if self.probes is not None:
            self.probes.ready_checks[name] = check

    def cache(self, resource: Resource | type[Any], **kwargs: Any) -> Cache:
        """The shared cache of ``resource`` (reads; write through the client)."""
        return self.informers.cache(resource, **kwargs)

    def recorder(self, component: str) -> EventRecorder:
        """The event recorder of ``component`` (one per component, flushed on stop)."""
        rec = self._recorders.get(component)
        if rec is None:
            rec = self._recorders[component] = EventRecorder(self.client, component)
        return rec

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def port(self) -> int | None:
        """The probe endpoint's port (known once started)."""
        return self.probes.port if self.probes is not None else None

    async def wait_started(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._started.wait(), timeout)

    # -- running -----------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to stop everything and return."""
        if self._stop is not None:
            self._stop.set()

    async def run(self) -> None:
        """Run until :meth:`stop`, cancellation, a failing task or a lost Lease."""
        self._stop = asyncio.Event()
        if self.probes is not None:
            await self.probes.start()
        self.informers.start()
        main = asyncio.create_task(self._main(), name=f"{self.name} manager")
        stopped = asyncio.create_task(self._stop.wait())
        self._started.set()
        try:
            done, _ = await asyncio.wait({main, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if main in done:
                main.result()
        finally:
            for task in (main, stopped):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for rec in self._recorders.values():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(rec.close(), 5)
            if self._own_informers:
                await self.informers.stop()
            if self.probes is not None:
                await self.probes.stop()
            self._started.clear()
            log.info("manager %s stopped", self.name)

    async def _main(self) -> None:
        always = [fn for fn, needs_leader in self._runnables if not needs_leader]
        jobs: list[Runnable] = [*always, self._campaign if self.leader_election else self._lead]
        await _run_all(jobs)

    async def _campaign(self) -> None:
        assert self.leader_election is not None
        gauge = self.metrics.leader.labels(self.leader_election.name)
        gauge.set(0)

        def status(leading: bool) -> None:
            self._leading = leading
            gauge.set(1 if leading else 0)

        self.elector = LeaderElector(
            self.client,
            self.leader_election,
            on_started_leading=self._lead,
            on_leader_status=status,
        )
        await self.elector.run()

    async def _lead(self) -> None:
        leader_jobs = [fn for fn, needs_leader in self._runnables if needs_leader]
        await _run_all([*(c.run for c in self.controllers), *leader_jobs])
        await asyncio.Event().wait()  # everything returned: keep the Lease until stopped


async def _run_all(jobs: Iterable[Runnable]) -> None:
    """Run the jobs together; the first one to fail cancels the others and re-raises."""
    tasks = {asyncio.create_task(job()) for job in jobs}
    try:
        while tasks:
            done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
