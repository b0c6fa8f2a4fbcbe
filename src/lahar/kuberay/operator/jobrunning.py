"""The Running branch of the RayJob state machine (kuberay-semantics.md §2.3).

In KubeRay's order: suspend, the active deadline, the transition grace after the
Ray job ended, the status-check timeout; then the children (the cluster, recreated
if it vanished, and the RayJob's own head Service); then the submitter (the K8s
Job's ``Failed`` condition, or the sidecar container's exit) with its 30 s grace;
then one ``GET /api/jobs/<id>``. HTTPMode submits lazily, on the first 404. Each
pass makes at most one dashboard poll and returns; the controller requeues it
after 3 s, so no worker ever waits on a running job.

One deliberate fix (docs/kuberay-compat.md, quirk 13): a K8sJobMode submitter Job
that disappears is recreated (its script checks ``ray job status`` before it
submits, so this never submits twice) instead of leaving the RayJob stuck.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from lahar.kuberay import constants as c
from lahar.kuberay import services
from lahar.kuberay.meta import namespace_of
from lahar.kuberay.operator import kinds
from lahar.kuberay.operator.context import OperatorContext
from lahar.kuberay.operator.dashboard import (
    TERMINAL,
    DashboardError,
    JobAlreadyExists,
    JobNotFound,
    submit_request,
)
from lahar.kuberay.rayjob import mode_of, selected_cluster

Obj = dict[str, Any]


@dataclass
class Submitter:
    failed: bool = False
    message: str = ""
    finished_at: float | None = None


def _job_condition_time(batch_job: Obj) -> tuple[bool, float | None]:
    failed, finished = False, None
    for cond in (batch_job.get("status") or {}).get("conditions") or ():
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Failed":
            failed = True
        if cond.get("type") in ("Complete", "Failed") and finished is None:
            finished = kinds.parse_time(cond.get("lastTransitionTime"))
    return failed, finished


async def check_submitter(ctx: OperatorContext, job: Obj, ensure_job: Any) -> Submitter | str:
    """The submitter's state, or a failure message that ends the RayJob at once."""
    mode, ns = mode_of(job), namespace_of(job)
    if mode == "K8sJobMode":
        batch_job = ctx.caches.batch_jobs.get(job["metadata"]["name"], ns)
        if batch_job is None:
            await ensure_job(job)  # recreated: the script will not submit twice
            return Submitter()
        failed, finished = _job_condition_time(batch_job)
        return Submitter(failed, "the submitter Job failed" if failed else "", finished)
    if mode == "SidecarMode":
        cluster_name = (job.get("status") or {}).get("rayClusterName", "")
        heads = [
            p
            for p in ctx.cluster_pods(ns, cluster_name)
            if (p["metadata"].get("labels") or {}).get(c.NODE_TYPE_LABEL) == "head"
        ]
        if len(heads) > 1:
            raise RuntimeError(f"{len(heads)} head pods for RayCluster {cluster_name}")
        if not heads:
            return "Ray head pod not found."
        for cs in (heads[0].get("status") or {}).get("containerStatuses") or ():
            if cs.get("name") != c.SUBMITTER_CONTAINER:
                continue
            term = (cs.get("state") or {}).get("terminated")
            if term:
                code = term.get("exitCode", 0)
                return Submitter(
                    code != 0,
                    f"the submitter container exited with code {code}" if code else "",
                    kinds.parse_time(term.get("finishedAt")),
                )
    return Submitter()


