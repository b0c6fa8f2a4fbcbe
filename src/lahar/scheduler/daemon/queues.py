"""Queue status and queue metrics, from each session's outcome.

``status.allocated`` is the scheduler's to write (§2.1): Σ requests of the tasks in
the allocated set (Bound, Binding, Running, Allocated) of the queue's PodGroups after
the session, propagated to every ancestor when a ``root`` Queue exists (hierarchical
queues); cpu and memory are always present, other resources when non-zero.

The per-phase PodGroup counts (``pending``, ``inqueue``, ``running``, ``unknown``,
``completed``) and ``state`` belong to the queue controller in lahar
(``lahar.volcano.controllers.queue``; Volcano's keeps ``state``, and the counts are
status fields its older releases wrote). The scheduler can fill in the counts too,
behind ``SchedulerOptions.queue_counts`` (default on, so a split-process setup without
the controller still gets them; ``lahar up``, which runs the queue controller, should
turn it off: ``--no-queue-counts``). Both count a PodGroup by its phase, the scheduler
by the phase it is about to write. It never writes ``state``. Writes are
merge patches of the ``status`` subresource, only when something changed.

The same figures feed Volcano's queue gauges (``volcano_queue_allocated_milli_cpu``...).
"""

from __future__ import annotations

import logging
from typing import Any

import lightkube
import numpy as np

from lahar.kube import rest
from lahar.scheduler.api.resources import CPU, MEMORY, PODS, Vector
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.daemon.cache import QUEUES, SchedulerCache
from lahar.scheduler.daemon.metrics import SchedulerMetrics
from lahar.scheduler.daemon.writes import WriteMemo, bounded_gather
from lahar.scheduler.framework.session import Session

__all__ = ["PHASE_COUNTS", "QueueWriter", "queue_allocations"]

log = logging.getLogger("lahar.scheduler.queues")
S = TaskStatus
Obj = dict[str, Any]
PHASE_COUNTS = {
    "Pending": "pending",
    "Inqueue": "inqueue",
    "Running": "running",
    "Unknown": "unknown",
    "Completed": "completed",
}


def queue_allocations(ssn: Session) -> dict[str, Vector]:
    """Allocated resources per queue, with hierarchical propagation under ``root``."""
    own = {name: ssn.space.zeros() for name in ssn.queues}
    for job in ssn.jobs.values():
        if job.queue in own:
            own[job.queue] += job.allocated
    root = ssn.queues.get("root")
    if root is None or root.implicit:
        return own
    total = {name: vec.copy() for name, vec in own.items()}
    for name, vec in own.items():
        seen = {name}
        parent = ssn.queues[name].parent or ("root" if name != "root" else "")
        while parent and parent in total and parent not in seen:
            total[parent] += vec
            seen.add(parent)
            parent = ssn.queues[parent].parent or ("root" if parent != "root" else "")
    return total


def queue_requests(ssn: Session) -> dict[str, Vector]:
    req = {name: ssn.space.zeros() for name in ssn.queues}
    for job in ssn.jobs.values():
        if job.queue in req:
            req[job.queue] += job.allocated
            for task in job.tasks_in(S.PENDING, S.PIPELINED):
                req[job.queue] += task.resreq
    return req


