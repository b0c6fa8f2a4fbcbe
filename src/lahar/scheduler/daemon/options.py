"""What a running scheduler is told: names, period, configuration file, election, pools.

One dataclass shared by the CLI (``lahar scheduler``), the embedded cluster (``lahar
up`` calls :func:`~lahar.scheduler.daemon.run_scheduler`) and the tests, so every
entry point spells the knobs the same way and defaults match Volcano's flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from lahar.kube.leaderelection import LeaderElectionConfig

# Volcano's scheduler names its Lease after its component name: the scheduler name when
# it serves one (``volcano``), else "volcano". Volcano keeps it in volcano-system; lahar
# in kube-system, which always exists.
DEFAULT_NAME = "volcano"
LOCK_NAMESPACE = "kube-system"


def component_name(scheduler_names: tuple[str, ...]) -> str:
    """Volcano's component name: the one scheduler name, or ``volcano``."""
    return scheduler_names[0] if len(scheduler_names) == 1 else DEFAULT_NAME


@dataclass
class SchedulerOptions:
    """Knobs of the scheduler daemon; the defaults are Volcano's where it has one."""

    scheduler_names: tuple[str, ...] = ("volcano",)
    schedule_period: float = 1.0
    # a volcano-scheduler.conf to read (and re-read when it changes); None: built-in default
    scheduler_conf: str | None = None
    leader_elect: bool = False
    lock_name: str | None = None  # None: the component name (``volcano``)
    lock_namespace: str = LOCK_NAMESPACE
    # full control over the election timing (tests); built from the fields above if None
    leader_election: LeaderElectionConfig | None = None
    # the probe/metrics endpoint: None disables it, 0 picks a free port
    health_port: int | None = 0
    health_host: str = "127.0.0.1"
    # concurrent pods/binding calls (Volcano binds from goroutines; BATCH_BIND_NUM=1)
    bind_workers: int = 32
    evict_workers: int = 8
    # concurrent PodGroup/Queue status writes at session end (Volcano's JobUpdater: 16)
    status_workers: int = 16
    # also write the per-phase PodGroup counts into Queue status (the queue controller
    # owns them; turn this off where that controller runs, e.g. inside `lahar up`)
    queue_counts: bool = True
    # run the session (snapshot build + actions) in a worker thread, so informers, binds
    # and probes keep going while it computes
    session_in_thread: bool = True
    # at most this many per-pod FailedScheduling events per session (the rest follow)
    pod_events_per_session: int = 200
    seed: int = 0

    @property
    def component(self) -> str:
        """The name on Events (``source.component``) and of the Lease, as in Volcano."""
        return component_name(self.scheduler_names)

    def election(self) -> LeaderElectionConfig | None:
        if self.leader_election is not None:
            return self.leader_election
        if not self.leader_elect:
            return None
        return LeaderElectionConfig(
            name=self.lock_name or self.component, namespace=self.lock_namespace
        )
