"""The scheduler as a daemon: a manager around the cycle, and the ``lahar up`` entry point.

:class:`SchedulerDaemon` wires the pieces on a :class:`~lahar.kube.manager.Manager`:
shared informers for the five kinds (warm on a standby replica too), the cycle as a
task that runs only while holding the Lease when leader election is on, the
``volcano_*`` metrics in the manager's registry (served on its ``/metrics`` next to
``/healthz`` and ``/readyz``), and Events from the component named after the
scheduler (``volcano``), as Volcano's recorder signs them.

Leader election uses the Lease named after the component, ``volcano`` (Volcano's lock
name: its one scheduler name, else ``volcano``), in ``kube-system`` by default. A replica that loses the Lease stops the cycle (its
in-flight binds are given a few seconds to finish) and :meth:`run` raises
``LeadershipLost``: the process should exit and be restarted, as Volcano's does. A
new leader waits one schedule period before its first session, so its informers have
caught up with the last binds of the leader before it.
"""

from __future__ import annotations

import logging

import lightkube
from prometheus_client import CollectorRegistry

from lahar.kube.factory import InformerFactory
from lahar.kube.manager import Manager
from lahar.scheduler.daemon.metrics import SchedulerMetrics
from lahar.scheduler.daemon.options import SchedulerOptions

__all__ = ["SchedulerDaemon", "run_scheduler"]

log = logging.getLogger("lahar.scheduler")


class SchedulerDaemon:
    """A manager running one scheduler (see the module docstring)."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        *,
        informers: InformerFactory | None = None,
        options: SchedulerOptions | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        from lahar.scheduler.daemon.loop import Scheduler

        self.options = options = options or SchedulerOptions()
        election = options.election()
        self.manager = Manager(
            client,
            name="lahar-scheduler",
            informers=informers,
            leader_election=election,
            health_host=options.health_host,
            health_port=options.health_port,
            registry=registry,
        )
        self.metrics = SchedulerMetrics(
            self.manager.metrics.registry, queue_counts=options.queue_counts
        )
        recorder = self.manager.recorder(options.component)
        self.scheduler = Scheduler(client, self.manager.informers, options, self.metrics, recorder)
        self._settle = options.schedule_period if election is not None else 0.0
        self.manager.add(self._cycle, needs_leader=True)
        self.manager.add_ready_check("scheduler-caches", lambda: self.scheduler.cache.has_synced)

    async def _cycle(self) -> None:
        await self.scheduler.run(settle=self._settle)

    @property
    def port(self) -> int | None:
        """The health/metrics endpoint's port (once started)."""
        return self.manager.port

    @property
    def is_leader(self) -> bool:
        return self.manager.is_leader

    async def run(self) -> None:
        """Run until cancelled or stopped; raises ``LeadershipLost`` if the Lease is lost."""
        log.info(
            "scheduler %s starting (period %.3gs, configuration %s, leader election %s)",
            ",".join(self.options.scheduler_names),
            self.options.schedule_period,
            self.options.scheduler_conf or "built-in default",
            "on" if self.manager.leader_election else "off",
        )
        await self.manager.run()

    def stop(self) -> None:
        self.manager.stop()


async def run_scheduler(
    client: lightkube.AsyncClient,
    *,
    informers: InformerFactory | None = None,
    options: SchedulerOptions,
    registry: CollectorRegistry | None = None,
) -> None:
    """Run the Volcano-compatible scheduler until cancelled (``lahar up`` calls this).

    ``informers``: the process's shared factory (the scheduler adds Nodes, Pods,
    PodGroups, Queues and PriorityClasses to it); None builds a private one.
    ``registry``: where the ``volcano_*`` and runtime metrics go (None: the daemon's
    own, served on its health port); pass the process's registry to serve them from
    one endpoint, with ``options.health_port=None``.
    """
    await SchedulerDaemon(client, informers=informers, options=options, registry=registry).run()
