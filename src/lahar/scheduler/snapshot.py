"""Build a session snapshot (ClusterInfo) from Kubernetes objects.

Input is plain dicts as ``kubectl get ... -o yaml`` prints them: Nodes, Pods,
PodGroups (``scheduling.volcano.sh/v1beta1``), Queues and PriorityClasses, from
multi-document YAML or ``kind: List`` documents (see :func:`load_documents`).

Choices, following Volcano's cache (§1, §8):

* A pod belongs to the PodGroup named by its ``scheduling.k8s.io/group-name``
  annotation. Pods whose ``schedulerName`` is not one of the scheduler's names are never
  scheduled, but pods of any scheduler that sit on a node use its resources.
* Only PodGroups whose queue exists enter the session. The queues ``default``
  (reclaimable) and ``root`` (not reclaimable) exist implicitly when the input lacks
  them, as Volcano's scheduler cache and queue controller create them.
* Queue ``spec.weight`` absent means 1 (the CRD/admission default); PodGroup
  ``spec.minMember`` absent means 1 and ``spec.queue`` absent means ``default``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import yaml

from lahar.scheduler.api.cluster import ClusterInfo
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import CPU, MEMORY, ResourceError, ResourceSpace
from lahar.scheduler.api.task import COMPLETED_SET, TaskInfo
from lahar.scheduler.gcpause import paused_gc
from lahar.scheduler.memo import ParseMemo
from lahar.scheduler.podspec import (
    GROUP_ANNOTATION,
    PREEMPTABLE_KEY,
    TASK_SPEC_KEY,
    annotation_or_label,
    meta,
    parse_bool,
    pod_request,
    resource_names,
    task_priority,
    task_status,
)

SCHEDULER_NAMES = ("volcano",)


class SnapshotError(ValueError):
    """An input object the scheduler cannot read; the message names object and field."""


def load_documents(texts: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Objects from ``(source name, YAML text)`` pairs; ``kind: List`` is flattened."""
    objects: list[dict[str, Any]] = []
    for source, text in texts:
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise SnapshotError(f"{source}: not valid YAML: {exc}") from None
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise SnapshotError(f"{source}: document {i + 1} is not an object")
            if doc.get("kind") == "List" or (
                doc.get("kind", "").endswith("List") and "items" in doc
            ):
                items = doc.get("items") or []
                if not isinstance(items, list):
                    raise SnapshotError(f"{source}: document {i + 1}: items must be a list")
                for j, item in enumerate(items):
                    if not isinstance(item, dict):
                        raise SnapshotError(
                            f"{source}: document {i + 1}: items[{j}] is not an object"
                        )
                    objects.append(item)
            else:
                objects.append(doc)
    return objects


_CURRENT: list[str] = ["input"]


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


