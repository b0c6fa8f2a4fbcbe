"""enqueue: admit pending PodGroups into their queues (phase Pending -> Inqueue, §4.1).

Queues take turns by QueueOrder; within a queue jobs go by JobOrder. A job without
``minResources`` is admitted unconditionally (even into a closed queue, as in Volcano);
otherwise the plugins vote (JobEnqueueable) and an admitted job reserves its minimum
through JobEnqueued.
"""

from __future__ import annotations

from lahar.scheduler.actions.common import PriorityQueue
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.framework.session import Session


def execute(ssn: Session) -> None:
    job_heaps: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.queue not in ssn.queues:
            continue
        heap = job_heaps.setdefault(job.queue, PriorityQueue(ssn.compare_jobs))
        if job.is_pending():
            heap.push(job)
    queues = PriorityQueue(ssn.compare_queues, (ssn.queues[q] for q in sorted(job_heaps)))
    while queues:
        queue = queues.pop()
        jobs = job_heaps[queue.name]
        if not jobs:
            continue
        job = jobs.pop()
        if job.min_resources is None or ssn.job_enqueueable.check(job):
            ssn.job_enqueued.notify(job)
            job.phase = "Inqueue"
            job.enqueue_rejected.clear()
        queues.push(queue)
