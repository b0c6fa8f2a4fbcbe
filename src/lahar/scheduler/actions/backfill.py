"""backfill: place BestEffort tasks (empty requests) of admitted jobs (§4.3).

BestEffort tasks request only `pods: 1`; the resource check against future idle therefore
enforces the node pod count even without the predicates plugin. They are
allocated directly on the session, without a statement; a job's allocations are bound
once the job is ready.
"""

from __future__ import annotations

import functools

import numpy as np

from lahar.scheduler.actions.common import best_scored, predicate_all
from lahar.scheduler.api.fit import FitErrors
from lahar.scheduler.api.task import TaskInfo, TaskStatus
from lahar.scheduler.framework.session import Session

S = TaskStatus


def execute(ssn: Session) -> None:
    for task in _ordered_tasks(ssn):
        job = ssn.jobs[task.job]
        if task.status == S.PIPELINED:
            ssn.unplace_in_session(task)
        result = predicate_all(ssn, task)
        feasible = np.flatnonzero(result.passed)
        if feasible.shape[0] == 0:
            job.fit_errors[task.uid] = FitErrors.from_filter(result)
            continue
        node = int(feasible[0]) if feasible.shape[0] == 1 else best_scored(ssn, task, feasible)
        ssn.allocate(task, node)
        job.fit_errors.pop(task.uid, None)


def _ordered_tasks(ssn: Session) -> list[TaskInfo]:
    by_queue: dict[str, list] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or job.queue not in ssn.queues:
            continue
        if not ssn.job_valid.check(job).passed:
            continue
        tasks = [
            t
            for t in job.tasks_in(S.PENDING, S.PIPELINED)
            if t.best_effort and not (t.status == S.PENDING and t.gated)
        ]
        if tasks:
            by_queue.setdefault(job.queue, []).append((job, tasks))
    queue_key = functools.cmp_to_key(ssn.compare_queues)
    job_key = functools.cmp_to_key(ssn.compare_jobs)
    task_key = functools.cmp_to_key(ssn.compare_tasks)
    ordered: list[TaskInfo] = []
    for queue in sorted((ssn.queues[q] for q in sorted(by_queue)), key=queue_key):
        for _job, tasks in sorted(by_queue[queue.name], key=lambda jt: job_key(jt[0])):
            ordered.extend(sorted(tasks, key=task_key))
    return ordered
