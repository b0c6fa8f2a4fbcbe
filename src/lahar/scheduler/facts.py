"""What a snapshot build reads from one Node, Pod or PodGroup, kept per object version.

The build (``scheduler/snapshot.py``) reads an object in two steps: first its name and
the resource names it mentions (all objects, to fix the session's resource space),
then the rest, which needs that space (vectors) and validates the remaining fields.
Each step's result is a *facts* object kept in the :class:`~lahar.scheduler.memo.ParseMemo`
under (kind, uid, resourceVersion): the second step's part is kept with the space's
names and read again when they change. The reading functions here do the very reads
the build always did, in the same order, so a bad object fails with the same
:class:`SnapshotError` as before; an object found in the memo was read without error
in that version.

What a build must never take from the memo: the scheduler cache's overlays hand the
build shallow copies of a pod with the same uid and resourceVersion but another
``spec.nodeName`` (an assumed bind) or ``metadata.deletionTimestamp`` (an eviction), so
the task status and the node are read from the object given, each build. Nothing kept
here depends on those two fields, on the PriorityClasses or on the scheduler names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lahar.scheduler.api.resources import ResourceError, ResourceSpace, is_empty
from lahar.scheduler.api.task import TaskStatus, name_ordinal
from lahar.scheduler.podspec import (
    GROUP_ANNOTATION,
    PREEMPTABLE_KEY,
    TASK_SPEC_KEY,
    annotation_or_label,
    meta,
    parse_bool,
    pod_request,
    priority_parts,
    resource_names,
)


class SnapshotError(ValueError):
    """An input object the scheduler cannot read; the message names object and field."""


# the object being read, for messages about malformed objects
_CURRENT: list[str] = ["input"]


def _describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _name(obj: Mapping[str, Any], kind: str, namespaced: bool) -> tuple[str, str]:
    """Namespace and name of an object; also remembers it for error messages."""
    md = meta(obj)
    name = md.get("name")
    if not isinstance(name, str) or not name:
        raise SnapshotError(f"{kind} without metadata.name")
    namespace = str(md.get("namespace") or "default") if namespaced else ""
    _CURRENT[0] = _describe(kind, namespace, name)
    for field_name in ("spec", "status"):
        if obj.get(field_name) is not None and not isinstance(obj.get(field_name), dict):
            raise SnapshotError(f"{_CURRENT[0]}: {field_name}: expected a map")
    return namespace, name


def _int(value: Any, where: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotError(f"{where}: expected an integer, got {value!r}")
    return value


def _vector(space: ResourceSpace, resources: Any, where: str, fill: float = 0.0) -> np.ndarray:
    try:
        return space.vector(resources, where=where, fill=fill)
    except ResourceError as exc:
        raise SnapshotError(str(exc)) from None


class Facts:
    """First step: name and resource names. ``space`` is the resource names the second
    step's part was read for (None until it is)."""

    __slots__ = ("key", "name", "names", "namespace", "space", "where")

    def __init__(self, obj: Mapping[str, Any], kind: str, namespaced: bool) -> None:
        self.namespace, self.name = _name(obj, kind, namespaced)
        self.where = _CURRENT[0]
        self.key = f"{self.namespace}/{self.name}"
        self.space: tuple[str, ...] | None = None
        self.names: frozenset[str] = frozenset()

    def read(self, obj: Mapping[str, Any], space: ResourceSpace, names: tuple[str, ...]) -> None:
        """The second step, in the space of ``names``."""
        self.space = None  # a read that fails leaves nothing half-renewed taken for done
        self._read(obj, space)
        self.space = names

    def _read(self, obj: Mapping[str, Any], space: ResourceSpace) -> None:
        raise NotImplementedError


class NodeFacts(Facts):
    __slots__ = ("alloc", "labels", "ready", "taints", "unschedulable")

    def __init__(self, node: Mapping[str, Any]) -> None:
        super().__init__(node, "Node", False)
        status = node.get("status") or {}
        self.names = frozenset((status.get("allocatable") or status.get("capacity") or {}).keys())

    def _read(self, node: Mapping[str, Any], space: ResourceSpace) -> None:
        status = node.get("status") or {}
        source = status.get("allocatable") or status.get("capacity")
        self.alloc = _vector(space, source, f"Node {self.name}: status.allocatable")
        spec = node.get("spec") or {}
        self.labels = dict(meta(node).get("labels") or {})
        self.taints = list(spec.get("taints") or [])
        self.unschedulable = bool(spec.get("unschedulable"))
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        self.ready = conds.get("Ready", "True") == "True"


