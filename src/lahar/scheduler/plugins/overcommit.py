"""overcommit: admit jobs while the cluster, inflated by a factor, has room (§5.3).

``idle = total * overcommit-factor - used``; a job with ``minResources`` is enqueued only
if the minimums of jobs already admitted (and not yet fully running) plus its own fit.
"""

from __future__ import annotations

import numpy as np

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.resources import Vector, less_equal_in_dims
from lahar.scheduler.api.task import ALLOCATED_SET
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import PERMIT, REJECT
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.registry import register_plugin

DEFAULT_FACTOR = 1.2


def job_min_minus_gated(job: JobInfo) -> Vector:
    assert job.min_resources is not None
    return np.maximum(job.min_resources - job.gated_request(), 0.0)


@register_plugin
class OvercommitPlugin(Plugin):
    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arguments.get_float("overcommit-factor", DEFAULT_FACTOR)
        self.factor = DEFAULT_FACTOR if factor < 1.0 else factor
        used = ssn.nodes.used.sum(axis=0) if ssn.nodes.size else ssn.space.zeros()
        self.idle: Vector = ssn.total_resource * self.factor - used
        self.inqueue: Vector = ssn.space.zeros()
        for job in ssn.jobs.values():
            if job.min_resources is None:
                continue
            if job.phase == "Inqueue":
                self.inqueue += job_min_minus_gated(job)
            elif job.phase == "Running" and job.count(*ALLOCATED_SET) >= job.min_available:
                listed = job.min_resources > 0
                rest = np.where(listed, np.maximum(job.min_resources - job.allocated, 0.0), 0.0)
                self.inqueue += np.maximum(rest - job.gated_request(), 0.0)
        ssn.job_enqueueable.add(self, self.enqueueable)
        ssn.job_enqueued.add(self, self.enqueued)

    def enqueueable(self, job: JobInfo) -> int:
        if job.min_resources is None:
            return PERMIT
        need = job_min_minus_gated(job)
        if less_equal_in_dims(self.inqueue + need, self.idle, job.min_resources):
            return PERMIT
        job.enqueue_rejected.append("resource in cluster is overused")
        return REJECT

    def enqueued(self, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.inqueue += job_min_minus_gated(job)
