"""RayCluster -> Services: the head Service, the headless worker Service, the serve
Service, and the RayJob's own head Service (kuberay-semantics.md §3.2).

Without a user ``headService`` the head Service is headless (``clusterIP: None``,
``publishNotReadyAddresses``) with ports sorted by name, unless ``serviceType`` is
set to something other than ClusterIP. A user ``headService`` is the base: the
operator's selector replaces its selector, the operator's labels and
``headServiceAnnotations`` win on key clashes, its own name and type win, and the
operator's ports are appended to its ports.
"""

from __future__ import annotations

from typing import Any

from lahar.kuberay import constants as c
from lahar.kuberay import naming
from lahar.kuberay.meta import deep, namespace_of, owner_reference
from lahar.kuberay.options import DEFAULT_OPTIONS, OperatorOptions


class ServiceError(ValueError):
    """A Service the operator cannot build (a reconcile error in KubeRay)."""


def _head_container(cluster_spec: dict[str, Any]) -> dict[str, Any]:
    return cluster_spec["headGroupSpec"]["template"]["spec"]["containers"][0]


def head_ports(cluster_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Service ports from the head container (or KubeRay's defaults), metrics added."""
    declared = _head_container(cluster_spec).get("ports") or []
    ports: list[dict[str, Any]] = []
    if declared:
        for p in declared:
            number = int(p["containerPort"])
            ports.append({"name": p.get("name") or f"{number}-port", "port": number})
    else:
        ports = [{"name": n, "port": v} for n, v in c.DEFAULT_HEAD_PORTS.items()]
    if not any(p["name"] == "metrics" for p in ports):
        ports.append({"name": "metrics", "port": c.DEFAULT_METRICS_PORT})
    for p in ports:
        p["appProtocol"] = "tcp"
    return ports


def dashboard_port(cluster_spec: dict[str, Any]) -> int | None:
    for p in head_ports(cluster_spec):
        if p["name"] == "dashboard":
            return int(p["port"])
    return None


def _head_selector(cluster_name: str, app_name: str) -> dict[str, str]:
    return {
        c.CLUSTER_LABEL: cluster_name,
        c.NODE_TYPE_LABEL: "head",
        c.IDENTIFIER_LABEL: naming.check_label(f"{cluster_name}-head"),
        c.APP_NAME_LABEL: app_name,
        c.CREATED_BY_LABEL: c.CREATED_BY,
    }


def _assemble(
    name: str,
    namespace: str,
    cluster_spec: dict[str, Any],
    selector: dict[str, str],
    labels: dict[str, str],
    annotations: dict[str, str],
    owner: dict[str, Any],
    options: OperatorOptions,
) -> dict[str, Any]:
    head = cluster_spec["headGroupSpec"]
    custom = head.get("headService")
    ports = head_ports(cluster_spec)
    service_type = head.get("serviceType")
    if custom:
        svc = deep(custom)
        meta = svc.setdefault("metadata", {})
        spec = svc.setdefault("spec", {})
        meta.setdefault("name", name)
        meta["namespace"] = namespace
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        merged = {**(meta.get("annotations") or {}), **annotations}
        if merged:
            meta["annotations"] = merged
        spec["selector"] = selector
        spec["ports"] = [*(spec.get("ports") or []), *ports]
        if not spec.get("type") and service_type:
            spec["type"] = service_type
    else:
        meta = {"name": name, "namespace": namespace, "labels": labels}
        if annotations:
            meta["annotations"] = annotations
        spec = {"selector": selector, "ports": sorted(ports, key=lambda p: p["name"])}
        if service_type:
            spec["type"] = service_type
        if (
            not service_type or service_type == "ClusterIP"
        ) and not options.head_cluster_ip_service:
            spec["clusterIP"] = "None"
            spec["publishNotReadyAddresses"] = True
        svc = {"metadata": meta, "spec": spec}
    svc["metadata"]["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": "v1", "kind": "Service", **svc}


def build_head_service(
    cluster: dict[str, Any], options: OperatorOptions = DEFAULT_OPTIONS
) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    spec = cluster["spec"]
    template_labels = ((spec["headGroupSpec"].get("template") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}
    selector = _head_selector(name, template_labels.get(c.APP_NAME_LABEL, c.APP_NAME))
    annotations = dict(spec["headGroupSpec"].get("headServiceAnnotations") or {})
    return _assemble(
        naming.head_service_name(name, spec),
        namespace_of(cluster),
        spec,
        selector,
        dict(selector),
        annotations,
        cluster,
        options,
    )


def build_rayjob_head_service(
    rayjob: dict[str, Any], cluster_name: str, options: OperatorOptions = DEFAULT_OPTIONS
) -> dict[str, Any]:
    """``<rayjob>-head-svc``: a stable head address across retries (new clusters)."""
    job_name = rayjob["metadata"]["name"]
    spec = rayjob["spec"]["rayClusterSpec"]
    selector = _head_selector(cluster_name, c.APP_NAME)
    labels = {
        c.ORIGIN_NAME_LABEL: job_name,
        c.ORIGIN_CRD_LABEL: "RayJob",
        c.NODE_TYPE_LABEL: "head",
        c.IDENTIFIER_LABEL: naming.check_label(f"{job_name}-head"),
    }
    svc = _assemble(
        f"{job_name}-head-svc", namespace_of(rayjob), spec, selector, labels, {}, rayjob, options
    )
    svc["metadata"]["name"] = f"{job_name}-head-svc"
    svc["metadata"]["labels"] = labels
    return svc


def needs_headless_service(cluster_spec: dict[str, Any]) -> bool:
    return any((g.get("numOfHosts") or 1) > 1 for g in cluster_spec.get("workerGroupSpecs") or [])


def build_headless_worker_service(cluster: dict[str, Any]) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": naming.headless_service_name(name),
            "namespace": namespace_of(cluster),
            "labels": {c.HEADLESS_SVC_LABEL: name},
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "None",
            "selector": {c.CLUSTER_LABEL: name, c.NODE_TYPE_LABEL: "worker"},
            "publishNotReadyAddresses": True,
        },
    }


def wants_serve_service(cluster: dict[str, Any]) -> bool:
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    return annotations.get(c.SERVE_SERVICE_ANNOTATION) == "true"


def build_serve_service(cluster: dict[str, Any]) -> dict[str, Any]:
    """``<cluster>-serve-svc``: the head container's ``serve``/``serve-*`` ports."""
    name = cluster["metadata"]["name"]
    ports = [
        {"name": p["name"], "port": int(p["containerPort"])}
        for p in _head_container(cluster["spec"]).get("ports") or []
        if p.get("name") == "serve" or str(p.get("name", "")).startswith("serve-")
    ]
    if not ports:
        raise ServiceError(
            f"spec.headGroupSpec.template.spec.containers[0].ports: the annotation "
            f"{c.SERVE_SERVICE_ANNOTATION}=true needs a head container port named 'serve'"
        )
    spec: dict[str, Any] = {"selector": {c.CLUSTER_LABEL: name}, "ports": ports}
    service_type = cluster["spec"]["headGroupSpec"].get("serviceType")
    if service_type:
        spec["type"] = service_type
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": naming.serve_service_name(name),
            "namespace": namespace_of(cluster),
            "labels": {
                c.ORIGIN_NAME_LABEL: name,
                c.ORIGIN_CRD_LABEL: "RayCluster",
                "ray.io/serve": f"{name}-serve",
            },
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": spec,
    }
