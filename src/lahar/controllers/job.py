"""The batch/v1 Job controller: run a Job's pods until enough succeed or it fails.

Level-triggered, like upstream's: each sync reads the Job and its pods from the
caches and moves one step.

* **Counting** uses the tracking finalizer (``batch.kubernetes.io/job-tracking``) that
  every pod is created with, so a finished pod is counted exactly once even if it is
  deleted right away: its uid goes into ``status.uncountedTerminatedPods`` (written
  first), then its finalizer is removed, then the uid moves into ``succeeded`` or
  ``failed`` (written second). A pod being deleted before it succeeded counts as
  failed (``podReplacementPolicy: TerminatingOrFailed``, the default).
* **Deciding**: ``failed > backoffLimit`` or a run longer than
  ``activeDeadlineSeconds`` adds ``FailureTarget``; enough successes add
  ``SuccessCriteriaMet``. Either way the remaining pods are deleted, and only once
  none is left does the final ``Failed`` or ``Complete`` follow (as Kubernetes 1.31+).
* **Managing**: too few active pods, create (in doubling batches, after an
  exponential backoff once pods have failed); too many, delete; suspended, delete all.
* **Expectations** (:mod:`lahar.controllers.expectations`) keep a stale cache from
  creating pods twice: a Job with creations or deletions in flight is not managed
  until the informer has shown them.

The pure rules (pod building, conditions, indexes, backoff) live in
:mod:`lahar.controllers.jobpods`, the pod writes in :mod:`lahar.controllers.podcontrol`,
and ``ttlSecondsAfterFinished`` in its own controller, as upstream
(:mod:`lahar.controllers.ttlafterfinished`).
"""

from __future__ import annotations

import copy
import logging

import lightkube

from lahar.controllers import jobpods as jp
from lahar.controllers.common import (
    JOBS,
    PODS,
    Obj,
    condition,
    format_time,
    is_deleting,
    is_ready,
    is_terminal,
    parse_time,
    phase,
)
from lahar.controllers.expectations import Expectations, UIDExpectations
from lahar.controllers.options import ControllerOptions
from lahar.controllers.podcontrol import PodControl
from lahar.kube import rest
from lahar.kube.informer import EventHandler
from lahar.kube.manager import Manager
from lahar.kube.reconcile import Request, Result

log = logging.getLogger("lahar.controllers.job")
NAME = "job-controller"
BY_JOB = "job-controller"  # pod index: "<namespace>/<job name>" of its controller Job
MANAGED_BY = "kubernetes.io/job-controller"  # spec.managedBy values this controller serves


def job_key_of(pod: Obj) -> list[str]:
    """The key of the Job that controls ``pod`` (an index function)."""
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            if ref.get("kind") == "Job" and ref.get("apiVersion") == "batch/v1":
                return [f"{pod['metadata'].get('namespace')}/{ref.get('name')}"]
            return []
    return []


def _owner_uid(pod: Obj) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("uid")  # type: ignore[no-any-return]
    return None


def _tracked(pod: Obj) -> bool:
    return jp.TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())


class _Conflict(Exception):
    """The Job changed under this sync: look again with the newer version."""