def _describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _int(value: Any, where: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotError(f"{where}: expected an integer, got {value!r}")
    return value


class _Builder:
    def __init__(
        self,
        objects: list[dict[str, Any]],
        scheduler_names: tuple[str, ...],
        memo: ParseMemo | None = None,
    ) -> None:
        self.scheduler_names = scheduler_names
        self.memo = memo if memo is not None else ParseMemo()
        # id(object) -> (namespace, name, description), checked once per build
        self._seen: dict[int, tuple[str, str, str]] = {}
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        for obj in objects:
            kind = obj.get("kind")
            if not isinstance(kind, str):
                raise SnapshotError(f"object {meta(obj).get('name', '?')!r} has no kind")
            self.by_kind.setdefault(kind, []).append(obj)
        self.space = ResourceSpace(self._resource_names())
        self.names = tuple(self.space.names)

    def _remember(self, obj: dict[str, Any], named: tuple[str, str]) -> None:
        self._seen[id(obj)] = (*named, _CURRENT[0])

    def _named(self, obj: dict[str, Any]) -> tuple[str, str]:
        """:func:`_name` of an object :meth:`_resource_names` already checked."""
        namespace, name, where = self._seen[id(obj)]
        _CURRENT[0] = where
        return namespace, name

    def _resource_names(self) -> set[str]:
        names: set[str] = set()
        for node in self.by_kind.get("Node", []):
            self._remember(node, _name(node, "Node", False))
            status = node.get("status") or {}
            names.update((status.get("allocatable") or status.get("capacity") or {}).keys())
        memo = self.memo
        for pod in self.by_kind.get("Pod", []):
            self._remember(pod, _name(pod, "Pod", True))
            names.update(memo.names("Pod", pod, lambda pod=pod: resource_names(pod)))
        for pg in self.by_kind.get("PodGroup", []):
            self._remember(pg, _name(pg, "PodGroup", True))
            names.update(((pg.get("spec") or {}).get("minResources") or {}).keys())
        for queue in self.by_kind.get("Queue", []):
            _name(queue, "Queue", False)
            spec = queue.get("spec") or {}
            names.update((spec.get("capability") or {}).keys())
            names.update((spec.get("deserved") or {}).keys())
            names.update(((spec.get("guarantee") or {}).get("resource") or {}).keys())
        return {str(n) for n in names}

    def vector(self, resources: Any, where: str, fill: float = 0.0) -> np.ndarray:
        try:
            return self.space.vector(resources, where=where, fill=fill)
        except ResourceError as exc:
            raise SnapshotError(str(exc)) from None

    def priority_classes(self) -> tuple[dict[str, int], int]:
        classes: dict[str, int] = {}
        default = 0
        for pc in self.by_kind.get("PriorityClass", []):
            _, name = _name(pc, "PriorityClass", False)
            value = _int(pc.get("value"), f"PriorityClass {name}: value", 0)
            classes[name] = value
            if pc.get("globalDefault") is True:
                default = value
        return classes, default

    def nodes(self) -> NodeTable:
        rows = []
        for node in self.by_kind.get("Node", []):
            _, name = self._named(node)
            rows.append((name, node))
        rows.sort(key=lambda r: r[0])
        alloc = np.zeros((len(rows), self.space.size))
        labels, taints, unsched, ready, objs = [], [], [], [], []
        for i, (name, node) in enumerate(rows):
            status = node.get("status") or {}
            source = status.get("allocatable") or status.get("capacity")
            alloc[i] = self.memo.vector(
                "Node",
                node,
                self.names,
                lambda s=source, n=name: self.vector(s, f"Node {n}: status.allocatable"),
            )
            spec = node.get("spec") or {}
            labels.append(dict(meta(node).get("labels") or {}))
            taints.append(list(spec.get("taints") or []))
            unsched.append(bool(spec.get("unschedulable")))
            conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            ready.append(conds.get("Ready", "True") == "True")
            objs.append(node)
        return NodeTable(
            space=self.space,
            names=[r[0] for r in rows],
            allocatable=alloc,
            labels=labels,
            taints=taints,
            unschedulable=np.array(unsched, dtype=bool),
            ready=np.array(ready, dtype=bool),
            objects=objs,
        )

    def queues(self) -> dict[str, QueueInfo]:
        queues: dict[str, QueueInfo] = {}
        for obj in self.by_kind.get("Queue", []):
            _, name = _name(obj, "Queue", False)
            where = f"Queue {name}"
            spec = obj.get("spec") or {}
            capability = self.vector(spec.get("capability"), f"{where}: spec.capability", np.inf)
            for col in (CPU, MEMORY):
                if capability[col] <= 0:
                    capability[col] = np.inf
            annotations = meta(obj).get("annotations") or {}
            state = str((obj.get("status") or {}).get("state") or "Open")
            weight = _int(spec.get("weight"), f"{where}: spec.weight", 1)
            if weight < 0:
                raise SnapshotError(f"{where}: spec.weight must not be negative")
            queues[name] = QueueInfo(
                name=name,
                weight=weight,
                capability=capability,
                guarantee=self.vector(
                    (spec.get("guarantee") or {}).get("resource"),
                    f"{where}: spec.guarantee.resource",
                ),
                deserved=self.vector(spec.get("deserved"), f"{where}: spec.deserved"),
                has_capability=bool(spec.get("capability")),
                has_deserved=bool(spec.get("deserved")),
                reclaimable=spec.get("reclaimable") is not False,
                state=state,
                priority=_int(spec.get("priority"), f"{where}: spec.priority", 0),
                parent=str(spec.get("parent") or ""),
                hierarchy=str(annotations.get("volcano.sh/hierarchy") or ""),
                hierarchy_weights=str(annotations.get("volcano.sh/hierarchy-weights") or ""),
                creation=str(meta(obj).get("creationTimestamp") or ""),
                obj=obj,
            )
        for name, reclaimable in (("default", True), ("root", False)):
            if name not in queues:
                queues[name] = QueueInfo(
                    name=name,
                    weight=1,
                    capability=self.space.unbounded(),
                    guarantee=self.space.zeros(),
                    deserved=self.space.zeros(),
                    reclaimable=reclaimable,
                    implicit=True,
                )
        return dict(sorted(queues.items()))

    def jobs(
        self, queues: Mapping[str, QueueInfo], classes: Mapping[str, int], default_prio: int
    ) -> tuple[dict[str, JobInfo], dict[str, str]]:
        jobs: dict[str, JobInfo] = {}
        skipped: dict[str, str] = {}
        for pg in self.by_kind.get("PodGroup", []):
            namespace, name = self._named(pg)
            where = _describe("PodGroup", namespace, name)
            spec = pg.get("spec") or {}
            minimum = _int(spec.get("minMember"), f"{where}: spec.minMember", 1)
            if minimum < 0:
                raise SnapshotError(f"{where}: spec.minMember must not be negative")
            task_min = spec.get("minTaskMember") or {}
            if not isinstance(task_min, dict):
                raise SnapshotError(f"{where}: spec.minTaskMember: expected a map")
            queue = str(spec.get("queue") or "default")
            pc = spec.get("priorityClassName")
            min_res = spec.get("minResources")
            uid = f"{namespace}/{name}"
            job = JobInfo(
                uid=uid,
                namespace=namespace,
                name=name,
                queue=queue,
                min_available=minimum,
                space=self.space,
                task_min_available={
                    str(k): _int(v, f"{where}: spec.minTaskMember.{k}", 0)
                    for k, v in task_min.items()
                },
                priority=classes.get(pc, default_prio) if pc else default_prio,
                preemptable=parse_bool(annotation_or_label(pg, PREEMPTABLE_KEY), False),
                phase=str((pg.get("status") or {}).get("phase") or "Pending"),
                min_resources=(
                    None
                    if min_res is None
                    else self.memo.vector(
                        "PodGroup",
                        pg,
                        self.names,
                        lambda r=min_res, w=where: self.vector(r, f"{w}: spec.minResources"),
                    )
                ),
                creation=str(meta(pg).get("creationTimestamp") or ""),
                podgroup=pg,
            )
            for cond in (pg.get("status") or {}).get("conditions") or []:
                if isinstance(cond, dict) and cond.get("type"):
                    job.conditions[str(cond["type"])] = dict(cond)
            if queue not in queues:
                skipped[uid] = f"queue {queue} does not exist"
                continue
            jobs[uid] = job
        return dict(sorted(jobs.items())), skipped

    def tasks(
        self, nodes: NodeTable, jobs: Mapping[str, JobInfo], classes: Mapping[str, int]
    ) -> tuple[list[TaskInfo], dict[str, str]]:
        others: list[TaskInfo] = []
        skipped: dict[str, str] = {}
        built: list[tuple[str, TaskInfo, bool]] = []
        for pod in self.by_kind.get("Pod", []):
            namespace, name = self._named(pod)
            where = _describe("Pod", namespace, name)
            spec = pod.get("spec") or {}
            annotations = meta(pod).get("annotations") or {}
            group = annotations.get(GROUP_ANNOTATION)
            ours = (spec.get("schedulerName") or "default-scheduler") in self.scheduler_names
            priority, pod_priority = task_priority(pod, classes)
            task = TaskInfo(
                uid=str(meta(pod).get("uid") or f"{namespace}/{name}"),
                namespace=namespace,
                name=name,
                job=f"{namespace}/{group}" if group and ours else "",
                resreq=self.memo.vector(
                    "Pod", pod, self.names, lambda p=pod, w=where: pod_request(self.space, p, w)
                ),
                status=task_status(pod),
                role=annotation_or_label(pod, TASK_SPEC_KEY) or "",
                priority=priority,
                pod_priority=pod_priority,
                preemptable=parse_bool(annotation_or_label(pod, PREEMPTABLE_KEY), True),
                priority_class_name=str(spec.get("priorityClassName") or ""),
                preemption_policy=str(spec.get("preemptionPolicy") or ""),
                nominated_node=str((pod.get("status") or {}).get("nominatedNodeName") or ""),
                creation=str(meta(pod).get("creationTimestamp") or ""),
                gated=bool(spec.get("schedulingGates")),
                pod=pod,
            )
            built.append((f"{namespace}/{name}", task, ours))
        built.sort(key=lambda b: (b[0], b[1].uid))
        for key, task, ours in built:
            node_name = (task.pod.get("spec") or {}).get("nodeName")
            job = jobs.get(task.job)
            # every pod with a node that has not terminated uses it (Unknown included)
            if node_name and task.status not in COMPLETED_SET:
                if node_name in nodes.index:
                    nodes.add_task(nodes.index[node_name], task)
                else:
                    task.node = node_name
            if job is not None:
                job.add_task(task)
                continue
            others.append(task)
            if task.status.name == "PENDING" and ours:
                if not task.job:
                    skipped[key] = f"pod has no {GROUP_ANNOTATION} annotation"
                else:
                    skipped[key] = f"PodGroup {task.job} is not in the session"
        return others, skipped


def build_cluster(
    objects: list[dict[str, Any]],
    *,
    scheduler_names: tuple[str, ...] = SCHEDULER_NAMES,
    memo: ParseMemo | None = None,
) -> ClusterInfo:
    """The session input for these objects; :class:`SnapshotError` on bad input.
    ``memo`` (the live scheduler's) reuses what earlier builds read from objects that
    have not changed since (see :mod:`lahar.scheduler.memo`)."""
    with paused_gc():
        return _build_cluster(objects, scheduler_names, memo)


def _build_cluster(
    objects: list[dict[str, Any]], scheduler_names: tuple[str, ...], memo: ParseMemo | None
) -> ClusterInfo:
    _CURRENT[0] = "input"
    if memo is not None:
        memo.begin()
    try:
        builder = _Builder(objects, scheduler_names, memo)
        classes, default_prio = builder.priority_classes()
        nodes = builder.nodes()
        queues = builder.queues()
        jobs, skipped_jobs = builder.jobs(queues, classes, default_prio)
        others, skipped_pods = builder.tasks(nodes, jobs, classes)
    except ResourceError as exc:
        raise SnapshotError(str(exc)) from None
    except (AttributeError, TypeError, ValueError) as exc:
        if isinstance(exc, SnapshotError):
            raise
        raise SnapshotError(f"{_CURRENT[0]}: malformed object ({exc})") from None
    return ClusterInfo(
        space=builder.space,
        nodes=nodes,
        jobs=jobs,
        queues=queues,
        other_tasks=others,
        skipped_pods=skipped_pods,
        skipped_jobs=skipped_jobs,
        default_priority=default_prio,
    )
