"""proportion: weighted fair share of the cluster between queues (§6.2).

Each queue's ``deserved`` share is found by water-filling: the remaining cluster is split
by weight among queues still wanting more, each capped by its real capability and by
what it requests and raised to its guarantee, until every queue is satisfied or nothing
is left. Deserved then orders queues (lower share first), bounds allocation
(Allocatable), marks overuse, and selects reclaim victims from queues above it.
"""

from __future__ import annotations

import numpy as np

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import is_empty, less_equal, less_equal_in_dims
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import PERMIT, REJECT, EventHandler
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.queueattrs import QueueAttr, build_attrs, queues_with_jobs
from lahar.scheduler.plugins.registry import register_plugin


def water_fill(attrs: list[QueueAttr], total: np.ndarray) -> None:
    """Compute ``deserved`` for every queue in place (Volcano's proportion loop)."""
    remaining = total.copy()
    met: set[str] = set()
    while True:
        weight = sum(a.queue.weight for a in attrs if a.name not in met)
        if weight == 0:
            break
        before = remaining.copy()
        increased = np.zeros_like(total)
        decreased = np.zeros_like(total)
        for attr in attrs:
            if attr.name in met:
                continue
            old = attr.deserved.copy()
            deserved = attr.deserved + remaining * attr.queue.weight / weight
            deserved = np.minimum(deserved, attr.real_capability)
            deserved = np.minimum(deserved, attr.request)
            attr.deserved = np.maximum(deserved, attr.guarantee)
            attr.update_share()
            if less_equal(attr.request, attr.deserved) or np.array_equal(old, attr.deserved):
                met.add(attr.name)
            delta = attr.deserved - old
            increased += np.maximum(delta, 0.0)
            decreased += np.maximum(-delta, 0.0)
        remaining = np.maximum(remaining + decreased - increased, 0.0)
        if is_empty(remaining) or np.array_equal(remaining, before):
            break


@register_plugin
class ProportionPlugin(Plugin):
    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.attrs = build_attrs(ssn, queues_with_jobs(ssn))
        water_fill(list(self.attrs.values()), ssn.total_resource)
        ssn.queue_order.add(self, self.queue_order)
        ssn.overused.add(self, self.overused)
        ssn.allocatable.add(self, self.allocatable)
        ssn.preemptive.add(self, self.allocatable)
        ssn.reclaimable.add(self, self.reclaimable)
        ssn.job_enqueueable.add(self, self.enqueueable)
        ssn.job_enqueued.add(self, self.enqueued)
        ssn.event_handlers.append(EventHandler(self.on_allocate, self.on_deallocate))

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        if la is None or ra is None or la.share == ra.share:
            return 0
        return -1 if la.share < ra.share else 1

    def overused(self, queue: QueueInfo) -> bool:
        attr = self.attrs.get(queue.name)
        return attr is not None and less_equal(attr.deserved, attr.allocated)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        attr = self.attrs.get(queue.name)
        if attr is None:
            return True
        if not queue.is_open:
            return False
        return less_equal_in_dims(attr.allocated + task.resreq, attr.deserved, task.resreq)

    def reclaimable(
        self, reclaimer: TaskInfo, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        running: dict[str, np.ndarray] = {}
        victims: list[TaskInfo] = []
        for task in candidates:
            job = self.ssn.jobs.get(task.job)
            attr = self.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            allocated = running.setdefault(attr.name, attr.allocated.copy())
            if not less_equal(allocated, attr.deserved):
                allocated -= task.resreq
                victims.append(task)
        return victims, PERMIT

    def enqueueable(self, job: JobInfo) -> int:
        attr = self.attrs.get(job.queue)
        queue = self.ssn.queues[job.queue]
        if not queue.is_open:
            job.enqueue_rejected.append(f"queue {queue.name} is {queue.state}")
            return REJECT
        if job.min_resources is None or attr is None:
            return PERMIT
        want = job.min_resources + attr.allocated + attr.inqueue - attr.elastic
        if less_equal_in_dims(want, attr.real_capability, job.min_resources):
            return PERMIT
        job.enqueue_rejected.append(f"queue {queue.name} resource quota insufficient")
        return REJECT

    def enqueued(self, job: JobInfo) -> None:
        attr = self.attrs.get(job.queue)
        if attr is not None and job.min_resources is not None:
            attr.inqueue += np.maximum(job.min_resources - job.gated_request(), 0.0)

    def _update(self, task: TaskInfo, sign: float) -> None:
        job = self.ssn.jobs.get(task.job)
        attr = self.attrs.get(job.queue) if job is not None else None
        if attr is not None:
            if sign > 0:
                attr.allocated += task.resreq
            else:
                attr.allocated -= task.resreq
            attr.update_share()

    def on_allocate(self, task: TaskInfo) -> None:
        self._update(task, 1.0)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._update(task, -1.0)

    def on_session_close(self, ssn: Session) -> None:
        for name, attr in self.attrs.items():
            ssn.queue_stats[name] = attr.stats()
