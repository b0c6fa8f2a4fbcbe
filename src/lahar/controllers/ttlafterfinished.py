"""The TTL-after-finished controller: delete finished Jobs once their TTL has passed.

A Job with ``spec.ttlSecondsAfterFinished`` that is ``Complete`` or ``Failed`` is
deleted ``ttl`` seconds after it finished (its ``completionTime``, else the finishing
condition's ``lastTransitionTime``), with Background propagation so the garbage
collector removes its pods. Until then the Job is looked at again when the TTL will
have passed. The deletion is decided on a fresh read and preconditioned on that
read's uid and resourceVersion, so a TTL raised in the meantime is honoured.
"""

from __future__ import annotations

import logging

import lightkube

from lahar.controllers.common import JOBS, Clock, Obj, delete, parse_time
from lahar.controllers.jobpods import finished_condition
from lahar.controllers.options import ControllerOptions
from lahar.kube import rest
from lahar.kube.manager import Manager
from lahar.kube.reconcile import Request, Result

log = logging.getLogger("lahar.controllers.ttlafterfinished")
NAME = "ttl-after-finished-controller"


class TTLAfterFinishedController:
    def __init__(self, mgr: Manager, options: ControllerOptions) -> None:
        self.client: lightkube.AsyncClient = mgr.client
        self.clock: Clock = options.clock
        self.jobs = mgr.cache(JOBS)
        mgr.controller(NAME, self.reconcile, max_concurrent_reconciles=2).for_(JOBS)

    def _wait(self, job: Obj) -> float | None:
        """Seconds until ``job`` expires (<= 0: now), or None when it never does."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        done = finished_condition(job)
        if ttl is None or done is None:
            return None
        finished = parse_time((job.get("status") or {}).get("completionTime")) or parse_time(
            done.get("lastTransitionTime")
        )
        if finished is None:
            return None
        return float(finished + ttl - self.clock())

    async def reconcile(self, req: Request) -> Result | None:
        job = self.jobs.get(req.name, req.namespace)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        wait = self._wait(job)
        if wait is None:
            return None
        if wait > 0:
            return Result(requeue_after=wait)
        try:
            fresh = await rest.request(self.client, "GET", JOBS.path(req.namespace, req.name))
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return None
            raise
        wait = self._wait(fresh)
        if wait is None or fresh["metadata"]["uid"] != job["metadata"]["uid"]:
            return None
        if wait > 0:
            return Result(requeue_after=wait)
        try:
            await delete(self.client, JOBS, fresh, propagation="Background", resource_version=True)
        except rest.ApiError as exc:
            if rest.is_status(exc, 409):
                return Result(requeue=True)
            raise
        log.info("deleted job %s: its TTL after finishing has passed", req)
        return None


def add_ttl_controller(mgr: Manager, options: ControllerOptions) -> TTLAfterFinishedController:
    return TTLAfterFinishedController(mgr, options)
