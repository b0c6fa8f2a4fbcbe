"""RayJob -> the RayCluster it creates, and the status fields written before it.

KubeRay makes RayJob creation idempotent by writing the cluster name and the
submission id into ``status`` *before* creating anything; every child is then
get-or-create by those names. :func:`plan` computes those status values (the
random suffixes come from :class:`~lahar.kuberay.naming.Suffixes`, seeded in
``lahar render``), :func:`build_cluster` the RayCluster (§2.6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lahar.kuberay import constants as c
from lahar.kuberay import naming, services, submitter
from lahar.kuberay.meta import annotations_of, deep, labels_of, namespace_of, owner_reference
from lahar.kuberay.options import DEFAULT_OPTIONS, OperatorOptions


@dataclass(frozen=True)
class RayJobPlan:
    """What the New -> Initializing pass writes to status, plus the dashboard URL."""

    job_id: str
    cluster_name: str
    dashboard_url: str
    uses_existing_cluster: bool


def mode_of(rayjob: dict[str, Any]) -> str:
    return (rayjob.get("spec") or {}).get("submissionMode") or "K8sJobMode"


def selected_cluster(rayjob: dict[str, Any]) -> str:
    return ((rayjob.get("spec") or {}).get("clusterSelector") or {}).get(c.CLUSTER_LABEL, "")


def plan(
    rayjob: dict[str, Any], suffixes: naming.Suffixes, options: OperatorOptions = DEFAULT_OPTIONS
) -> RayJobPlan:
    name = rayjob["metadata"]["name"]
    ns = namespace_of(rayjob)
    spec = rayjob["spec"]
    job_id = spec.get("jobId") or ""
    if not job_id and mode_of(rayjob) != "InteractiveMode":
        # InteractiveMode waits for the user to fill spec.jobId in.
        job_id = f"{name}-{suffixes.suffix(f'{ns}/{name}/jobId')}"
    existing = selected_cluster(rayjob)
    cluster_name = existing or f"{name}-{suffixes.suffix(f'{ns}/{name}/cluster')}"
    if existing:
        # The existing cluster is not in the input: assume KubeRay's default head
        # Service name and dashboard port.
        url = f"{naming.fqdn(f'{existing}-head-svc', ns, options.cluster_domain)}:{c.DEFAULT_DASHBOARD_PORT}"
    else:
        cspec = spec["rayClusterSpec"]
        svc = naming.head_service_name(cluster_name, cspec)
        port = services.dashboard_port(cspec)
        url = f"{naming.fqdn(svc, ns, options.cluster_domain)}:{port}" if port is not None else ""
    return RayJobPlan(job_id, cluster_name, url, bool(existing))


def build_cluster(
    rayjob: dict[str, Any],
    the_plan: RayJobPlan,
    uid: str = "",
    hook: Any = None,
    options: OperatorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    """The RayCluster a RayJob creates (§2.6), owned by the RayJob."""
    mode = mode_of(rayjob)
    labels = labels_of(rayjob)
    labels.update(
        {
            c.ORIGIN_NAME_LABEL: rayjob["metadata"]["name"],
            c.ORIGIN_CRD_LABEL: "RayJob",
            c.SUBMISSION_MODE_LABEL: mode,
        }
    )
    annotations = annotations_of(rayjob)
    spec = deep(rayjob["spec"]["rayClusterSpec"])
    if mode == "SidecarMode":
        annotations[c.DISABLE_HEAD_RESTART_ANNOTATION] = "true"
        head = spec["headGroupSpec"]["template"].setdefault("spec", {})
        port = services.dashboard_port(spec) or c.DEFAULT_DASHBOARD_PORT
        head["containers"].append(
            submitter.sidecar_container(rayjob, port, the_plan.job_id, options)
        )
        head["restartPolicy"] = "Never"
    meta: dict[str, Any] = {
        "name": the_plan.cluster_name,
        "namespace": namespace_of(rayjob),
        "labels": labels,
    }
    if annotations:
        meta["annotations"] = annotations
    if uid:
        meta["uid"] = uid
    meta["ownerReferences"] = [owner_reference(rayjob)]
    cluster = {
        "apiVersion": c.RAY_API_VERSION,
        "kind": "RayCluster",
        "metadata": meta,
        "spec": spec,
    }
    if hook and mode == "K8sJobMode":
        hook(rayjob, cluster, "")
    return cluster


def with_status(rayjob: dict[str, Any], the_plan: RayJobPlan) -> dict[str, Any]:
    """The RayJob as the Initializing pass leaves it (ids written before children)."""
    out = deep(rayjob)
    status = out.setdefault("status", {})
    if the_plan.job_id:
        status["jobId"] = the_plan.job_id
    status["rayClusterName"] = the_plan.cluster_name
    if the_plan.dashboard_url:
        status["dashboardURL"] = the_plan.dashboard_url
    status["jobDeploymentStatus"] = "Initializing"
    return out
