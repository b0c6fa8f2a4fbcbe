"""drf: dominant resource fairness between jobs (§6.3).

A job's share is its largest ratio allocated/cluster-total over the resources the
cluster has (``pods`` included, as in Volcano); jobs with lower shares go first, and a
preemptor may take tasks from jobs whose share would stay at least its own.

With ``enableHierarchy`` (hDRF) it also orders queues and picks reclaim victims along
the queue tree of :mod:`lahar.scheduler.plugins.hdrf`.
"""

from __future__ import annotations

import numpy as np

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import EPS, Vector
from lahar.scheduler.api.task import TaskInfo, TaskStatus
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import PERMIT, EventHandler
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.hdrf import HierarchyTree, HNode
from lahar.scheduler.plugins.registry import register_plugin

SHARE_DELTA = 1e-6


@register_plugin
class DrfPlugin(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        total = ssn.total_resource
        self.dims = np.flatnonzero(total >= EPS)
        self.total = total[self.dims]
        self.allocated: dict[str, Vector] = {}
        self.shares: dict[str, float] = {}
        for job in ssn.jobs.values():
            self.allocated[job.uid] = job.allocated.copy()
            self.shares[job.uid] = self.share_of(job.allocated)
        self.tree: HierarchyTree | None = None
        if self.enabled("enableHierarchy"):
            self._open_hierarchy(ssn)
        ssn.job_order.add(self, self.job_order)
        ssn.preemptable.add(self, self.preemptable)
        ssn.event_handlers.append(EventHandler(self.on_allocate, self.on_deallocate))

    def _open_hierarchy(self, ssn: Session) -> None:
        demanding = np.zeros(ssn.space.size, dtype=bool)
        for job in ssn.jobs.values():
            for task in job.tasks_in(TaskStatus.PENDING):
                demanding |= task.resreq > 0
        tree = HierarchyTree(ssn.total_resource, demanding)
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is not None:
                request = sum((t.resreq for t in job.tasks.values()), ssn.space.zeros())
                tree.add_job(queue, job.uid, job.allocated, request)
        tree.update()
        self.tree = tree
        ssn.queue_order.add(self, self.hierarchy_queue_order)
        ssn.reclaimable.add(self, self.hierarchy_reclaimable)

    def hierarchy_queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        assert self.tree is not None
        result = self.tree.compare(left, right)
        return -1 if result < 0 else (1 if result > 0 else 0)

    def _leaf(self, task: TaskInfo) -> tuple[QueueInfo, HNode] | None:
        job = self.ssn.jobs.get(task.job)
        queue = self.ssn.queues.get(job.queue) if job is not None else None
        if self.tree is None or job is None or queue is None:
            return None
        leaf = self.tree.leaf(queue, job.uid)
        return None if leaf is None else (queue, leaf)

    def hierarchy_reclaimable(
        self, reclaimer: TaskInfo, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        tree, mine = self.tree, self._leaf(reclaimer)
        if tree is None or mine is None:
            return [], PERMIT
        lqueue, lleaf = mine
        assert lleaf.allocated is not None
        lleaf.allocated += reclaimer.resreq
        victims: list[TaskInfo] = []
        for task in candidates:
            theirs = self._leaf(task)
            if theirs is None:
                continue
            rqueue, rleaf = theirs
            assert rleaf.allocated is not None
            rleaf.allocated -= task.resreq
            tree.update()
            if tree.compare(lqueue, rqueue) < 0:
                victims.append(task)
            rleaf.allocated += task.resreq
        lleaf.allocated -= reclaimer.resreq
        tree.update()
        return victims, PERMIT

    def share_of(self, allocated: Vector) -> float:
        """max over the cluster's dimensions of allocated / total (every total >= 0.1,
        so ``helpers.Share``'s zero-denominator rule never applies)."""
        if self.dims.shape[0] == 0:
            return 0.0
        return float((allocated[self.dims] / self.total).max())

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        ls, rs = self.shares.get(left.uid, 0.0), self.shares.get(right.uid, 0.0)
        return (ls > rs) - (ls < rs)

    def preemptable(
        self, preemptor: TaskInfo, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        if preemptor.job not in self.allocated:
            return [], PERMIT
        mine = self.share_of(self.allocated[preemptor.job] + preemptor.resreq)
        running: dict[str, Vector] = {}
        victims: list[TaskInfo] = []
        for task in candidates:
            if task.job not in self.allocated:
                continue
            copy = running.setdefault(task.job, self.allocated[task.job].copy())
            copy -= task.resreq
            theirs = self.share_of(copy)
            if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
                victims.append(task)
        return victims, PERMIT

    def _update(self, task: TaskInfo, sign: float) -> None:
        alloc = self.allocated.get(task.job)
        if alloc is None:
            return
        if sign > 0:
            alloc += task.resreq
        else:
            alloc -= task.resreq
        self.shares[task.job] = self.share_of(alloc)
        found = self._leaf(task) if self.tree is not None else None
        if found is not None and self.tree is not None:
            assert found[1].allocated is not None
            found[1].allocated += sign * task.resreq
            self.tree.update()

    def on_allocate(self, task: TaskInfo) -> None:
        self._update(task, 1.0)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._update(task, -1.0)
