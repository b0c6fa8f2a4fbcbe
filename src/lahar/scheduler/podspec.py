"""What the scheduler reads from a Pod: its resource request and Volcano's pod attributes.

The request follows Kubernetes and Volcano (§1.1): Σ of the regular containers, max'ed
per dimension with each init container (sidecar init containers, ``restartPolicy:
Always``, add to the sum), replaced by pod-level ``spec.resources.requests`` when given,
plus ``spec.overhead``, plus ``pods: 1``. A container's limit stands in for a missing
request, as API-server defaulting would have filled it in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lahar.scheduler.api.resources import PODS, ResourceSpace, Vector
from lahar.scheduler.api.task import TaskStatus

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_KEY = "volcano.sh/task-priority"
PREEMPTABLE_KEY = "volcano.sh/preemptable"


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def _container_request(container: Mapping[str, Any]) -> dict[str, Any]:
    resources = container.get("resources") or {}
    limits = dict(resources.get("limits") or {})
    limits.update(resources.get("requests") or {})
    return limits


def resource_names(pod: Mapping[str, Any]) -> set[str]:
    spec = pod.get("spec") or {}
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            names.update(_container_request(container))
    names.update((spec.get("overhead") or {}).keys())
    names.update(((spec.get("resources") or {}).get("requests") or {}).keys())
    return names


def _vector(space: ResourceSpace, resources: Mapping[str, Any] | None, where: str) -> Vector:
    """``space.vector`` with a per-space cache: pods of one workload repeat their requests."""
    if not resources:
        return space.zeros()
    try:
        key = tuple(sorted((str(k), str(v)) for k, v in resources.items()))
    except AttributeError:
        return space.vector(resources, where=where)
    hit = space.parsed.get(key)
    if hit is None:
        hit = space.vector(resources, where=where)
        space.parsed[key] = hit
    return hit.copy()


def pod_request(space: ResourceSpace, pod: Mapping[str, Any], where: str) -> Vector:
    spec = pod.get("spec") or {}
    total = space.zeros()
    for i, container in enumerate(spec.get("containers") or []):
        total += _vector(
            space, _container_request(container), f"{where}: spec.containers[{i}].resources"
        )
    init_max = space.zeros()
    for i, container in enumerate(spec.get("initContainers") or []):
        req = space.vector(
            _container_request(container), where=f"{where}: spec.initContainers[{i}].resources"
        )
        if container.get("restartPolicy") == "Always":
            total += req
        else:
            init_max = np.maximum(init_max, req + _sidecars(space, spec, i, where))
    total = np.maximum(total, init_max)
    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        level = space.vector(pod_level, where=f"{where}: spec.resources.requests")
        named = [space.index[n] for n in pod_level if n in space.index]
        total[named] = level[named]
    total += space.vector(spec.get("overhead"), where=f"{where}: spec.overhead")
    total[PODS] = 1.0
    return total


def _sidecars(space: ResourceSpace, spec: Mapping[str, Any], upto: int, where: str) -> Vector:
    """Σ requests of the sidecar init containers started before init container ``upto``."""
    total = space.zeros()
    for i, container in enumerate((spec.get("initContainers") or [])[:upto]):
        if container.get("restartPolicy") == "Always":
            total += space.vector(
                _container_request(container), where=f"{where}: spec.initContainers[{i}].resources"
            )
    return total


def annotation_or_label(pod: Mapping[str, Any], key: str) -> str | None:
    md = meta(pod)
    annotations = md.get("annotations") or {}
    if key in annotations:
        return str(annotations[key])
    labels = md.get("labels") or {}
    return str(labels[key]) if key in labels else None


def parse_bool(text: str | None, default: bool) -> bool:
    """Go's ``strconv.ParseBool``; unparsable -> False (as Volcano treats it)."""
    if text is None:
        return default
    return text in ("1", "t", "T", "TRUE", "true", "True")


def task_status(pod: Mapping[str, Any]) -> TaskStatus:
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = bool(meta(pod).get("deletionTimestamp"))
    node = (pod.get("spec") or {}).get("nodeName")
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if not node:
            return TaskStatus.PENDING
        return TaskStatus.RELEASING if deleting else TaskStatus.BOUND
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def priority_parts(pod: Mapping[str, Any]) -> tuple[int | None, Any, int | None]:
    """What :func:`task_priority` reads from a pod, without the PriorityClasses:
    (``spec.priority`` or None, ``spec.priorityClassName`` as given, the
    ``volcano.sh/task-priority`` override or None). Raises what the lookup of an
    unhashable class name would."""
    spec = pod.get("spec") or {}
    raw = spec.get("priority")
    pod_priority: int | None = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    class_name = spec.get("priorityClassName")
    if pod_priority is None:
        hash(class_name)  # looked up among the PriorityClasses
    override = (meta(pod).get("annotations") or {}).get(TASK_PRIORITY_KEY)
    value: int | None = None
    if override is not None:
        try:
            value = int(str(override))
        except ValueError:
            pass
        if value is not None and not -(2**31) <= value < 2**31:
            value = None
    return pod_priority, class_name, value


def resolve_priority(
    pod_priority: int | None, class_name: Any, override: int | None, classes: Mapping[str, int]
) -> tuple[int, int | None]:
    """:func:`task_priority` from :func:`priority_parts`."""
    if pod_priority is None and class_name in classes:
        pod_priority = classes[class_name]
    if override is not None:
        return override, pod_priority
    return (1 if pod_priority is None else pod_priority), pod_priority


def task_priority(pod: Mapping[str, Any], classes: Mapping[str, int]) -> tuple[int, int | None]:
    """(Volcano task priority, pod ``spec.priority`` or None).

    ``spec.priority`` if set; else the value of ``spec.priorityClassName`` when that
    PriorityClass is known (what admission would have written); else Volcano's default 1.
    The ``volcano.sh/task-priority`` annotation overrides when it is an int32.
    """
    return resolve_priority(*priority_parts(pod), classes)
