"""reclaim: take back resources lent to other queues for starving jobs (§4.5).

Only queues that are not overused reclaim, only for tasks the queue may still take
(Preemptive), and only from Running, preemptable tasks of *other*, reclaimable queues;
the plugins' Reclaimable votes choose among them. Nodes are tried in node order, not
scored, and only resources are checked after evicting (Volcano re-runs neither the
queue check nor the predicates here).
"""

from __future__ import annotations

from lahar.scheduler.actions.common import PriorityQueue
from lahar.scheduler.actions.victims import candidate_nodes, node_tasks
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.resources import less_equal
from lahar.scheduler.api.task import TaskInfo, TaskStatus
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.statement import Statement
from lahar.scheduler.framework.victims import sort_victims

S = TaskStatus


def execute(ssn: Session) -> None:
    job_heaps: dict[str, PriorityQueue[JobInfo]] = {}
    task_heaps: dict[str, PriorityQueue[TaskInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or job.queue not in ssn.queues:
            continue
        if not ssn.job_valid.check(job).passed:
            continue
        heap = job_heaps.setdefault(job.queue, PriorityQueue(ssn.compare_jobs))
        if ssn.job_is_starving(job):
            heap.push(job)
            pending = [t for t in job.tasks_in(S.PENDING) if not t.gated]
            task_heaps[job.uid] = PriorityQueue(
                ssn.compare_tasks, sorted(pending, key=lambda t: t.uid)
            )

    queues = PriorityQueue(ssn.compare_queues, (ssn.queues[q] for q in sorted(job_heaps)))
    while queues:
        queue = queues.pop()
        if ssn.overused.check(queue):
            continue
        jobs = job_heaps[queue.name]
        while jobs:
            job = jobs.pop()
            stmt = Statement(ssn)
            tasks = task_heaps[job.uid]
            while ssn.job_is_starving(job) and tasks:
                task = tasks.pop()
                if task.preemption_policy == "Never":
                    continue
                if not ssn.preemptive.check(queue, task):
                    continue
                reclaim_for_task(ssn, stmt, task)
            if ssn.job_is_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()


def reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo) -> bool:
    own_queue = ssn.jobs[task.job].queue
    nodes = ssn.nodes

    def reclaimee(victim: TaskInfo) -> bool:
        if victim.status != S.RUNNING or not victim.preemptable:
            return False
        job = ssn.jobs.get(victim.job)
        if job is None or job.queue == own_queue:
            return False
        queue = ssn.queues.get(job.queue)
        return queue is not None and queue.reclaimable

    for node in candidate_nodes(ssn, task):
        node = int(node)
        candidates = node_tasks(ssn, node, reclaimee)
        if not candidates:
            continue
        victims = ssn.reclaimable.select(task, candidates)
        if not victims:
            continue
        available = nodes.future_idle_of(node)
        if not less_equal(task.resreq, available + sum(v.resreq for v in victims)):
            continue
        trial = Statement(ssn)
        for victim in sort_victims(ssn, task, victims):
            if less_equal(task.resreq, available):
                break
            trial.evict(victim, "reclaim")
            available = available + victim.resreq
        if less_equal(task.resreq, available):
            trial.pipeline(task, node, True)
            stmt.merge(trial)
            return True
        trial.discard()
    return False