async def ensure_job_head_service(ctx: OperatorContext, job: Obj, cluster_name: str) -> None:
    """``<rayjob>-head-svc``: created once, re-pointed when a retry made a new cluster."""
    if selected_cluster(job):
        return
    ns, name = namespace_of(job), f"{job['metadata']['name']}-head-svc"
    live = ctx.caches.services.get(name, ns)
    desired = services.build_rayjob_head_service(job, cluster_name, ctx.options.build)
    if live is None:
        if await kinds.create(ctx.client, kinds.SERVICES, desired) is not None:
            ctx.recorder.normal(job, "CreatedService", f"Created service {ns}/{name}")
        return
    selector = (live.get("spec") or {}).get("selector") or {}
    if selector.get(c.CLUSTER_LABEL) != cluster_name:
        body = copy.deepcopy(live)
        cluster_ip = body["spec"].get("clusterIP")
        body["spec"] = desired["spec"]
        if cluster_ip:
            body["spec"]["clusterIP"] = cluster_ip
        await kinds.update(ctx.client, kinds.SERVICES, body)


async def poll(ctx: OperatorContext, job: Obj, new: Obj, submitter: Submitter) -> None:
    """One GetJobInfo and what follows from it (steps 9-11); mutates ``new``."""
    status = job.get("status") or {}
    mode = mode_of(job)
    job_id = status.get("jobId") or ""
    calls = ctx.metrics.dashboard_calls
    try:
        dash = await ctx.dashboards.client(status.get("dashboardURL") or "")
        info = await dash.get_job_info(job_id)
    except JobNotFound:
        calls.labels("get_job_info", "not_found").inc()
        if mode == "HTTPMode":
            await _submit(ctx, job, new, dash, job_id)
        elif submitter.finished_at is not None:
            _fail(new, "AppFailed", "Submitter completed but Ray job not found in RayCluster.")
        return
    except DashboardError as exc:
        calls.labels("get_job_info", "error").inc()
        if not new.get("jobStatusCheckFailureStartTime"):
            new["jobStatusCheckFailureStartTime"] = kinds.rfc3339(ctx.now())
        new["message"] = f"Failed to get the Ray job status: {exc}"
        return
    calls.labels("get_job_info", "ok").inc()
    new.pop("jobStatusCheckFailureStartTime", None)
    cluster = ctx.caches.clusters.get(status.get("rayClusterName", ""), namespace_of(job))
    if cluster is not None:
        new["rayClusterStatus"] = copy.deepcopy(cluster.get("status") or {})
    new["jobStatus"] = info.status
    new["message"] = info.message
    new.pop("reason", None)
    ray_info: Obj = {}
    if info.start_time:
        ray_info["startTime"] = kinds.rfc3339(info.start_time / 1000)
    if info.end_time:
        ray_info["endTime"] = kinds.rfc3339(info.end_time / 1000)
    if ray_info:
        new["rayJobInfo"] = ray_info
    if info.status in TERMINAL and (
        mode in ("HTTPMode", "InteractiveMode") or submitter.finished_at is not None
    ):
        if info.status == "FAILED":
            _fail(new, "AppFailed", info.message)
        else:
            new["jobDeploymentStatus"] = "Complete"


async def _submit(ctx: OperatorContext, job: Obj, new: Obj, dash: Any, job_id: str) -> None:
    calls = ctx.metrics.dashboard_calls
    try:
        await dash.submit_job(submit_request(job, job_id))
    except JobAlreadyExists:
        calls.labels("submit_job", "already_exists").inc()
    except (DashboardError, ValueError) as exc:
        calls.labels("submit_job", "error").inc()
        if not new.get("jobStatusCheckFailureStartTime"):
            new["jobStatusCheckFailureStartTime"] = kinds.rfc3339(ctx.now())
        new["message"] = f"Failed to submit the Ray job: {exc}"
        ctx.recorder.warning(job, "FailedToSubmitJob", str(exc))
        return
    else:
        calls.labels("submit_job", "ok").inc()
        ctx.metrics.submissions.inc()
        ctx.recorder.normal(job, "SubmittedJob", f"Submitted Ray job {job_id}")
    new.pop("jobStatusCheckFailureStartTime", None)


def _fail(new: Obj, reason: str, message: str) -> None:
    new["jobDeploymentStatus"] = "Failed"
    new["reason"] = reason
    new["message"] = message
