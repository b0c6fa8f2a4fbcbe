"""Session: one scheduling cycle over a snapshot (Volcano's ``framework.Session``).

Opening a session builds the configured plugins tier by tier and lets each register its
callbacks in the typed registries below. Actions then read the session through the
combined callbacks (``job_ready``, ``compare_jobs``...) and change it only through
statements (or :meth:`allocate` for backfill). Decisions accumulate in ``binds`` and
``evictions``; ``close`` lets plugins write back and computes PodGroup phases.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lahar.scheduler.api.cluster import ClusterInfo
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import Vector
from lahar.scheduler.api.task import TaskInfo, TaskStatus
from lahar.scheduler.framework.conf import SchedulerConfiguration
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import (
    AllRegistry,
    AnyRegistry,
    EventHandler,
    NodeOrderRegistry,
    NotifyRegistry,
    OrderRegistry,
    PredicateRegistry,
    StarvingRegistry,
    ValidRegistry,
    VictimQueueOrderRegistry,
    VictimRegistry,
    VoteRegistry,
)

S = TaskStatus


@dataclass
class QueueStats:
    """Figures a queue-sharing plugin (proportion, capacity) reports at session close."""

    deserved: Vector | None = None
    allocated: Vector | None = None
    request: Vector | None = None
    share: float = 0.0


def _cmp(a: object, b: object) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]


class Session:
    def __init__(
        self,
        cluster: ClusterInfo,
        conf: SchedulerConfiguration,
        *,
        seed: int = 0,
        now: float = 0.0,
    ) -> None:
        self.cluster = cluster
        self.conf = conf
        self.space = cluster.space
        self.nodes = cluster.nodes
        self.jobs: dict[str, JobInfo] = cluster.jobs
        self.queues: dict[str, QueueInfo] = cluster.queues
        self.total_resource: Vector = self.nodes.total_allocatable()
        self.rng = np.random.default_rng(seed)
        self.now = now  # seconds since the epoch; the session's clock (sla waiting times)
        # unique per session (never printed): PodGroup conditions carry it as transitionID
        self.uid = str(uuid.uuid4())
        self.predicate_offset = 0

        self.job_order = OrderRegistry("jobOrder", "enableJobOrder")
        self.queue_order = OrderRegistry("queueOrder", "enableQueueOrder")
        self.task_order = OrderRegistry("taskOrder", "enableTaskOrder")
        self.victim_queue_order = VictimQueueOrderRegistry("victimQueueOrder", None)
        self.predicates = PredicateRegistry("predicate", "enablePredicate")
        self.node_order = NodeOrderRegistry("nodeOrder", "enableNodeOrder")
        self.preemptable = VictimRegistry("preemptable", "enablePreemptable")
        self.reclaimable = VictimRegistry("reclaimable", "enableReclaimable")
        self.overused = AnyRegistry("overused", "enabledOverused")
        self.allocatable = AllRegistry("allocatable", "enabledAllocatable")
        self.preemptive = AllRegistry("preemptive", "enablePreemptive")
        self.job_ready = AllRegistry("jobReady", "enableJobReady")
        self.job_pipelined = VoteRegistry("jobPipelined", "enableJobPipelined")
        self.job_valid = ValidRegistry("jobValid", None)
        self.job_enqueueable = VoteRegistry("jobEnqueueable", "enableJobEnqueued")
        self.job_enqueued = NotifyRegistry("jobEnqueued", "enableJobEnqueued")
        self.job_starving = StarvingRegistry("jobStarving", "enableJobStarving")
        self.event_handlers: list[EventHandler] = []

        self.plugins: list[Plugin] = []
        self.missing_plugins: list[str] = []
        self.binds: dict[str, str] = {}  # task uid -> node name
        self.evictions: dict[str, str] = {}  # task uid -> reason
        self.nominations: dict[str, str] = {}  # preemptor uid -> node it waits for
        self.queue_stats: dict[str, QueueStats] = {}
        self.tasks_by_uid: dict[str, TaskInfo] = {
            t.uid: t for job in self.jobs.values() for t in job.tasks.values()
        }
        self.closed = False
        # node scores per pod key, filled by the actions when explaining (--explain)
        self.score_log: dict[str, dict[str, float]] | None = None
        # allocate may answer from per-template node caches (actions/nodecache.py); off,
        # every task is computed directly (the reference the cache is tested against)
        self.use_node_cache = True

    # --- lifecycle ---------------------------------------------------------------------

    def open(self) -> None:
        from lahar.scheduler.plugins.registry import plugin_class

        for tier_index, tier in enumerate(self.conf.tiers):
            for option in tier.plugins:
                cls = plugin_class(option.name)
                if cls is None:
                    self.missing_plugins.append(option.name)
                    continue
                plugin = cls(option, tier_index)
                self.plugins.append(plugin)
                plugin.on_session_open(self)

    def close(self) -> None:
        from lahar.scheduler.framework.close import update_job_statuses

        for plugin in self.plugins:
            plugin.on_session_close(self)
        update_job_statuses(self)
        self.closed = True

    def plugin(self, name: str) -> Plugin | None:
        return next((p for p in self.plugins if p.name == name), None)

    # --- orderings with Volcano's fallbacks ---------------------------------------------

    def compare_jobs(self, left: JobInfo, right: JobInfo) -> int:
        result = self.job_order.compare(left, right)
        if result:
            return result
        return _cmp(left.creation, right.creation) or _cmp(left.uid, right.uid)

    def compare_queues(self, left: QueueInfo, right: QueueInfo) -> int:
        result = self.queue_order.compare(left, right)
        if result:
            return result
        return _cmp(left.creation, right.creation) or _cmp(left.name, right.name)

    def compare_tasks(self, left: TaskInfo, right: TaskInfo) -> int:
        result = self.task_order.compare(left, right)
        if result:
            return result
        ls, rs = left.ordinal, right.ordinal
        if ls is not None and rs is not None and ls != rs:
            return _cmp(ls, rs)
        return _cmp(left.creation, right.creation) or _cmp(left.uid, right.uid)

    def task_sort_key(self, tasks: list[TaskInfo]) -> Callable[[TaskInfo], tuple] | None:
        """A key giving exactly :meth:`compare_tasks`' order over ``tasks``, or ``None``.

        It exists when every task-order callback has a key and the name-ordinal fallback
        is a plain lexicographic step for these tasks (all of them have an ordinal, or
        none has): then the comparison is a strict total order, and a heap pops in key
        order. Mixed ordinals can make the fallback intransitive, so callers keep the
        comparison heap."""
        keys = self.task_order.sort_keys()
        if keys is None or not tasks:
            return None
        with_ordinal = tasks[0].ordinal is not None
        if any((t.ordinal is not None) != with_ordinal for t in tasks):
            return None
        if with_ordinal:
            return lambda t: (*[k(t) for k in keys], t.ordinal, t.creation, t.uid)
        return lambda t: (*[k(t) for k in keys], t.creation, t.uid)

    # --- in-session state changes (used by Statement) ----------------------------------

    def _fire(self, task: TaskInfo, allocate: bool) -> None:
        for handler in self.event_handlers:
            fn = handler.allocate if allocate else handler.deallocate
            if fn is not None:
                fn(task)

    def allocate_in_session(self, task: TaskInfo, node: int) -> None:
        job = self.jobs[task.job]
        job.fit_errors.pop(task.uid, None)
        job.update_task_status(task, S.ALLOCATED)
        self.nodes.add_task(node, task)
        self._fire(task, True)

    def pipeline_in_session(self, task: TaskInfo, node: int) -> None:
        job = self.jobs[task.job]
        job.fit_errors.pop(task.uid, None)
        job.update_task_status(task, S.PIPELINED)
        self.nodes.add_task(node, task)
        self._fire(task, True)

    def unplace_in_session(self, task: TaskInfo) -> None:
        """Undo an allocation or a pipeline: back to Pending, off the node."""
        if task.node_index >= 0:
            self.nodes.remove_task(task.node_index, task)
        self.jobs[task.job].update_task_status(task, S.PENDING)
        task.node, task.node_index = None, -1
        self._fire(task, False)

    def evict_in_session(self, task: TaskInfo) -> None:
        self._set_on_node_status(task, S.RELEASING)
        self._fire(task, False)

    def unevict_in_session(self, task: TaskInfo) -> None:
        self._set_on_node_status(task, S.RUNNING)
        self._fire(task, True)

    def _set_on_node_status(self, task: TaskInfo, status: TaskStatus) -> None:
        old = task.status
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, status)
        else:
            task.status = status
        if task.node_index >= 0:
            self.nodes.update_task(task.node_index, task, old)

    # --- decisions ------------------------------------------------------------------------

    def dispatch(self, task: TaskInfo) -> None:
        """Hand an allocated task to the binder: status Binding, recorded as a bind."""
        self._set_on_node_status(task, S.BINDING)
        assert task.node is not None
        self.binds[task.uid] = task.node

    def record_eviction(self, task: TaskInfo, reason: str) -> None:
        self.evictions[task.uid] = reason

    def allocate(self, task: TaskInfo, node: int) -> None:
        """Backfill's direct allocation (no statement): once the job is ready, every
        allocated task of it is dispatched."""
        self.allocate_in_session(task, node)
        job = self.jobs[task.job]
        if self.job_ready.check(job):
            for other in sorted(job.tasks_in(S.ALLOCATED), key=lambda t: t.uid):
                self.dispatch(other)

    # --- helpers for actions --------------------------------------------------------------

    def job_is_ready(self, job: JobInfo) -> bool:
        return self.job_ready.check(job)

    def job_is_pipelined(self, job: JobInfo) -> bool:
        return self.job_pipelined.check(job)

    def job_is_starving(self, job: JobInfo) -> bool:
        return self.job_starving.check(job)

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)


def open_session(
    cluster: ClusterInfo, conf: SchedulerConfiguration, *, seed: int = 0, now: float = 0.0
) -> Session:
    ssn = Session(cluster, conf, seed=seed, now=now)
    ssn.open()
    return ssn


__all__ = ["QueueStats", "Session", "open_session"]