class GroupFacts(Facts):
    __slots__ = (
        "conditions",
        "creation",
        "min_resources",
        "minimum",
        "phase",
        "preemptable",
        "priority_class",
        "queue",
        "task_min",
    )

    def __init__(self, pg: Mapping[str, Any]) -> None:
        super().__init__(pg, "PodGroup", True)
        self.names = frozenset(((pg.get("spec") or {}).get("minResources") or {}).keys())

    def _read(self, pg: Mapping[str, Any], space: ResourceSpace) -> None:
        where = self.where
        spec = pg.get("spec") or {}
        minimum = _int(spec.get("minMember"), f"{where}: spec.minMember", 1)
        if minimum < 0:
            raise SnapshotError(f"{where}: spec.minMember must not be negative")
        task_min = spec.get("minTaskMember") or {}
        if not isinstance(task_min, dict):
            raise SnapshotError(f"{where}: spec.minTaskMember: expected a map")
        self.minimum = minimum
        self.queue = str(spec.get("queue") or "default")
        pc = spec.get("priorityClassName")
        min_res = spec.get("minResources")
        self.task_min = {
            str(k): _int(v, f"{where}: spec.minTaskMember.{k}", 0) for k, v in task_min.items()
        }
        if pc:
            hash(pc)  # looked up among the PriorityClasses: the TypeError that would raise
        self.priority_class = pc
        self.preemptable = parse_bool(annotation_or_label(pg, PREEMPTABLE_KEY), False)
        self.phase = str((pg.get("status") or {}).get("phase") or "Pending")
        self.min_resources = (
            None if min_res is None else _vector(space, min_res, f"{where}: spec.minResources")
        )
        self.creation = str(meta(pg).get("creationTimestamp") or "")
        self.conditions = [
            (str(cond["type"]), cond)
            for cond in (pg.get("status") or {}).get("conditions") or []
            if isinstance(cond, dict) and cond.get("type")
        ]


S = TaskStatus


def _phase(pod: Mapping[str, Any]) -> str | TaskStatus:
    """ "Running" or "Pending" (the status then depends on node and deletion), else the
    status (as :func:`~lahar.scheduler.podspec.task_status` reads it)."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase == "Running" or phase == "Pending":
        return "Running" if phase == "Running" else "Pending"
    if phase == "Succeeded":
        return S.SUCCEEDED
    return S.FAILED if phase == "Failed" else S.UNKNOWN


class PodFacts(Facts):
    __slots__ = (
        "best_effort",
        "class_name",
        "creation",
        "gated",
        "job_group",
        "nominated",
        "ordinal",
        "override",
        "phase",
        "preemptable",
        "preemption_policy",
        "priority_class_name",
        "raw_priority",
        "resreq",
        "role",
        "scheduler",
        "sort_key",
        "uid",
    )

    def __init__(self, pod: Mapping[str, Any]) -> None:
        super().__init__(pod, "Pod", True)
        self.names = frozenset(resource_names(pod))

    def _read(self, pod: Mapping[str, Any], space: ResourceSpace) -> None:
        """Everything but status and node (see the module doc)."""
        spec = pod.get("spec") or {}
        md = meta(pod)
        group = (md.get("annotations") or {}).get(GROUP_ANNOTATION)
        self.job_group = f"{self.namespace}/{group}" if group else ""
        self.scheduler = spec.get("schedulerName") or "default-scheduler"
        self.raw_priority, self.class_name, self.override = priority_parts(pod)
        self.uid = str(md.get("uid") or self.key)
        self.sort_key = (self.key, self.uid)
        self.resreq = pod_request(space, pod, self.where)
        self.phase = _phase(pod)
        self.role = annotation_or_label(pod, TASK_SPEC_KEY) or ""
        self.preemptable = parse_bool(annotation_or_label(pod, PREEMPTABLE_KEY), True)
        self.priority_class_name = str(spec.get("priorityClassName") or "")
        self.preemption_policy = str(spec.get("preemptionPolicy") or "")
        self.nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        self.creation = str(md.get("creationTimestamp") or "")
        self.gated = bool(spec.get("schedulingGates"))
        self.best_effort = is_empty(self.resreq)
        self.ordinal = name_ordinal(self.name)
