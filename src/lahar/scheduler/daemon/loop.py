"""The scheduling cycle: snapshot, session, dispatch, status, metrics, every period.

One cycle (Volcano's ``runOnce``, §2.1): take the configuration in force (re-read if
its file changed), snapshot the cache (one consistent instant, overlays applied), run
the session (build the input, open, actions, close: the pure core, in a worker thread
so the event loop keeps serving informers, binds and probes), hand binds to the
binder and evictions to the evictor (both asynchronous), write PodGroup and Queue
status (awaited, like Volcano's job updater), and observe the metrics. A cycle that
fails is logged and counted; the loop goes on.

Cycles start one period apart, and a cycle that overran the period is followed at
once. Volcano (``wait.Until``) instead waits a whole period after each cycle *ended*.
Under load a cycle lasts seconds, mostly waiting for its PodGroup status writes
behind the cluster's other traffic, and the pods created meanwhile then sat a
further idle second: in ``lahar bench e2e`` that idle second was most of the tail
between the last create and the last bind. Cycles still never overlap.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import lightkube

from lahar.kube.events import EventRecorder
from lahar.kube.factory import InformerFactory
from lahar.scheduler.api.cluster import ClusterInfo
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.daemon.binder import Binder, BindRequest, since_created
from lahar.scheduler.daemon.cache import SchedulerCache, Snapshot, build
from lahar.scheduler.daemon.config import ConfigSource
from lahar.scheduler.daemon.evictor import Evictor, EvictRequest
from lahar.scheduler.daemon.metrics import SchedulerMetrics
from lahar.scheduler.daemon.options import SchedulerOptions
from lahar.scheduler.daemon.podgroups import PodGroupWriter
from lahar.scheduler.daemon.queues import QueueWriter
from lahar.scheduler.framework.conf import SchedulerConfiguration
from lahar.scheduler.framework.session import Session
from lahar.scheduler.gcpause import paused_gc
from lahar.scheduler.run import SessionResult, run_session

__all__ = ["CycleReport", "Scheduler", "next_cycle_in"]

log = logging.getLogger("lahar.scheduler")
S = TaskStatus


@dataclass
class CycleReport:
    """What one cycle did (for logs and tests)."""

    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    result: SessionResult | None = None
    podgroup_writes: int = 0
    queue_writes: int = 0
    seconds: float = 0.0


@dataclass
class _Computed:
    cluster: ClusterInfo
    bad: dict[str, tuple[str, str]]
    ssn: Session
    result: SessionResult
    timings: dict[str, Any]
    build_seconds: float


class Scheduler:
    """The scheduler proper: owns the cache overlays, the binder and the writers."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        informers: InformerFactory,
        options: SchedulerOptions,
        metrics: SchedulerMetrics,
        recorder: EventRecorder,
    ) -> None:
        self.options = options
        self.metrics = metrics
        self.cache = SchedulerCache(informers, options.scheduler_names)
        self.config = ConfigSource(
            options.scheduler_conf,
            on_reload=lambda result: metrics.config_reloads.labels(result).inc(),
        )
        self.binder = Binder(client, self.cache, recorder, metrics, workers=options.bind_workers)
        self.evictor = Evictor(client, self.cache, recorder, metrics, workers=options.evict_workers)
        self.podgroups = PodGroupWriter(
            client,
            self.cache,
            recorder,
            workers=options.status_workers,
            pod_events_per_session=options.pod_events_per_session,
        )
        self.queues = QueueWriter(
            client,
            self.cache,
            metrics,
            counts=options.queue_counts,
            workers=options.status_workers,
        )
        self.cycles = 0
        self.last: CycleReport | None = None
        self._scheduled_jobs: dict[str, tuple[str, str, str]] = {}  # uid -> job labels
        self._unsched_jobs: set[str] = set()

    # -- running -------------------------------------------------------------------------

    async def run(self, *, settle: float = 0.0) -> None:
        """Cycle until cancelled. ``settle`` seconds are waited before the first cycle
        (a new leader lets its informers catch up with its predecessor's last binds)."""
        while not await self.cache.wait_for_sync(30):
            log.warning(
                "not scheduling yet: waiting for the caches of %s (CRDs installed? allowed "
                "to list and watch?)",
                ", ".join(self.cache.unsynced()),
            )
        if settle > 0:
            await asyncio.sleep(settle)
        try:
            while True:
                began = time.monotonic()
                try:
                    await self.run_once()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self.metrics.sessions.labels("error").inc()
                    log.exception("scheduling cycle failed")
                await asyncio.sleep(
                    next_cycle_in(began, time.monotonic(), self.options.schedule_period)
                )
        finally:
            await self.binder.close()
            await self.evictor.close()

    async def run_once(self) -> CycleReport:
        """One cycle; returns once statuses are written (binds may still be in flight).

        The cyclic collector stays paused for the whole cycle, not only while the
        snapshot is built and the session runs: the session's objects (hundreds of
        thousands for a large cluster) are freed by reference counting when the cycle
        ends, before the collector sees them. Re-enabled right after the build, its
        first young collection walked all of them: ~5% of a busy scheduler's CPU."""
        with paused_gc():
            return await self._cycle()

    async def _cycle(self) -> CycleReport:
        start = time.perf_counter()
        conf = self.config.current()
        snap = self.cache.snapshot()
        if self.options.session_in_thread:
            done = await asyncio.to_thread(self._compute, snap, conf)
        else:
            done = self._compute(snap, conf)
        if done.bad:
            self.cache.set_aside(done.bad)
        report = CycleReport(result=done.result)
        report.binds, report.evictions = self._dispatch(done.ssn)
        report.podgroup_writes = await self.podgroups.write(done.ssn, done.result.pod_groups)
        report.queue_writes = await self.queues.write(done.ssn)
        report.seconds = time.perf_counter() - start
        self._observe(done, report)
        self.cycles += 1
        self.last = report
        if report.binds or report.evictions:
            log.info(
                "session %d: %d binds, %d evictions in %.1f ms",
                self.cycles,
                len(report.binds),
                len(report.evictions),
                report.seconds * 1000,
            )
        return report

    def _compute(self, snap: Snapshot, conf: SchedulerConfiguration) -> _Computed:
        """The pure part: build the session input and run the session."""
        begin = time.perf_counter()
        cluster, bad = build(snap)
        built = time.perf_counter() - begin
        timings: dict[str, Any] = {}
        ssn, result = run_session(
            cluster, conf, seed=self.options.seed, now=time.time(), timings=timings
        )
        return _Computed(cluster, bad, ssn, result, timings, built)

    # -- dispatch ------------------------------------------------------------------------

    def _dispatch(self, ssn: Session) -> tuple[dict[str, str], list[str]]:
        tasks = ssn.tasks_by_uid
        by_job: dict[str, list[BindRequest]] = {}
        for uid, node in ssn.binds.items():
            task = tasks.get(uid)
            if task is None:
                continue
            pod_uid = str(task.pod.get("metadata", {}).get("uid") or uid)
            by_job.setdefault(task.job, []).append(
                BindRequest(task.namespace, task.name, pod_uid, node, task.job, task.creation)
            )
        binds: dict[str, str] = {}
        for group in by_job.values():  # one job's binds go out together
            self.binder.submit(group)
            binds.update((req.key, req.node) for req in group)
        evictions: list[EvictRequest] = []
        for uid, reason in ssn.evictions.items():
            task = tasks.get(uid)
            if task is None:
                continue
            job = ssn.jobs.get(task.job)
            pg_uid = str((job.podgroup.get("metadata") or {}).get("uid") or "") if job else ""
            evictions.append(
                EvictRequest(
                    task.namespace,
                    task.name,
                    str(task.pod.get("metadata", {}).get("uid") or uid),
                    reason,
                    job.name if job else "",
                    pg_uid,
                )
            )
        nominations = {tasks[u].key: n for u, n in ssn.nominations.items() if u in tasks}
        if evictions or nominations:
            self.evictor.submit(evictions, nominations)
        return binds, [e.key for e in evictions]

    # -- metrics -------------------------------------------------------------------------

    def _observe(self, done: _Computed, report: CycleReport) -> None:
        m = self.metrics
        t = done.timings
        m.sessions.labels("success").inc()
        m.e2e.observe(report.seconds * 1000)
        m.open_session.observe((done.build_seconds + float(t.get("open", 0.0))) * 1000)
        for action, seconds in (t.get("actions") or {}).items():
            m.action_ms.labels(action).observe(seconds * 1000)
            m.action_us.labels(action).observe(seconds * 1e6)
        for phase, key in (("OnSessionOpen", "open"), ("OnSessionClose", "close")):
            seconds = float(t.get(key, 0.0))
            m.plugin_ms.labels("all", phase).observe(seconds * 1000)
            m.plugin_us.labels("all", phase).observe(seconds * 1e6)
        ssn = done.ssn
        m.victims.set(len(ssn.evictions))
        if ssn.nominations:
            m.preemption_attempts.inc(len(ssn.nominations))
        unsched_jobs: set[str] = set()
        for uid, job in ssn.jobs.items():
            failed = len(job.fit_errors)
            if failed:
                m.attempts.labels("unschedulable").inc(failed)
            if job.out_phase in ("Pending", "Inqueue", "Unknown") and job.tasks:
                unsched_jobs.add(uid)
                m.unschedule_tasks.labels(uid).set(job.count(S.PENDING))
            if uid not in self._scheduled_jobs and any(t in ssn.binds for t in job.tasks):
                self._job_latency(uid, job)
        for uid in self._unsched_jobs - unsched_jobs:
            m.unschedule_tasks.remove(uid)
        self._unsched_jobs = unsched_jobs
        m.unschedule_jobs.set(len(unsched_jobs))
        for uid in [u for u in self._scheduled_jobs if u not in ssn.jobs]:
            labels = self._scheduled_jobs.pop(uid)
            for gauge in (m.job_duration, m.job_start, m.job_last):
                gauge.remove(*labels)

    def _job_latency(self, uid: str, job: Any) -> None:
        """A job that reached minMember with binds of this scheduler: its latency from
        PodGroup creation (jobs found running after a restart are not counted)."""
        if uid in self._scheduled_jobs or job.ready_task_num() < max(job.min_available, 1):
            return
        created = str((job.podgroup.get("metadata") or {}).get("creationTimestamp") or "")
        ms = since_created(created)
        if ms is None:
            return
        labels = (job.name, job.queue, job.namespace)
        self._scheduled_jobs[uid] = labels
        m = self.metrics
        m.e2e_job.observe(ms)
        m.job_duration.labels(*labels).set(ms)
        now = time.time()
        m.job_start.labels(*labels).set(now - ms / 1000)
        m.job_last.labels(*labels).set(now)


def next_cycle_in(began: float, now: float, period: float) -> float:
    """Seconds to wait before the next cycle: the rest of the period the last one
    ``began`` in, nothing if it overran (see the module docstring)."""
    return max(0.0, began + period - now)