class JobController:
    """The Job reconciler and its bookkeeping, wired onto a manager."""

    def __init__(self, mgr: Manager, options: ControllerOptions) -> None:
        self.client: lightkube.AsyncClient = mgr.client
        self.options = options
        self.clock = options.clock
        self.jobs = mgr.cache(JOBS)
        pods = mgr.informers.informer(PODS)
        pods.add_indexer(BY_JOB, job_key_of)
        self.pods = pods.cache
        self.recorder = mgr.recorder(NAME)
        self.expectations = Expectations(timeout=options.expectations_timeout)
        self.finalizers = UIDExpectations(timeout=options.expectations_timeout)
        self.pod_control = PodControl(
            self.client, self.recorder, self.expectations, self.finalizers, jp.TRACKING_FINALIZER
        )
        # job key -> (failures since the last success, wall time of the last one)
        self.backoff: dict[str, tuple[int, float]] = {}
        pods.add_handler(EventHandler(self._pod_added, self._pod_updated, self._pod_deleted))
        mgr.controller(NAME, self.reconcile, max_concurrent_reconciles=options.job_workers).for_(
            JOBS
        ).owns(PODS)

    # -- expectations from pod events --------------------------------------------------

    def _pod_added(self, pod: Obj) -> None:
        for key in job_key_of(pod):
            self.expectations.creation_observed(key)
            if is_deleting(pod):
                self.expectations.deletion_observed(key, pod["metadata"]["uid"])

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        for key in job_key_of(new):
            uid = new["metadata"]["uid"]
            if is_deleting(new):
                self.expectations.deletion_observed(key, uid)
            if not _tracked(new):
                self.finalizers.observed(key, uid)

    def _pod_deleted(self, pod: Obj) -> None:
        for key in job_key_of(pod):
            uid = pod["metadata"]["uid"]
            self.expectations.deletion_observed(key, uid)
            self.finalizers.observed(key, uid)

    # -- the reconciler ----------------------------------------------------------------

    async def reconcile(self, req: Request) -> Result | None:
        key = str(req)
        job = self.jobs.get(req.name, req.namespace)
        pods = self.pods.by_index(BY_JOB, key)
        if job is None:
            for table in (self.expectations, self.finalizers):
                table.forget(key)
            self.backoff.pop(key, None)
            await self.pod_control.release(pods)  # orphans: let them go
            return None
        manager = (job.get("spec") or {}).get("managedBy")
        if manager and manager != MANAGED_BY:
            return None  # another controller (MultiKueue, say) owns this Job
        uid = job["metadata"]["uid"]
        mine = [p for p in pods if _owner_uid(p) == uid]
        await self.pod_control.release([p for p in pods if _owner_uid(p) != uid])
        if is_deleting(job):
            await self.pod_control.release(mine)
            return None
        if jp.finished_condition(job) is not None:
            await self.pod_control.release(mine)
            return None
        try:
            return await self._sync(key, job, mine)
        except _Conflict:
            return Result(requeue=True)

    async def _sync(self, key: str, job: Obj, pods: list[Obj]) -> Result | None:
        now = self.clock()
        spec = job.get("spec") or {}
        status: Obj = copy.deepcopy(job.get("status") or {})
        indexed = jp.is_indexed(job)
        completions: int | None = spec.get("completions")
        uncounted = status.get("uncountedTerminatedPods") or {}
        unc_ok: list[str] = list(uncounted.get("succeeded") or ())
        unc_bad: list[str] = list(uncounted.get("failed") or ())
        done_indexes = jp.parse_indexes(status.get("completedIndexes"), completions or 0)
        in_flight = self.finalizers.pending(key)
        finishing = jp.finishing_condition(job)

        active = [p for p in pods if not is_terminal(p) and not is_deleting(p)]
        terminating = [p for p in pods if is_deleting(p) and not is_terminal(p)]
        by_uid = {p["metadata"]["uid"]: p for p in pods}

        # 1. the finished pods still holding the finalizer: count them (uncounted first)
        release: list[Obj] = []
        new_failures = new_successes = 0
        for pod in pods:
            pid = pod["metadata"]["uid"]
            if not _tracked(pod) or pid in in_flight:
                continue
            if phase(pod) == "Succeeded" and pid not in unc_bad:
                ix = jp.pod_index(pod) if indexed else None
                if indexed and ix is not None and completions and 0 <= ix < completions:
                    new_successes += ix not in done_indexes
                    done_indexes.add(ix)
                elif not indexed and pid not in unc_ok:
                    unc_ok.append(pid)
                    new_successes += 1
            elif phase(pod) == "Failed" or is_deleting(pod):
                if pid not in unc_bad and pid not in unc_ok:
                    unc_bad.append(pid)
                    new_failures += 1
            else:
                continue
            release.append(pod)
        self._note_backoff(key, new_failures, new_successes, now)

        succeeded = (
            len(done_indexes) if indexed else int(status.get("succeeded") or 0) + len(unc_ok)
        )
        failed = int(status.get("failed") or 0) + len(unc_bad)

        # 2. decide the outcome
        started = parse_time(status.get("startTime"))
        deadline = spec.get("activeDeadlineSeconds")
        suspended = bool(spec.get("suspend"))
        if finishing is None:
            if failed > int(
                spec.get("backoffLimit") if spec.get("backoffLimit") is not None else 6
            ):
                finishing = jp.new_condition(
                    jp.FAILURE_TARGET, jp.BACKOFF_LIMIT_EXCEEDED, jp.MSG_BACKOFF, now
                )
            elif (
                deadline is not None
                and started is not None
                and not suspended
                and now - started >= deadline
            ):
                finishing = jp.new_condition(
                    jp.FAILURE_TARGET, jp.DEADLINE_EXCEEDED, jp.MSG_DEADLINE, now
                )
            elif self._succeeded(completions, succeeded, len(active), indexed):
                finishing = jp.new_condition(
                    jp.SUCCESS_CRITERIA_MET, jp.COMPLETIONS_REACHED, jp.MSG_COMPLETIONS, now
                )
            if finishing is not None:
                jp.set_condition(status, finishing)

        # 3. suspend / resume / start
        requeue: list[float] = []
        if finishing is None and suspended:
            if jp.set_condition(
                status, jp.new_condition(jp.SUSPENDED, "JobSuspended", "Job suspended", now)
            ):
                self.recorder.normal(job, "Suspended", "Job suspended")
            status.pop("startTime", None)
        elif finishing is None:
            was = condition(job, jp.SUSPENDED)
            if was is not None and was.get("status") == "True":
                jp.set_condition(
                    status,
                    jp.new_condition(jp.SUSPENDED, "JobResumed", "Job resumed", now, "False"),
                )
                self.recorder.normal(job, "Resumed", "Job resumed")
                status["startTime"] = format_time(now)
            status.setdefault("startTime", format_time(now))
            if deadline is not None:
                begun = parse_time(status["startTime"]) or now
                requeue.append(max(begun + deadline - now, 0.05))

        # 4. create or delete pods
        created = deleted = 0
        if self.expectations.satisfied(key):
            if finishing is not None or suspended:
                deleted = await self.pod_control.delete(key, job, active)
            else:
                created, deleted, wait = await self._manage(
                    key, job, active, terminating, succeeded, done_indexes, now
                )
                if wait:
                    requeue.append(wait)
        else:  # look again when they expire, should their events never come
            requeue.append(self.options.expectations_timeout)

        # 5. status, then finalizers, then the final count
        status["active"] = len(active) + created - deleted
        status["ready"] = sum(1 for p in active if is_ready(p))
        status["terminating"] = len(terminating)
        status["failed"] = int(status.get("failed") or 0)
        status["succeeded"] = int(status.get("succeeded") or 0)
        if indexed:
            status["completedIndexes"] = jp.format_indexes(done_indexes)
            status["succeeded"] = len(done_indexes)
        released: set[str] = set()
        gone = {u for u in (*unc_ok, *unc_bad) if u not in in_flight and not _held(by_uid.get(u))}
        status["uncountedTerminatedPods"] = {"succeeded": unc_ok, "failed": unc_bad}
        if release:
            job = await self._write(job, status)
            status = copy.deepcopy(job.get("status") or {})
            released = await self.pod_control.release(release, key)
        flush = gone | released
        ok_left = [u for u in unc_ok if u not in flush]
        bad_left = [u for u in unc_bad if u not in flush]
        if not indexed:
            status["succeeded"] = int(status.get("succeeded") or 0) + len(unc_ok) - len(ok_left)
        status["failed"] = int(status.get("failed") or 0) + len(unc_bad) - len(bad_left)
        status["uncountedTerminatedPods"] = {"succeeded": ok_left, "failed": bad_left}
        if (
            finishing is not None
            and not active
            and not terminating
            and not ok_left
            and not bad_left
            and all(p["metadata"]["uid"] in released for p in pods if _tracked(p))
        ):
            self._finish(job, status, finishing, now)
        await self._write(job, status)
        return Result(requeue_after=min(requeue)) if requeue else None

    @staticmethod
    def _succeeded(completions: int | None, succeeded: int, active: int, indexed: bool) -> bool:
        if completions is None:
            return not indexed and succeeded > 0 and active == 0
        return succeeded >= completions

    def _finish(self, job: Obj, status: Obj, finishing: Obj, now: float) -> None:
        """All pods are gone: turn FailureTarget into Failed, SuccessCriteriaMet into Complete."""
        if finishing["type"] == jp.FAILURE_TARGET:
            jp.set_condition(
                status, jp.new_condition(jp.FAILED, finishing["reason"], finishing["message"], now)
            )
            self.recorder.warning(job, finishing["reason"], finishing["message"])
        else:
            jp.set_condition(
                status,
                jp.new_condition(jp.COMPLETE, finishing["reason"], finishing["message"], now),
            )
            status["completionTime"] = format_time(now)
            self.recorder.normal(job, "Completed", "Job completed")

    def _note_backoff(self, key: str, failures: int, successes: int, now: float) -> None:
        count, last = self.backoff.get(key, (0, 0.0))
        if successes:
            count = 0
        if failures:
            count, last = count + failures, now
        self.backoff[key] = (count, last)

    # -- pods --------------------------------------------------------------------------

    async def _manage(
        self,
        key: str,
        job: Obj,
        active: list[Obj],
        terminating: list[Obj],
        succeeded: int,
        done_indexes: set[int],
        now: float,
    ) -> tuple[int, int, float]:
        """Create or delete pods toward the wanted number; (created, deleted, wait)."""
        spec = job.get("spec") or {}
        completions: int | None = spec.get("completions")
        parallelism = int(spec.get("parallelism") or 0)
        if completions is None:
            want = len(active) if succeeded > 0 else parallelism
        else:
            want = max(0, min(parallelism, completions - succeeded))
        excess: list[Obj] = []
        indexes: list[int | None] = []
        if jp.is_indexed(job) and completions is not None:
            seen: set[int] = set()
            for pod in sorted(active, key=jp.deletion_order, reverse=True):
                ix = jp.pod_index(pod)
                if ix is None or ix >= completions or ix in done_indexes or ix in seen:
                    excess.append(pod)
                else:
                    seen.add(ix)
            keep = len(active) - len(excess)
            missing = [i for i in range(completions) if i not in done_indexes and i not in seen]
            indexes = list(missing[: max(0, want - keep)])
            if keep > want:
                kept = [p for p in active if p not in excess]
                excess += sorted(kept, key=jp.deletion_order)[: keep - want]
        else:
            if len(active) > want:
                excess = sorted(active, key=jp.deletion_order)[: len(active) - want]
            missing_n = want - len(active)
            if spec.get("podReplacementPolicy") == "Failed":
                missing_n -= len(terminating)
            indexes = [None] * max(0, missing_n)
        deleted = await self.pod_control.delete(key, job, excess) if excess else 0
        if not indexes:
            return 0, deleted, 0.0
        failures, last = self.backoff.get(key, (0, 0.0))
        delay = jp.backoff_delay(
            failures, self.options.job_backoff_base, self.options.job_backoff_cap
        )
        wait = last + delay - now
        if wait > 0:
            return 0, deleted, wait
        return await self.pod_control.create(key, job, indexes, jp.build_pod), deleted, 0.0

    # -- writes and TTL ----------------------------------------------------------------

    async def _write(self, job: Obj, status: Obj) -> Obj:
        """Replace the Job's status (conditional on the version read); the new Job."""
        if status == (job.get("status") or {}):
            return job
        md = job["metadata"]
        body = {**job, "status": status}
        try:
            return await rest.request(
                self.client, "PUT", JOBS.path(md["namespace"], md["name"], "status"), body=body
            )
        except rest.ApiError as exc:
            if rest.status_code(exc) in (404, 409):
                raise _Conflict() from exc
            raise


def _held(pod: Obj | None) -> bool:
    """The pod is still in the cache with its tracking finalizer."""
    return pod is not None and _tracked(pod)


def add_job_controller(mgr: Manager, options: ControllerOptions) -> JobController:
    """Wire the Job controller onto ``mgr``."""
    return JobController(mgr, options)
