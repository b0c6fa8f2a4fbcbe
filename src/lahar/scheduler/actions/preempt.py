"""preempt: evict lower-priority work of the same queue for starving jobs (§4.4).

Two passes per queue: between jobs (victims from other jobs of the queue) and within a
job (a job's own lower-priority tasks). Victims must be Bound or Running and
preemptable, and a BestEffort preemptor never evicts a non-BestEffort task; the
plugins' Preemptable votes choose among them. Nodes are tried best-score first; on a
node, victims are evicted in victim order until the preemptor fits, then it is pipelined
there (it will be bound in a later session once the victims are gone).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from lahar.scheduler.actions.common import PriorityQueue, predicate_all, sort_by_score
from lahar.scheduler.actions.victims import candidate_nodes, node_tasks
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.resources import less_equal
from lahar.scheduler.api.task import PREEMPTABLE_STATUS, TaskInfo, TaskStatus
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.statement import Statement
from lahar.scheduler.framework.victims import sort_victims

S = TaskStatus


def execute(ssn: Session) -> None:
    job_heaps: dict[str, PriorityQueue[JobInfo]] = {}
    task_heaps: dict[str, PriorityQueue[TaskInfo]] = {}
    under_request: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or job.queue not in ssn.queues:
            continue
        if not ssn.job_valid.check(job).passed or not ssn.job_is_starving(job):
            continue
        job_heaps.setdefault(job.queue, PriorityQueue(ssn.compare_jobs)).push(job)
        pending = [t for t in job.tasks_in(S.PENDING) if not t.gated]
        task_heaps[job.uid] = PriorityQueue(ssn.compare_tasks, sorted(pending, key=lambda t: t.uid))
        under_request.setdefault(job.queue, []).append(job)

    queues = PriorityQueue(ssn.compare_queues, (ssn.queues[q] for q in sorted(job_heaps)))
    while queues:
        queue = queues.pop()
        jobs = job_heaps[queue.name]
        while jobs:
            job = jobs.pop()
            stmt = Statement(ssn)
            tasks = task_heaps[job.uid]
            while ssn.job_is_starving(job) and tasks:
                task = tasks.pop()
                preempt(ssn, stmt, task, _between_jobs(ssn, task))
            if ssn.job_is_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
        for job in under_request.get(queue.name, []):
            pending = [t for t in job.tasks_in(S.PENDING) if not t.gated]
            for task in sorted(pending, key=functools.cmp_to_key(ssn.compare_tasks)):
                stmt = Statement(ssn)
                if preempt(ssn, stmt, task, _within_job(task)):
                    stmt.commit()
                else:
                    stmt.discard()
                    break


def _base_filter(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    if victim.status not in PREEMPTABLE_STATUS or not victim.preemptable:
        return False
    return not (preemptor.best_effort and not victim.best_effort)


def _between_jobs(ssn: Session, preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    queue = ssn.jobs[preemptor.job].queue

    def keep(victim: TaskInfo) -> bool:
        job = ssn.jobs.get(victim.job)
        return (
            _base_filter(preemptor, victim)
            and job is not None
            and job.queue == queue
            and victim.job != preemptor.job
        )

    return keep


def _within_job(preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    def keep(victim: TaskInfo) -> bool:
        return _base_filter(preemptor, victim) and victim.job == preemptor.job

    return keep


def eligible(ssn: Session, task: TaskInfo) -> bool:
    """Volcano's preemption eligibility: never for ``preemptionPolicy: Never``; a task
    already nominated to a node waits while that node is usable or while a lower-priority
    pod there is still terminating for an earlier preemption."""
    if task.preemption_policy == "Never":
        return False
    if not task.nominated_node:
        return True
    node = ssn.nodes.index.get(task.nominated_node)
    if node is None:
        return False
    result = predicate_all(ssn, task, check_resources=False)
    if result.passed[node]:
        return False
    if result.unresolvable is not None and result.unresolvable[node]:
        return True
    mine = task.pod_priority or 0
    for other in ssn.nodes.tasks[node].values():
        lower = other.status == S.RELEASING and (other.pod_priority or 0) < mine
        if lower and _preempted_by_scheduler(other):
            return False
    return True


def _preempted_by_scheduler(task: TaskInfo) -> bool:
    for cond in (task.pod.get("status") or {}).get("conditions") or []:
        if (
            cond.get("type") == "DisruptionTarget"
            and cond.get("status") == "True"
            and cond.get("reason") == "PreemptionByScheduler"
        ):
            return True
    return False


def preempt(
    ssn: Session, stmt: Statement, task: TaskInfo, keep: Callable[[TaskInfo], bool]
) -> bool:
    """Try to make room for ``task`` on one node; True if it was pipelined."""
    if not eligible(ssn, task):
        return False
    job = ssn.jobs[task.job]
    queue = ssn.queues[job.queue]
    nodes = ssn.nodes

    def fits(node: int) -> bool:
        return (
            ssn.allocatable.check(queue, task)
            and less_equal(task.resreq, nodes.future_idle_of(node))
            and (not ssn.predicates or bool(ssn.predicates.run(task, nodes).passed[node]))
        )

    for node in sort_by_score(ssn, task, candidate_nodes(ssn, task)):
        node = int(node)
        candidates = node_tasks(ssn, node, keep)
        victims = ssn.preemptable.select(task, candidates) if candidates else []
        if not victims:
            continue
        room = nodes.future_idle_of(node) + sum(v.resreq for v in victims)
        if not less_equal(task.resreq, room):
            continue
        trial = Statement(ssn)
        queue_of_victims = sort_victims(ssn, task, victims)
        evicted = False
        while not fits(node) and queue_of_victims:
            trial.evict(queue_of_victims.pop(0), "preempt")
            evicted = True
        if fits(node):
            trial.pipeline(task, node, evicted)
            stmt.merge(trial)
            return True
        trial.discard()
    job.notes.append("preemption found no node where evicting lower-priority tasks helps")
    return False
