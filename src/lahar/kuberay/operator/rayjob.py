"""The RayJob reconciler: KubeRay's deployment state machine (§2.2, §2.3).

One pass reads the RayJob from the cache and moves it at most one step::

    New -> Initializing -> (Waiting ->) Running -> Complete | Failed
    Initializing | Running -> Suspending -> Suspended -> New
    Failed (backoffLimit left) -> Retrying -> New      (fresh cluster, fresh id)

The step is computed on a copy of the status and written only when something
changed (lahar writes every status change; KubeRay drops changes to a few fields,
quirk 12). Everything the operator will create is named in the status *before*
it is created (``jobId``, ``rayClusterName``), every child is get-or-create by
that name, and the write carries the resourceVersion it read, so an operator
killed at any point and restarted neither duplicates a RayCluster nor submits
twice. Deadlines and grace periods read ``options.clock``. Each pass makes at most
one dashboard call and the controller requeues after 3 s, so polling never holds
a worker (:mod:`.jobrunning`); finished jobs are handled by :mod:`.jobfinish`.
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.kube import rest
from lahar.kube.reconcile import Request, Result
from lahar.kube.reconcile import logger as rlogger
from lahar.kuberay import naming, submitter, volcano
from lahar.kuberay import rayjob as plans
from lahar.kuberay.jobvalidation import validate_rayjob
from lahar.kuberay.meta import namespace_of
from lahar.kuberay.operator import jobrunning, kinds
from lahar.kuberay.operator.context import OperatorContext
from lahar.kuberay.operator.dashboard import TERMINAL, DashboardError
from lahar.kuberay.operator.jobfinish import finished, podgroup_cleanup
from lahar.kuberay.operator.podgroups import sync_podgroup
from lahar.kuberay.operator.raycluster import managed_elsewhere
from lahar.kuberay.rayjob import mode_of, selected_cluster
from lahar.kuberay.render import RAYJOB_FINALIZER

Obj = dict[str, Any]
NOT_RETRIED = ("DeadlineExceeded", "JobStatusCheckTimeoutExceeded")
RESET = ("rayClusterStatus", "rayClusterName", "dashboardURL", "jobId", "message", "reason",
         "rayJobInfo", "jobStatusCheckFailureStartTime")  # fmt: skip


class RayJobReconciler:
    def __init__(self, ctx: OperatorContext) -> None:
        self.ctx = ctx
        self.status_writes = 0

    def _passed(self, start: str | None, seconds: Any) -> bool:
        begun = kinds.parse_time(start)
        if not seconds or begun is None:
            return False
        return self.ctx.now() >= begun + float(seconds)

    async def __call__(self, req: Request) -> Result:
        try:
            return await self._reconcile(req)
        except rest.ApiError as exc:
            if not rest.is_status(exc, 409):
                raise
            # A write based on a cache that had not caught up: read again, no alarm.
            rlogger("lahar.kuberay.operator").debug("conflict, retrying: %s", exc)
            return Result(requeue=True)

    async def _reconcile(self, req: Request) -> Result:
        ctx = self.ctx
        job = ctx.caches.jobs.get(req.name, req.namespace)
        if job is None:
            ctx.metrics.forget_job(req.name, req.namespace)
            return Result()
        if managed_elsewhere(job):
            return Result()
        if job["metadata"].get("deletionTimestamp"):
            await self._finalize(job)
            return Result()
        old = job.get("status") or {}
        ctx.metrics.observe_job(req.name, req.namespace, old.get("jobDeploymentStatus", ""))
        causes = validate_rayjob(job)
        if (
            not causes
            and old.get("jobDeploymentStatus") == "Waiting"
            and mode_of(job) != "InteractiveMode"
        ):
            causes = ["status.jobDeploymentStatus: Waiting is only allowed in InteractiveMode"]
        if causes:
            text = "; ".join(
                x if isinstance(x, str) else (f"{x.field}: {x.message}" if x.field else x.message)
                for x in causes
            )
            ctx.recorder.warning(job, "InvalidRayJobSpec", text)
            new = dict(
                old, jobDeploymentStatus="ValidationFailed", reason="ValidationFailed", message=text
            )
            await self._write(job, old, new)
            return Result()
        state = old.get("jobDeploymentStatus") or ""
        new = copy.deepcopy(old)
        if state in ("Complete", "Failed"):
            return await finished(ctx, job)
        if state == "":
            job = await self._new(job, new)
        elif state == "Initializing":
            await self._initializing(job, new)
        elif state == "Waiting":
            if self._passed(old.get("startTime"), job["spec"].get("preRunningDeadlineSeconds")):
                self._fail(new, "PreRunningDeadlineExceeded", "the pre-running deadline passed")
            elif job["spec"].get("jobId"):
                new["jobId"] = job["spec"]["jobId"]
                new["jobDeploymentStatus"] = "Running"
            else:
                return Result(requeue_after=ctx.options.job_requeue)
        elif state == "Running":
            await self._running(job, new)
        elif state in ("Suspending", "Retrying"):
            if not await self._tear_down(job):
                return Result(requeue_after=ctx.options.job_requeue)
            for key in RESET:
                new.pop(key, None)
            new["jobStatus"] = ""
            new["jobDeploymentStatus"] = "Suspended" if state == "Suspending" else ""
        elif state == "Suspended":
            if job["spec"].get("suspend"):
                return Result()
            new["jobStatus"] = ""
            new["jobDeploymentStatus"] = ""
        else:  # ValidationFailed with a spec fixed since: KubeRay has no way out either
            return Result(requeue_after=ctx.options.job_requeue)
        self._backoff(job, old, new)
        await self._write(job, old, new)
        if new.get("jobDeploymentStatus") in ("Complete", "Failed"):
            return Result(requeue=True)  # run the finished branch (TTL, PodGroup) at once
        if new.get("jobDeploymentStatus") == "Suspended":
            return Result()
        return Result(requeue_after=ctx.options.job_requeue)

    # -- helpers ----------------------------------------------------------------------

    def _fail(self, new: Obj, reason: str, message: str) -> None:
        new.update(jobDeploymentStatus="Failed", reason=reason, message=message)

    def _backoff(self, job: Obj, old: Obj, new: Obj) -> None:
        """KubeRay's checkBackoffLimitAndUpdateStatusIfNeeded, on a transition."""
        after = new.get("jobDeploymentStatus")
        if after == old.get("jobDeploymentStatus"):
            return
        new.setdefault("succeeded", 0)
        new.setdefault("failed", 0)
        if after == "Failed":
            new["failed"] += 1
            limit = job["spec"].get("backoffLimit") or 0
            if new["failed"] < limit + 1 and new.get("reason") not in NOT_RETRIED:
                new["jobDeploymentStatus"] = "Retrying"
        elif after == "Complete" and new.get("jobStatus") == "SUCCEEDED":
            new["succeeded"] += 1

    async def _write(self, job: Obj, old: Obj, new: Obj) -> Obj:
        ctx = self.ctx
        before, after = old.get("jobDeploymentStatus") or "", new.get("jobDeploymentStatus") or ""
        now = ctx.now()
        if after != before and after in ("Complete", "Failed"):
            new["endTime"] = kinds.rfc3339(now)
        if new == old:
            return job
        body = copy.deepcopy(job)
        body["status"] = new
        out = await kinds.update_status(ctx.client, kinds.RAYJOBS, body)
        self.status_writes += 1
        ns, name = namespace_of(job), job["metadata"]["name"]
        ctx.metrics.observe_job(name, ns, after)
        if after != before:
            text = f"JobDeploymentStatus {before or 'New'} -> {after or 'New'}"
            if new.get("reason"):
                text += f" ({new['reason']}: {new.get('message', '')})"
            failed = after in ("Failed", "ValidationFailed", "Retrying")
            (ctx.recorder.warning if failed else ctx.recorder.normal)(job, after or "New", text)
            started = kinds.parse_time(old.get("startTime"))
            if after in ("Complete", "Failed", "Retrying") and started is not None:
                ctx.metrics.job_finished_attempt(
                    name, ns, after, int(new.get("failed") or 0), max(0.0, now - started)
                )
        return out

    async def _finalize(self, job: Obj) -> None:
        """Being deleted: stop the Ray job if it may still run, then drop the finalizer."""
        status = job.get("status") or {}
        if status.get("jobStatus") not in TERMINAL and status.get("dashboardURL"):
            try:
                dash = await self.ctx.dashboards.client(status["dashboardURL"])
                await dash.stop_job(status.get("jobId") or "")
            except DashboardError as exc:
                rlogger("lahar.kuberay.operator").info("stop job on deletion failed: %s", exc)
        finalizers = job["metadata"].get("finalizers") or []
        if RAYJOB_FINALIZER in finalizers:
            keep = [f for f in finalizers if f != RAYJOB_FINALIZER]
            patch = {"metadata": {"finalizers": keep,
                                  "resourceVersion": job["metadata"]["resourceVersion"]}}  # fmt: skip
            ns, name = kinds.ns_name(job)
            try:
                await kinds.merge_patch(self.ctx.client, kinds.RAYJOBS, ns, name, patch)
            except rest.ApiError as exc:
                if not rest.is_status(exc, 404):
                    raise

    # -- New --------------------------------------------------------------------------

    async def _new(self, job: Obj, new: Obj) -> Obj:
        finalizers = job["metadata"].get("finalizers") or []
        if RAYJOB_FINALIZER not in finalizers:
            patch = {"metadata": {"finalizers": [*finalizers, RAYJOB_FINALIZER],
                                  "resourceVersion": job["metadata"]["resourceVersion"]}}  # fmt: skip
            ns, name = kinds.ns_name(job)
            job = await kinds.merge_patch(self.ctx.client, kinds.RAYJOBS, ns, name, patch)
        plan = plans.plan(job, self.ctx.options.suffixes, self.ctx.options.build)
        if not new.get("jobId") and plan.job_id:
            new["jobId"] = plan.job_id
        if not new.get("rayClusterName"):
            new["rayClusterName"] = plan.cluster_name
        new.setdefault("jobStatus", "")
        new["startTime"] = kinds.rfc3339(self.ctx.now())
        new["jobDeploymentStatus"] = "Initializing"
        return job

    # -- Initializing -----------------------------------------------------------------

    async def _initializing(self, job: Obj, new: Obj) -> None:
        spec, status = job["spec"], job.get("status") or {}
        if spec.get("suspend"):
            new["jobDeploymentStatus"] = "Suspending"
            return
        if self._passed(status.get("startTime"), spec.get("activeDeadlineSeconds")):
            self._fail(new, "DeadlineExceeded", "the active deadline passed before the job ran")
            return
        if self._passed(status.get("startTime"), spec.get("preRunningDeadlineSeconds")):
            self._fail(new, "PreRunningDeadlineExceeded", "the pre-running deadline passed")
            return
        if self.ctx.options.volcano and not selected_cluster(job):
            # KubeRay refuses clusterSelector RayJobs here and keeps them Initializing
            # forever; lahar lets them through: the existing cluster's own PodGroup
            # already gangs its pods (docs/kuberay-compat.md).
            await sync_podgroup(self.ctx, volcano.podgroup_for_rayjob(job))
        cluster = await self._cluster(job)
        if not status.get("dashboardURL"):
            if (cluster.get("status") or {}).get("state") != "ready":
                new["rayClusterStatus"] = copy.deepcopy(cluster.get("status") or {})
                return
            new["dashboardURL"] = self._dashboard_url(job, cluster)
        else:
            new["rayClusterStatus"] = copy.deepcopy(cluster.get("status") or {})
        mode = mode_of(job)
        if mode == "InteractiveMode":
            new["jobDeploymentStatus"] = "Waiting"
            return
        if mode == "K8sJobMode":
            job = dict(job, status=dict(status, dashboardURL=new["dashboardURL"]))
            await self._ensure_submitter(job)
        new["jobDeploymentStatus"] = "Running"

    def _dashboard_url(self, job: Obj, cluster: Obj) -> str:
        ns = namespace_of(job)
        svc_name = naming.head_service_name(cluster["metadata"]["name"], cluster["spec"])
        svc = self.ctx.caches.services.get(svc_name, ns)
        if svc is None:
            raise RuntimeError(f"head Service {ns}/{svc_name} not found yet")
        for port in (svc.get("spec") or {}).get("ports") or ():
            if port.get("name") == "dashboard":
                fqdn = naming.fqdn(svc_name, ns, self.ctx.options.build.cluster_domain)
                return f"{fqdn}:{port['port']}"
        raise RuntimeError(f"head Service {ns}/{svc_name} has no port named dashboard")

    async def _cluster(self, job: Obj) -> Obj:
        """Get-or-create the RayCluster named in the status."""
        ctx = self.ctx
        ns, name = namespace_of(job), (job.get("status") or {})["rayClusterName"]
        cluster = ctx.caches.clusters.get(name, ns)
        if cluster is not None:
            return cluster
        cluster = await kinds.get(ctx.client, kinds.RAYCLUSTERS, ns, name)
        if cluster is not None:
            return cluster
        if selected_cluster(job):
            ctx.recorder.warning(job, "RayClusterNotFound", f"RayCluster {ns}/{name} not found")
            raise RuntimeError(f"the selected RayCluster {ns}/{name} does not exist")
        status = job["status"]
        plan = plans.RayJobPlan(status.get("jobId") or "", name, "", False)
        hook = volcano.add_child_metadata if ctx.options.volcano else None
        body = plans.build_cluster(job, plan, "", hook, ctx.options.build)
        created = await kinds.create(ctx.client, kinds.RAYCLUSTERS, body)
        if created is None:  # created by an earlier pass the cache has not shown yet
            created = await kinds.get(ctx.client, kinds.RAYCLUSTERS, ns, name)
            if created is None:
                raise RuntimeError(f"RayCluster {ns}/{name} vanished while being created")
        else:
            ctx.recorder.normal(job, "CreatedRayCluster", f"Created RayCluster {ns}/{name}")
        return created

    async def _ensure_submitter(self, job: Obj) -> None:
        ctx = self.ctx
        ns, name = namespace_of(job), job["metadata"]["name"]
        if ctx.caches.batch_jobs.get(name, ns) is not None:
            return
        status = job["status"]
        existing = ctx.caches.clusters.get(selected_cluster(job), ns)
        if existing is not None and not job["spec"].get("rayClusterSpec"):
            # The default submitter takes its image from the cluster it submits to.
            job = dict(job, spec=dict(job["spec"], rayClusterSpec=existing["spec"]))
        hook = None
        if ctx.options.volcano:
            # A clusterSelector RayJob has no PodGroup: its submitter joins the
            # existing cluster's (docs/kuberay-compat.md).
            parent = volcano.submitter_parent(job, existing)

            def hook(_job: Obj, child: Obj, group: str) -> None:
                volcano.add_child_metadata(parent, child, group)

        try:
            body = submitter.build_submitter_job(
                job, status["dashboardURL"], status.get("jobId") or "", hook, ctx.options.build
            )
        except submitter.SubmitterError as exc:
            ctx.recorder.warning(job, "FailedToCreateSubmitter", str(exc))
            raise
        if await kinds.create(ctx.client, kinds.JOBS, body) is not None:
            ctx.recorder.normal(job, "CreatedSubmitterJob", f"Created submitter Job {ns}/{name}")

    # -- Running ----------------------------------------------------------------------

    async def _running(self, job: Obj, new: Obj) -> None:
        spec, status, opts = job["spec"], job.get("status") or {}, self.ctx.options
        if spec.get("suspend"):
            new["jobDeploymentStatus"] = "Suspending"
            return
        if self._passed(status.get("startTime"), spec.get("activeDeadlineSeconds")):
            self._fail(new, "DeadlineExceeded", "the active deadline passed")
            return
        end = (status.get("rayJobInfo") or {}).get("endTime")
        if (
            status.get("jobStatus") in TERMINAL
            and end
            and self._passed(end, opts.transition_grace or 1e-9)
        ):
            reason = "JobDeploymentStatusTransitionGracePeriodExceeded"
            if status["jobStatus"] == "FAILED":
                self._fail(new, reason, "the Ray job failed")
            else:
                new.update(jobDeploymentStatus="Complete", reason=reason)
            return
        if self._passed(status.get("jobStatusCheckFailureStartTime"), opts.status_check_timeout):
            self._fail(new, "JobStatusCheckTimeoutExceeded", "the Ray job status could not be read")
            return
        cluster = await self._cluster(job)
        await jobrunning.ensure_job_head_service(self.ctx, job, cluster["metadata"]["name"])
        sub = await jobrunning.check_submitter(self.ctx, job, self._ensure_submitter)
        if isinstance(sub, str):
            self._fail(new, "AppFailed", sub)
            return
        if sub.finished_at is not None and self.ctx.now() >= sub.finished_at + opts.submitter_grace:
            self._fail(
                new, "JobDeploymentStatusTransitionGracePeriodExceeded",
                "the submitter finished but the Ray job did not reach a terminal state in time",
            )  # fmt: skip
            new["jobStatus"] = "FAILED"
            return
        if sub.failed:
            reason = "AppFailed" if status.get("jobStatus") == "FAILED" else "SubmissionFailed"
            self._fail(new, reason, sub.message)
            return
        await jobrunning.poll(self.ctx, job, new, sub)

    # -- Suspending / Retrying ---------------------------------------------------------

    async def _tear_down(self, job: Obj) -> bool:
        """Delete the cluster and the submitter Job; True once both are gone."""
        ctx = self.ctx
        ns, status = namespace_of(job), job.get("status") or {}
        pending = False
        name = status.get("rayClusterName")
        if name and not selected_cluster(job):
            pending |= await kinds.delete(ctx.client, kinds.RAYCLUSTERS, ns, name)
        if mode_of(job) == "K8sJobMode":
            pending |= await kinds.delete(
                ctx.client, kinds.JOBS, ns, job["metadata"]["name"], propagation="Background"
            )
        if pending:
            return False
        try:
            await podgroup_cleanup(ctx, job)
        except (rest.ApiError, volcano.VolcanoError) as exc:
            ctx.recorder.warning(job, "FailedToCleanUpBatchScheduler", str(exc))
            return False
        return True
