"""``lahar render``'s pure pipeline: one RayCluster or RayJob in, every object the
operator would create out, in creation order.

For a RayCluster (kuberay-semantics.md §3.1 step 7 and §3.4): the autoscaler
ServiceAccount/Role/RoleBinding, the head Service, the headless worker Service,
the serve Service, the Volcano PodGroup (created by the pod reconcile before the
head), the head Pod, then the worker Pods group by group. For a RayJob (§2.3):
the PodGroup (Initializing, before the cluster), the RayCluster and everything
above for it, the submitter Job (K8sJobMode, once the dashboard URL is known),
then the RayJob's own head Service (Running). The first object is always the
input itself as the API server would store it (defaults applied, a uid, and for a
RayJob the status the operator writes before creating anything).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lahar.apiserver.errors import Cause
from lahar.kuberay import naming, pods, rayjob, rbac, services, submitter, volcano
from lahar.kuberay.defaults import schema_errors, with_defaults
from lahar.kuberay.jobvalidation import validate_rayjob
from lahar.kuberay.meta import autoscaling_enabled, deep, namespace_of
from lahar.kuberay.options import DEFAULT_OPTIONS, OperatorOptions
from lahar.kuberay.validation import cluster_warnings, validate_raycluster

BATCH_SCHEDULERS = ("volcano",)
RAYJOB_FINALIZER = "ray.io/rayjob-finalizer"
REDIS_CLEANUP_FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"


class RenderError(ValueError):
    """The input is invalid; ``causes`` name the fields."""

    def __init__(self, kind: str, name: str, causes: list[Cause]) -> None:
        self.causes = causes
        lines = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
        super().__init__(f"{kind} {name!r} is invalid:\n  " + "\n  ".join(lines))


@dataclass
class Rendered:
    objects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _prepare(obj: dict[str, Any], suffixes: naming.Suffixes) -> dict[str, Any]:
    out = with_defaults(deep(obj))
    meta = out.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + suffixes.suffix(
            f"{meta['namespace']}/{out.get('kind')}/{meta['generateName']}"
        )
    meta.setdefault(
        "uid", suffixes.uid(f"{meta['namespace']}/{out.get('kind')}/{meta.get('name')}")
    )
    return out


def _add_finalizer(obj: dict[str, Any], finalizer: str) -> None:
    finalizers = obj["metadata"].setdefault("finalizers", [])
    if finalizer not in finalizers:
        finalizers.append(finalizer)


def _cluster_children(
    cluster: dict[str, Any], ctx: _Context, out: Rendered, spec_path: str = "spec"
) -> None:
    spec = cluster["spec"]
    options = ctx.options
    if pods.ft_enabled(cluster):
        # Added (spec Update) before anything else; its cleanup Job runs on deletion.
        _add_finalizer(cluster, REDIS_CLEANUP_FINALIZER)
    if autoscaling_enabled(spec):
        out.objects.extend(rbac.build_autoscaler_rbac(cluster))
        out.notes.append(
            "ServiceAccount/Role/RoleBinding are listed as KubeRay creates them; "
            "lahar's embedded API server does not serve RBAC kinds yet"
        )
    if spec["headGroupSpec"].get("enableIngress"):
        out.notes.append("headGroupSpec.enableIngress: the Ingress is not built by lahar yet")
    out.objects.append(services.build_head_service(cluster, options))
    if services.needs_headless_service(spec):
        out.objects.append(services.build_headless_worker_service(cluster))
    if services.wants_serve_service(cluster):
        try:
            out.objects.append(services.build_serve_service(cluster))
        except services.ServiceError as exc:
            out.notes.append(f"no serve Service (the operator would retry with an error): {exc}")
    out.notes.extend(cluster_warnings(spec, spec_path))
    if spec.get("suspend"):
        out.notes.append("spec.suspend is true: no pods (and no PodGroup) until it is resumed")
        return
    if ctx.scheduler == "volcano" and volcano.cluster_has_own_podgroup(cluster):
        out.objects.append(with_defaults(volcano.podgroup_for_cluster(cluster)))
    out.objects.append(pods.build_head_pod(cluster, ctx.suffixes, ctx.hook, options))
    out.objects.extend(pods.build_worker_pods(cluster, ctx.suffixes, ctx.hook, options))


@dataclass(frozen=True)
class _Context:
    suffixes: naming.Suffixes
    scheduler: str | None
    options: OperatorOptions

    @property
    def hook(self) -> pods.PodHook | None:
        return volcano.add_child_metadata if self.scheduler == "volcano" else None


def _check(obj: dict[str, Any], rules: Callable[[dict[str, Any]], list[Cause]]) -> None:
    """Schema first (as the API server does); KubeRay's rules assume well-typed input."""
    causes = schema_errors(obj) or rules(obj)
    if causes:
        raise RenderError(obj.get("kind", ""), naming_of(obj), causes)


