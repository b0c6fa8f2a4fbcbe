"""Per-queue accounting shared by the queue-sharing plugins (proportion, capacity).

``QueueAttr`` holds a queue's figures for one session: allocated (Σ requests of tasks in
the allocated set), request (allocated plus pending), inqueue (minimums reserved by
admitted jobs that are not yet satisfied), elastic (allocation above the jobs'
minimums), guarantee, capability, real capability, deserved and share. The rules are
Volcano's (§6.2); what differs between the plugins (how deserved is found, what bounds
allocation) stays in the plugins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import EPS, Vector, exceeded_part
from lahar.scheduler.api.task import ALLOCATED_SET, TaskStatus
from lahar.scheduler.framework.session import QueueStats, Session

S = TaskStatus


@dataclass(eq=False)
class QueueAttr:
    queue: QueueInfo
    allocated: Vector
    request: Vector
    inqueue: Vector
    elastic: Vector
    guarantee: Vector
    capability: Vector
    real_capability: Vector
    deserved: Vector
    share: float = 0.0

    @property
    def name(self) -> str:
        return self.queue.name

    def update_share(self, empty_share: float = 0.0) -> None:
        dims = (self.deserved >= EPS).nonzero()[0]
        if dims.shape[0] == 0:
            self.share = empty_share
            return
        # every deserved[c] here is >= 0.1: share()'s zero rule never applies
        self.share = float((self.allocated[dims] / self.deserved[dims]).max())

    def stats(self) -> QueueStats:
        return QueueStats(
            deserved=self.deserved.copy(),
            allocated=self.allocated.copy(),
            request=self.request.copy(),
            share=self.share,
        )


def remaining_min(job: JobInfo) -> Vector:
    """``max(minResources - allocated, 0)`` on the dims minResources lists, minus the
    requests of gated pods (floored at 0)."""
    assert job.min_resources is not None
    listed = job.min_resources > 0
    rest = np.where(listed, np.maximum(job.min_resources - job.allocated, 0.0), 0.0)
    return np.maximum(rest - job.gated_request(), 0.0)


def counts_inqueue(job: JobInfo) -> bool:
    if job.min_resources is None:
        return False
    if job.phase == "Inqueue":
        return True
    return job.phase == "Running" and job.count(*ALLOCATED_SET) >= job.min_available


def real_capability(total: Vector, total_guarantee: Vector, queue: QueueInfo) -> Vector:
    base = exceeded_part(total, total_guarantee) + queue.guarantee
    return np.minimum(base, queue.capability)


def build_attrs(ssn: Session, queue_names: list[str]) -> dict[str, QueueAttr]:
    """Attributes for the given queues (Σ over the session's jobs)."""
    zeros = ssn.space.zeros
    total_guarantee = zeros()
    for queue in ssn.queues.values():
        total_guarantee += queue.guarantee
    attrs: dict[str, QueueAttr] = {}
    for name in queue_names:
        queue = ssn.queues[name]
        attrs[name] = QueueAttr(
            queue=queue,
            allocated=zeros(),
            request=zeros(),
            inqueue=zeros(),
            elastic=zeros(),
            guarantee=queue.guarantee.copy(),
            capability=queue.capability.copy(),
            real_capability=real_capability(ssn.total_resource, total_guarantee, queue),
            deserved=zeros(),
        )
    for job in ssn.jobs.values():
        attr = attrs.get(job.queue)
        if attr is None:
            continue
        attr.allocated += job.allocated
        attr.request += job.allocated
        for task in job.tasks_in(S.PENDING):
            attr.request += task.resreq
        if counts_inqueue(job):
            attr.inqueue += remaining_min(job)
        minimum = job.min_resources if job.min_resources is not None else zeros()
        attr.elastic += exceeded_part(job.allocated, minimum)
    return attrs


def queues_with_jobs(ssn: Session) -> list[str]:
    return sorted({job.queue for job in ssn.jobs.values() if job.queue in ssn.queues})
