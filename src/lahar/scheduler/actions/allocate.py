"""allocate: place pending tasks of admitted jobs, queue by queue, job by job (§4.2).

Queues take turns by QueueOrder (fair share); each turn serves the best job of the
queue, placing its tasks in TaskOrder until the job is ready (gang minMember). A ready
job's statement is committed (binds) and the job goes back for its remaining elastic
tasks; a job that is only pipelined keeps its placements uncommitted; anything else is
discarded.

This is the hot loop of a session, so two things keep it cheap without changing a
decision: a job's tasks are ordered by sort keys when the task order allows it
(:meth:`Session.task_sort_key`), and the node for each task comes from the per-template
cache of ``actions/nodecache.py`` when that applies; :func:`choose_node` below is the
direct computation, and the reference the cache is tested against.
"""

from __future__ import annotations

from lahar.scheduler.actions.common import (
    PriorityQueue,
    best_scored,
    predicate_all,
    take_feasible,
)
from lahar.scheduler.actions.nodecache import FALLBACK, NodeChoiceCache, node_cache
from lahar.scheduler.api.fit import FitErrors
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import less_equal, less_equal_rows
from lahar.scheduler.api.task import TaskInfo, TaskStatus
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.statement import Statement

S = TaskStatus


def execute(ssn: Session) -> None:
    enqueue_configured = "enqueue" in ssn.conf.actions
    worksheets: dict[str, PriorityQueue[TaskInfo]] = {}
    job_heaps: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending():
            if enqueue_configured:
                continue
            job.phase = "Inqueue"
        valid = ssn.job_valid.check(job)
        if not valid.passed:
            job.invalid = valid.message or valid.reason
            continue
        if job.queue not in ssn.queues:
            continue
        tasks = [t for t in job.tasks_in(S.PENDING) if not t.gated and not t.best_effort]
        if not tasks:
            continue
        tasks.sort(key=lambda t: t.uid)
        worksheets[job.uid] = PriorityQueue(ssn.compare_tasks, tasks, ssn.task_sort_key(tasks))
        job_heaps.setdefault(job.queue, PriorityQueue(ssn.compare_jobs)).push(job)

    cache = node_cache(ssn)
    queues = PriorityQueue(ssn.compare_queues, (ssn.queues[q] for q in sorted(job_heaps)))
    while queues:
        queue = queues.pop()
        jobs = job_heaps[queue.name]
        if ssn.overused.check(queue):
            for job in jobs.items():
                job.notes.append(f"queue {queue.name} is overused")
            continue
        if not jobs:
            continue
        job = jobs.pop()
        worksheet = worksheets[job.uid]
        stmt = allocate_for_job(ssn, job, queue, worksheet, cache)
        if stmt is not None and ssn.job_is_ready(job):
            stmt.commit()
            if worksheet:
                jobs.push(job)
        queues.push(queue)


def allocate_for_job(
    ssn: Session,
    job: JobInfo,
    queue: QueueInfo,
    tasks: PriorityQueue[TaskInfo],
    cache: NodeChoiceCache | None = None,
) -> Statement | None:
    stmt = Statement(ssn)
    failed_roles = {job.tasks[uid].role for uid in job.fit_errors if uid in job.tasks}
    while tasks:
        task = tasks.pop()
        if not ssn.allocatable.check(queue, task):
            if not queue.is_open:
                job.notes.append(f"queue {queue.name} is {queue.state}")
            else:
                job.notes.append(f"queue {queue.name} has no room for the task within its quota")
            continue
        if task.role and task.role in failed_roles:
            job.fit_errors[task.uid] = FitErrors.single(
                f"task {task.key} has already predicated failed (role {task.role})"
            )
            continue
        chosen = choose_node(ssn, job, task, cache)
        if chosen is None:
            failed_roles.add(task.role)
            if job.need_continue_allocating():
                continue
            break
        node, fits_idle = chosen
        job.fit_errors.pop(task.uid, None)
        if fits_idle:
            stmt.allocate(task, node)
        else:
            stmt.pipeline(task, node)
        if ssn.job_is_ready(job):
            break
    if ssn.job_is_ready(job) or ssn.job_is_pipelined(job):
        return stmt
    stmt.discard()
    return None


def choose_node(
    ssn: Session, job: JobInfo, task: TaskInfo, cache: NodeChoiceCache | None = None
) -> tuple[int, bool] | None:
    """The node for ``task`` and whether the task fits its idle resources (else it is
    pipelined there), or ``None`` after recording why no node fits.

    Answered from the session's per-template ``cache`` when given and it applies (same
    answer, see ``actions/nodecache.py``), else computed directly here."""
    if cache is not None:
        chosen = cache.choose(job, task)
        if chosen is not FALLBACK:
            return chosen  # type: ignore[no-any-return]
    nodes = ssn.nodes
    nominated = nodes.index.get(task.nominated_node, -1) if task.nominated_node else -1
    if nominated >= 0 and less_equal(task.resreq, nodes.future_idle_of(nominated)):
        result = predicate_all(ssn, task)
        if result.passed[nominated]:
            return nominated, less_equal(task.resreq, nodes.idle[nominated])
    result = predicate_all(ssn, task)
    feasible = take_feasible(ssn, result.passed)
    if feasible.shape[0] == 0:
        job.fit_errors[task.uid] = FitErrors.from_filter(result)
        return None
    fits_idle = feasible[less_equal_rows(task.resreq, nodes.idle[feasible])]
    group = fits_idle if fits_idle.shape[0] else feasible
    node = best_scored(ssn, task, group)
    return node, less_equal(task.resreq, nodes.idle[node])
