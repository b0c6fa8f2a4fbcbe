"""Small builders of Kubernetes objects (as dicts) for scheduler tests."""

from __future__ import annotations

from typing import Any

from lahar.scheduler.framework.conf import SchedulerConfiguration, default_conf, parse_conf
from lahar.scheduler.run import SessionResult, run_session
from lahar.scheduler.snapshot import build_cluster


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(
    name: str,
    group: str | None = None,
    *,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    namespace: str = "default",
    node_name: str | None = None,
    phase: str | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    scheduler: str = "volcano",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
    node_selector: dict[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    requests.update(extra or {})
    ann = dict(annotations or {})
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = node_selector
    md: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "annotations": ann,
        "labels": labels or {},
        "creationTimestamp": created,
    }
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": md,
        "spec": spec,
        "status": {"phase": phase or ("Running" if node_name else "Pending")},
    }


def podgroup(
    name: str,
    min_member: int = 1,
    *,
    queue: str = "default",
    namespace: str = "default",
    phase: str = "Pending",
    min_resources: dict[str, str] | None = None,
    priority_class: str | None = None,
    created: str = "2026-01-01T00:00:00Z",
    min_task_member: dict[str, int] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_task_member:
        spec["minTaskMember"] = min_task_member
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(
    name: str,
    weight: int = 1,
    *,
    capability: dict[str, str] | None = None,
    guarantee: dict[str, str] | None = None,
    deserved: dict[str, str] | None = None,
    reclaimable: bool | None = None,
    state: str = "Open",
    parent: str | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if capability:
        spec["capability"] = capability
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    if deserved:
        spec["deserved"] = deserved
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if parent:
        spec["parent"] = parent
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


def priority_class(name: str, value: int, *, default: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
    }


def conf(actions: str, *tiers: list[str | dict[str, Any]]) -> SchedulerConfiguration:
    """A configuration from an actions string and tiers of plugin names or entries."""
    doc = {
        "actions": actions,
        "tiers": [
            {"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]} for tier in tiers
        ],
    }
    import yaml

    return parse_conf(yaml.safe_dump(doc))


def schedule(
    objects: list[dict[str, Any]],
    configuration: SchedulerConfiguration | None = None,
    *,
    seed: int = 0,
) -> SessionResult:
    cluster = build_cluster(objects)
    _ssn, result = run_session(cluster, configuration or default_conf(), seed=seed)
    return result


def gang(
    name: str,
    size: int,
    min_member: int | None = None,
    *,
    queue: str = "default",
    cpu: str = "1",
    memory: str = "1Gi",
    phase: str = "Pending",
    **pod_kw: Any,
) -> list[dict[str, Any]]:
    """A PodGroup and ``size`` pending pods ``<name>-<i>``."""
    objs = [podgroup(name, size if min_member is None else min_member, queue=queue, phase=phase)]
    objs += [pod(f"{name}-{i}", name, cpu=cpu, memory=memory, **pod_kw) for i in range(size)]
    return objs
