"""capacity: elastic queue quotas from ``spec.deserved``, flat or hierarchical (§6.4).

Unlike proportion there is no water-filling and no weights: a queue deserves its
``spec.deserved`` (capped by its real capability, raised to its guarantee) and may
allocate up to its real capability; queues above their deserved amount lend the excess,
which reclaim takes back. With ``enableHierarchy`` the queues form a tree through
``spec.parent`` (rooted at ``root``): quotas are checked on every ancestor, figures roll
up to the ancestors, and victims are taken from closer relatives first. A malformed tree
(missing parent, cycle, jobs in a non-leaf queue) disables the plugin's admission for the
session, as in Volcano.
"""

from __future__ import annotations

import numpy as np

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import (
    EPS,
    PODS,
    exceeded_part,
    less_equal_in_dims,
    less_equal_partly_zero_filtered,
)
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import PERMIT, REJECT, EventHandler
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.victims import sort_victims
from lahar.scheduler.plugins.queueattrs import QueueAttr, build_attrs, queues_with_jobs
from lahar.scheduler.plugins.registry import register_plugin

ROOT = "root"


@register_plugin
class CapacityPlugin(Plugin):
    name = "capacity"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.hierarchy = self.enabled("enableHierarchy")
        self.parent: dict[str, str] = {}
        self.children: dict[str, list[str]] = {}
        self.ready = True
        self.problem = ""
        if self.hierarchy:
            self.attrs = build_attrs(ssn, sorted(ssn.queues))
            self._build_tree()
        else:
            self.attrs = build_attrs(ssn, queues_with_jobs(ssn))
            for attr in self.attrs.values():
                spec = np.minimum(attr.queue.deserved, attr.real_capability)
                attr.deserved = np.maximum(spec, attr.guarantee)
                attr.update_share(empty_share=1.0)
        ssn.queue_order.add(self, self.queue_order)
        ssn.victim_queue_order.add(self, self.victim_queue_order)
        ssn.allocatable.add(self, self.allocatable)
        ssn.preemptive.add(self, self.preemptive)
        ssn.reclaimable.add(self, self.reclaimable)
        ssn.job_enqueueable.add(self, self.enqueueable)
        ssn.job_enqueued.add(self, self.enqueued)
        ssn.event_handlers.append(EventHandler(self.on_allocate, self.on_deallocate))

    # --- the queue tree ------------------------------------------------------------------

    def _build_tree(self) -> None:
        ssn = self.ssn
        for name, queue in ssn.queues.items():
            if name == ROOT:
                continue
            parent = queue.parent or ROOT
            if parent not in ssn.queues:
                self._not_ready(f"queue {name}: parent queue {parent} does not exist")
                return
            self.parent[name] = parent
            self.children.setdefault(parent, []).append(name)
        order = self._top_down()
        if len(order) != len(ssn.queues):
            self._not_ready("the queue hierarchy has a cycle")
            return
        for job in ssn.jobs.values():
            if self.children.get(job.queue):
                self._not_ready(f"PodGroup {job.uid} is in non-leaf queue {job.queue}")
                return
        # roll leaf figures up to the ancestors (leaves were filled from their jobs)
        for name in reversed(order):
            parent = self.parent.get(name)
            if parent is not None:
                pa, ca = self.attrs[parent], self.attrs[name]
                for field_name in ("allocated", "request", "inqueue", "elastic"):
                    setattr(pa, field_name, getattr(pa, field_name) + getattr(ca, field_name))
        root = self.attrs[ROOT]
        root.real_capability = root.capability.copy()
        kids = self.children.get(ROOT, [])
        root.guarantee = sum((self.attrs[c].guarantee for c in kids), ssn.space.zeros())
        for name in order:
            if name == ROOT:
                continue
            attr, pa = self.attrs[name], self.attrs[self.parent[name]]
            inherit = ~np.isfinite(attr.capability)
            attr.capability[inherit] = pa.capability[inherit]
            attr.deserved = np.maximum(attr.queue.deserved, attr.guarantee)
            siblings = self.children[self.parent[name]]
            sibling_guarantee = sum((self.attrs[s].guarantee for s in siblings), ssn.space.zeros())
            base = exceeded_part(pa.real_capability, sibling_guarantee) + attr.guarantee
            base[~np.isfinite(pa.real_capability)] = np.inf
            attr.real_capability = np.minimum(base, attr.capability)
        root.deserved = sum((self.attrs[c].deserved for c in kids), ssn.space.zeros())
        for attr in self.attrs.values():
            attr.update_share(empty_share=1.0)

    def _top_down(self) -> list[str]:
        order, frontier = [], [ROOT]
        while frontier:
            name = frontier.pop(0)
            order.append(name)
            frontier.extend(sorted(self.children.get(name, [])))
        return order

    def _not_ready(self, why: str) -> None:
        self.ready = False
        self.problem = why

    def path(self, name: str) -> list[str]:
        """The queue and its ancestors, leaf first (only the queue in flat mode)."""
        out = [name]
        while self.hierarchy and out[-1] in self.parent:
            out.append(self.parent[out[-1]])
        return out

    def is_leaf(self, name: str) -> bool:
        return not self.children.get(name)

    # --- callbacks -------------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        if self.hierarchy:
            ll, rl = self.is_leaf(left.name), self.is_leaf(right.name)
            if ll != rl:
                return -1 if ll else 1
            left, right = self._under_common_ancestor(left.name, right.name)
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        if la is None or ra is None:
            return 0
        if la.share != ra.share:
            return -1 if la.share < ra.share else 1
        le, re = bool(np.any(la.deserved >= EPS)), bool(np.any(ra.deserved >= EPS))
        return 0 if le == re else (-1 if le else 1)

    def _under_common_ancestor(self, left: str, right: str) -> tuple[QueueInfo, QueueInfo]:
        lp, rp = self.path(left)[::-1], self.path(right)[::-1]
        i = 0
        while i < min(len(lp), len(rp)) and lp[i] == rp[i]:
            i += 1
        queues = self.ssn.queues
        if i >= len(lp) or i >= len(rp):
            return queues[left], queues[right]
        return queues[lp[i]], queues[rp[i]]

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        if not self.hierarchy or preemptor is None:
            return 0
        mine = self.path(preemptor.name)

        def depth(name: str) -> int:
            theirs = set(self.path(name))
            common = next((q for q in mine if q in theirs), ROOT)
            return len(self.path(common))

        ld, rd = depth(left.name), depth(right.name)
        return 0 if ld == rd else (-1 if ld > rd else 1)

    def _fits_capability(self, name: str, req: np.ndarray) -> bool:
        for q in self.path(name):
            attr = self.attrs[q]
            if not less_equal_in_dims(attr.allocated + req, attr.real_capability, req):
                return False
        return True

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if not self.ready or queue.name not in self.attrs:
            return self.ready
        if not queue.is_open or (self.hierarchy and not self.is_leaf(queue.name)):
            return False
        return self._fits_capability(queue.name, task.resreq)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if not self.allocatable(queue, task):
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return True
        return less_equal_partly_zero_filtered(
            attr.allocated + task.resreq, attr.deserved, task.resreq
        )

    def reclaimable(
        self, reclaimer: TaskInfo, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        if not self.ready:
            return [], REJECT
        running: dict[str, np.ndarray] = {}
        victims: list[TaskInfo] = []
        wanted = reclaimer.resreq > 0
        wanted[PODS] = False
        for task in sort_victims(self.ssn, reclaimer, candidates):
            job = self.ssn.jobs.get(task.job)
            attr = self.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            uses = task.resreq > 0
            uses[PODS] = False
            if not np.any(uses & wanted):
                continue
            allocated = running.setdefault(attr.name, attr.allocated.copy())
            after = allocated - task.resreq
            guaranteed = attr.guarantee >= EPS
            guaranteed[PODS] = False
            if np.any(guaranteed & (after < attr.guarantee - EPS)):
                continue
            shared = uses & (attr.deserved >= EPS)
            if not np.any(shared) or np.any(shared & (allocated > attr.deserved)):
                allocated -= task.resreq
                victims.append(task)
        return victims, PERMIT

    def enqueueable(self, job: JobInfo) -> int:
        queue = self.ssn.queues[job.queue]
        if not self.ready:
            job.enqueue_rejected.append(f"capacity plugin: {self.problem}")
            return REJECT
        if not queue.is_open:
            job.enqueue_rejected.append(f"queue {queue.name} is {queue.state}")
            return REJECT
        if job.min_resources is None or job.queue not in self.attrs:
            return PERMIT
        need = job.min_resources
        for q in self.path(job.queue):
            attr = self.attrs[q]
            want = need + attr.allocated + attr.inqueue - attr.elastic
            if not less_equal_in_dims(want, attr.real_capability, need):
                job.enqueue_rejected.append(f"queue {q} resource quota insufficient")
                return REJECT
        return PERMIT

    def enqueued(self, job: JobInfo) -> None:
        if job.min_resources is None or job.queue not in self.attrs:
            return
        need = np.maximum(job.min_resources - job.gated_request(), 0.0)
        for q in self.path(job.queue):
            self.attrs[q].inqueue += need

    def _update(self, task: TaskInfo, sign: float) -> None:
        job = self.ssn.jobs.get(task.job)
        if job is None or job.queue not in self.attrs:
            return
        for q in self.path(job.queue):
            attr: QueueAttr = self.attrs[q]
            attr.allocated += sign * task.resreq
            attr.update_share(empty_share=1.0)

    def on_allocate(self, task: TaskInfo) -> None:
        self._update(task, 1.0)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._update(task, -1.0)

    def on_session_close(self, ssn: Session) -> None:
        for name, attr in self.attrs.items():
            ssn.queue_stats[name] = attr.stats()