def naming_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _context(seed: int | None, scheduler: str | None, options: OperatorOptions | None) -> _Context:
    if scheduler is not None and scheduler not in BATCH_SCHEDULERS:
        raise ValueError(f"unknown batch scheduler {scheduler!r}; supported: {BATCH_SCHEDULERS}")
    return _Context(naming.Suffixes(seed), scheduler, options or DEFAULT_OPTIONS)


def render_raycluster(
    obj: dict[str, Any],
    *,
    seed: int | None = 0,
    batch_scheduler: str | None = None,
    options: OperatorOptions | None = None,
) -> Rendered:
    ctx = _context(seed, batch_scheduler, options)
    cluster = _prepare(obj, ctx.suffixes)
    _check(cluster, validate_raycluster)
    out = Rendered(objects=[cluster])
    _cluster_children(cluster, ctx, out)
    return out


def render_rayjob(
    obj: dict[str, Any],
    *,
    seed: int | None = 0,
    batch_scheduler: str | None = None,
    options: OperatorOptions | None = None,
) -> Rendered:
    ctx = _context(seed, batch_scheduler, options)
    job = _prepare(obj, ctx.suffixes)
    _check(job, validate_rayjob)
    plan = rayjob.plan(job, ctx.suffixes, ctx.options)
    if job["spec"].get("suspend"):
        # New -> Initializing -> Suspending -> Suspended: the ids are reset, nothing is built.
        shown = deep(job)
        shown["status"] = {"jobDeploymentStatus": "Suspended"}
        _add_finalizer(shown, RAYJOB_FINALIZER)
        note = "spec.suspend is true: the RayJob goes to Suspended and creates nothing"
        return Rendered(objects=[shown], notes=[note])
    shown = rayjob.with_status(job, plan)
    _add_finalizer(shown, RAYJOB_FINALIZER)
    out = Rendered(objects=[shown])
    mode = rayjob.mode_of(job)
    if plan.uses_existing_cluster:
        if ctx.scheduler == "volcano":
            # KubeRay leaves such a RayJob in Initializing forever; lahar fixes that on
            # purpose (docs/kuberay-compat.md): no PodGroup of its own, and its submitter
            # joins the existing cluster's PodGroup.
            out.notes.append(
                "with Volcano, this RayJob gets no PodGroup of its own: its submitter joins "
                f"the PodGroup of the existing RayCluster {plan.cluster_name!r} (KubeRay "
                "would keep it in Initializing)"
            )
        out.notes.append(
            f"uses the existing RayCluster {plan.cluster_name!r}; the dashboard URL assumes "
            "its default head Service name and port 8265"
        )
    else:
        if ctx.scheduler == "volcano":
            out.objects.append(with_defaults(volcano.podgroup_for_rayjob(job)))
        uid = ctx.suffixes.uid(f"{namespace_of(job)}/RayCluster/{plan.cluster_name}")
        cluster = with_defaults(rayjob.build_cluster(job, plan, uid, ctx.hook, ctx.options))
        out.objects.append(cluster)
        _cluster_children(cluster, ctx, out, "spec.rayClusterSpec")
    if not plan.dashboard_url:
        out.notes.append(
            "the head Service has no port named 'dashboard': KubeRay keeps this RayJob in "
            "Initializing, so no submitter and no RayJob head Service are created"
        )
        return out
    if mode == "K8sJobMode":
        try:
            out.objects.append(
                submitter.build_submitter_job(
                    job, plan.dashboard_url, plan.job_id, ctx.hook, ctx.options
                )
            )
        except submitter.SubmitterError as exc:
            raise RenderError(
                "RayJob", naming_of(job), [Cause("FieldValueInvalid", str(exc))]
            ) from None
    if not plan.uses_existing_cluster:
        out.objects.append(services.build_rayjob_head_service(job, plan.cluster_name, ctx.options))
    if mode == "InteractiveMode":
        out.notes.append("InteractiveMode: no submitter; the RayJob waits for spec.jobId")
    elif mode == "HTTPMode":
        out.notes.append("HTTPMode: no submitter; the operator POSTs the job to the dashboard")
    return out


def render(
    obj: dict[str, Any],
    *,
    seed: int | None = 0,
    batch_scheduler: str | None = None,
    options: OperatorOptions | None = None,
) -> Rendered:
    """Every object the operator creates for ``obj`` (a RayCluster or RayJob)."""
    kind = obj.get("kind")
    if kind == "RayCluster":
        return render_raycluster(obj, seed=seed, batch_scheduler=batch_scheduler, options=options)
    if kind == "RayJob":
        return render_rayjob(obj, seed=seed, batch_scheduler=batch_scheduler, options=options)
    raise ValueError(f"render handles RayCluster and RayJob, not {kind}")