class QueueWriter:
    """Writes Queue ``status.allocated`` (and the PodGroup counts) and sets queue gauges."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        cache: SchedulerCache,
        metrics: SchedulerMetrics,
        *,
        counts: bool = True,
        workers: int = 16,
    ) -> None:
        self.client = client
        self.cache = cache
        self.metrics = metrics
        self.counts = counts
        self.workers = workers
        self.memo = WriteMemo()
        self.writes = 0

    def phase_counts(self, ssn: Session) -> dict[str, dict[str, int]]:
        """PodGroups per phase per queue: the session's phase, else the stored one."""
        out: dict[str, dict[str, int]] = {}
        for pg in self.cache.podgroups:
            md = pg["metadata"]
            uid = f"{md.get('namespace')}/{md['name']}"
            queue = str((pg.get("spec") or {}).get("queue") or "default")
            job = ssn.jobs.get(uid)
            phase = job.out_phase if job is not None else (pg.get("status") or {}).get("phase")
            field = PHASE_COUNTS.get(str(phase or "Pending"))
            if field is None:
                continue
            counts = out.setdefault(queue, dict.fromkeys(PHASE_COUNTS.values(), 0))
            counts[field] += 1
        return out

    async def write(self, ssn: Session) -> int:
        allocated = queue_allocations(ssn)
        counts = self.phase_counts(ssn) if self.counts else {}
        self.export(ssn, allocated, counts)
        jobs = []
        for queue in self.cache.queues:
            name = queue["metadata"]["name"]
            if name not in allocated:
                continue
            status = queue.get("status") or {}
            desired: Obj = {"allocated": _quantities(ssn, allocated[name])}
            if self.counts:
                desired.update(counts.get(name) or dict.fromkeys(PHASE_COUNTS.values(), 0))
            patch: Obj = {}
            old_alloc = status.get("allocated") or {}
            if old_alloc != desired["allocated"]:
                gone = {k: None for k in old_alloc if k not in desired["allocated"]}
                patch["allocated"] = {**gone, **desired["allocated"]}
            for key, value in desired.items():
                if key != "allocated" and status.get(key) != value:
                    patch[key] = value
            if patch:
                jobs.append(self._patch(queue, desired, patch))
        results = await bounded_gather(jobs, self.workers)
        for res in results:
            if isinstance(res, Exception):
                log.warning("Queue status write failed: %s", res)
        self.memo.retain(self.cache.queues.list_keys())
        return sum(1 for r in results if r is True)

    async def _patch(self, queue: Obj, desired: Obj, patch: Obj) -> bool:
        md = queue["metadata"]
        rv = str(md.get("resourceVersion") or "")
        frozen = tuple(sorted((k, str(v)) for k, v in desired.items()))
        if self.memo.already_written(md["name"], rv, frozen):
            return False
        try:
            await rest.request(
                self.client,
                "PATCH",
                QUEUES.path(None, md["name"], "status"),
                body={"status": patch},
                content_type="application/merge-patch+json",
            )
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return False
            raise
        self.memo.record(md["name"], rv, frozen)
        self.writes += 1
        return True

    def export(
        self, ssn: Session, allocated: dict[str, Vector], counts: dict[str, dict[str, int]]
    ) -> None:
        """Set Volcano's queue gauges from this session."""
        m = self.metrics
        space = ssn.space
        requests = queue_requests(ssn)
        for name, queue in ssn.queues.items():
            if queue.implicit and name == "root":
                continue
            stats = ssn.queue_stats.get(name)
            figures = {
                "allocated": allocated.get(name),
                "request": requests.get(name),
                "deserved": stats.deserved if stats is not None else None,
                "capacity": queue.capability if queue.has_capability else None,
            }
            for what, vec in figures.items():
                if vec is None:
                    continue
                cpu, mem, scalar = m.queue[what]
                cpu.labels(name).set(_finite(vec[CPU]))
                mem.labels(name).set(_finite(vec[MEMORY]))
                for col, res in enumerate(space.names):
                    if col in (CPU, MEMORY, PODS):
                        continue
                    scalar.labels(name, res).set(_finite(vec[col]))
            m.queue_share.labels(name).set(float(stats.share) if stats is not None else 0.0)
            m.queue_weight.labels(name).set(float(queue.weight))
            m.queue_overused.labels(name).set(1.0 if _overused(ssn, queue) else 0.0)
            if self.counts:
                per = counts.get(name) or {}
                for phase, gauge in m.queue_pg.items():
                    gauge.labels(name).set(per.get(phase, 0))


def _overused(ssn: Session, queue: Any) -> bool:
    try:
        return bool(ssn.overused.check(queue))
    except Exception:  # a plugin that cannot answer after close: not overused
        return False


def _finite(value: float) -> float:
    value = float(value)
    return value if np.isfinite(value) else 0.0


def _quantities(ssn: Session, vec: Vector) -> dict[str, str]:
    out = ssn.space.to_quantities(vec)
    out.setdefault("cpu", "0")
    out.setdefault("memory", "0")
    return dict(sorted(out.items()))
