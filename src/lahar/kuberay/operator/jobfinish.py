"""What happens to a finished RayJob (Complete or Failed), pass after pass.

No status is written here. Every pass first re-sizes the Volcano PodGroup from the
live cluster (KubeRay v1.7's "recompute, do not delete", §5.2: a kept cluster
keeps its gang; a deleted one shrinks it to zero so the queue is released). A
RayJob that used an existing cluster (clusterSelector) stops there. Otherwise the
deletion policy runs: the ``deletionRules`` (the most destructive overdue rule not
yet satisfied, then a requeue at the next rule's expiry + 2 s), the legacy
``onSuccess``/``onFailure`` policy, or ``shutdownAfterJobFinishes`` with
``ttlSecondsAfterFinished`` (delete the cluster, or the RayJob itself with
``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``). The submitter Job is kept, so its logs
stay readable.
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.kube import rest
from lahar.kube.reconcile import Result
from lahar.kube.reconcile import logger as rlogger
from lahar.kuberay import volcano
from lahar.kuberay.meta import namespace_of
from lahar.kuberay.operator import kinds
from lahar.kuberay.operator.context import OperatorContext
from lahar.kuberay.operator.podgroups import sync_podgroup
from lahar.kuberay.rayjob import selected_cluster

Obj = dict[str, Any]
SLACK = 2.0
RANK = {"DeleteSelf": 3, "DeleteCluster": 2, "DeleteWorkers": 1, "DeleteNone": 0}


async def podgroup_cleanup(ctx: OperatorContext, job: Obj) -> bool:
    """Re-size the RayJob's PodGroup from its live cluster; True when it was written."""
    status = job.get("status") or {}
    if not ctx.options.volcano or selected_cluster(job) or not status.get("rayClusterName"):
        return False
    if not (job.get("spec") or {}).get("rayClusterSpec"):
        return False
    ns = namespace_of(job)
    live = await kinds.get(ctx.client, kinds.RAYCLUSTERS, ns, status["rayClusterName"])
    desired = volcano.podgroup_for_rayjob(job)
    desired["spec"].update(volcano.completion_sizing(live))
    written = await sync_podgroup(ctx, desired)
    if written:
        ctx.recorder.normal(
            job, "BatchSchedulerCleanedUp", f"PodGroup {desired['metadata']['name']} re-sized"
        )
    return written


def _cluster(ctx: OperatorContext, job: Obj) -> Obj | None:
    name = (job.get("status") or {}).get("rayClusterName")
    return ctx.caches.clusters.get(name, namespace_of(job)) if name else None


def _rule_satisfied(ctx: OperatorContext, job: Obj, policy: str) -> bool:
    cluster = _cluster(ctx, job)
    gone = cluster is None or bool(cluster["metadata"].get("deletionTimestamp"))
    if policy == "DeleteCluster":
        return gone
    if policy == "DeleteWorkers":
        groups = (cluster or {}).get("spec", {}).get("workerGroupSpecs") or []
        return gone or all(g.get("suspend") for g in groups)
    return policy == "DeleteNone"


async def _apply(ctx: OperatorContext, job: Obj, policy: str) -> None:
    ns = namespace_of(job)
    name = (job.get("status") or {}).get("rayClusterName") or ""
    if policy == "DeleteSelf":
        await kinds.delete(ctx.client, kinds.RAYJOBS, ns, job["metadata"]["name"])
        ctx.recorder.normal(job, "DeletedRayJob", "Deleted the RayJob (deletion policy)")
    elif policy == "DeleteCluster" and name:
        if await kinds.delete(ctx.client, kinds.RAYCLUSTERS, ns, name):
            ctx.recorder.normal(job, "DeletedRayCluster", f"Deleted RayCluster {ns}/{name}")
    elif policy == "DeleteWorkers" and name:
        live = await kinds.get(ctx.client, kinds.RAYCLUSTERS, ns, name)
        if live is None:
            return
        body = copy.deepcopy(live)
        for group in body["spec"].get("workerGroupSpecs") or ():
            group["suspend"] = True
        await kinds.update(ctx.client, kinds.RAYCLUSTERS, body)
        ctx.recorder.normal(job, "DeletedWorkers", f"Suspended the worker groups of {ns}/{name}")


async def finished(ctx: OperatorContext, job: Obj) -> Result:
    """The Complete/Failed branch."""
    try:
        await podgroup_cleanup(ctx, job)
    except (rest.ApiError, volcano.VolcanoError) as exc:
        rlogger("lahar.kuberay.operator").warning("PodGroup clean-up failed: %s", exc)
        ctx.recorder.warning(job, "FailedToCleanUpBatchScheduler", str(exc))
    if selected_cluster(job):
        return Result()
    spec, status = job["spec"], job.get("status") or {}
    now = ctx.now()
    end = kinds.parse_time(status.get("endTime")) or now
    strategy = spec.get("deletionStrategy")
    if strategy:
        if strategy.get("deletionRules") is not None:
            return await _rules(ctx, job, strategy["deletionRules"], end, now)
        return await _legacy(ctx, job, strategy, end, now)
    if spec.get("shutdownAfterJobFinishes"):
        due = end + float(spec.get("ttlSecondsAfterFinished") or 0)
        if now < due:
            return Result(requeue_after=due - now + SLACK)
        if ctx.options.delete_rayjob_after_finish:
            await _apply(ctx, job, "DeleteSelf")
        elif _cluster(ctx, job) is not None and not _rule_satisfied(ctx, job, "DeleteCluster"):
            await _apply(ctx, job, "DeleteCluster")
    return Result()


async def _rules(
    ctx: OperatorContext, job: Obj, rules: list[Obj], end: float, now: float
) -> Result:
    status = job.get("status") or {}
    matching = []
    for rule in rules:
        cond = rule.get("condition") or {}
        by_job = bool(cond.get("jobStatus")) and cond["jobStatus"] == status.get("jobStatus")
        deployment = cond.get("jobDeploymentStatus")
        if by_job or (deployment and deployment == status.get("jobDeploymentStatus")):
            matching.append(rule)

    def due(rule: Obj) -> float:
        return end + float((rule.get("condition") or {}).get("ttlSeconds") or 0)

    overdue = [r for r in matching if now >= due(r)]
    todo = [r for r in overdue if not _rule_satisfied(ctx, job, r.get("policy", ""))]
    if todo:
        chosen = max(todo, key=lambda r: RANK.get(r.get("policy", ""), -1))
        await _apply(ctx, job, chosen["policy"])
    later = [due(r) for r in matching if now < due(r)]
    return Result(requeue_after=min(later) - now + SLACK) if later else Result()


async def _legacy(ctx: OperatorContext, job: Obj, strategy: Obj, end: float, now: float) -> Result:
    job_status = (job.get("status") or {}).get("jobStatus")
    key = {"SUCCEEDED": "onSuccess", "FAILED": "onFailure"}.get(job_status or "")
    if key is None:
        return Result()
    policy = (strategy.get(key) or {}).get("policy") or "DeleteNone"
    if policy == "DeleteNone":
        return Result()
    due = end + float(job["spec"].get("ttlSecondsAfterFinished") or 0)
    if now < due:
        return Result(requeue_after=due - now + SLACK)
    if not _rule_satisfied(ctx, job, policy):
        await _apply(ctx, job, policy)
    return Result()
