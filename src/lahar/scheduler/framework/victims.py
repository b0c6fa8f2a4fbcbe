"""Victim eviction order (Volcano's ``BuildVictimsPriorityQueue``, §2.3).

Within a job the lowest-priority task goes first; a victim whose job left the session
goes first; jobs of one queue in reverse JobOrder; different queues by VictimQueueOrder,
falling back to the queue that would be served last. Used by the preempt and reclaim
actions and by plugins that walk candidates in eviction order (capacity).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.session import Session


def victim_order(ssn: Session, preemptor: TaskInfo) -> Callable[[TaskInfo, TaskInfo], int]:
    preemptor_job = ssn.jobs.get(preemptor.job)

    def compare(left: TaskInfo, right: TaskInfo) -> int:
        if left.job == right.job:
            return ssn.compare_tasks(right, left)
        lj, rj = ssn.jobs.get(left.job), ssn.jobs.get(right.job)
        if lj is None or rj is None:
            return (lj is not None) - (rj is not None)
        if lj.queue != rj.queue and preemptor_job is not None:
            lq, rq = ssn.queues.get(lj.queue), ssn.queues.get(rj.queue)
            pq = ssn.queues.get(preemptor_job.queue)
            if lq is not None and rq is not None:
                result = ssn.victim_queue_order.compare(lq, rq, pq)
                return result or ssn.compare_queues(rq, lq)
        result = ssn.job_order.compare(lj, rj)
        return -result if result else ssn.compare_tasks(right, left)

    return compare


def sort_victims(ssn: Session, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
    return sorted(victims, key=functools.cmp_to_key(victim_order(ssn, preemptor)))
