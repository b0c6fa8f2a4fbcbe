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
from lahar.scheduler.api.task import COMPLETED_SET, TaskInfo, TaskStatus, new_task
from lahar.scheduler.facts import (
    _CURRENT,
    Facts,
    GroupFacts,
    NodeFacts,
    PodFacts,
    SnapshotError,
    _int,
    _name,
)
from lahar.scheduler.gcpause import paused_gc
from lahar.scheduler.memo import ParseMemo
from lahar.scheduler.podspec import GROUP_ANNOTATION, meta

__all__ = ["SCHEDULER_NAMES", "SnapshotError", "build_cluster", "load_documents"]

SCHEDULER_NAMES = ("volcano",)
S = TaskStatus


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


class _Builder:
    def __init__(
        self,
        objects: list[dict[str, Any]],
        scheduler_names: tuple[str, ...],
        memo: ParseMemo | None = None,
    ) -> None:
        self.scheduler_names = scheduler_names
        self.memo = memo if memo is not None else ParseMemo()
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        by_kind = self.by_kind
        for obj in objects:
            kind = obj.get("kind")
            same = by_kind.get(kind) if kind.__class__ is str else None
            if same is None:
                if not isinstance(kind, str):
                    raise SnapshotError(f"object {meta(obj).get('name', '?')!r} has no kind")
                same = by_kind[kind] = []
            same.append(obj)
        self.space = ResourceSpace(self._resource_names())
        self.names = self.memo.space_names(tuple(self.space.names))

    def _read(self, facts: Facts, obj: dict[str, Any]) -> None:
        """The second step, when not done yet in this resource space."""
        _CURRENT[0] = facts.where
        facts.read(obj, self.space, self.names)

    def _resource_names(self) -> set[str]:
        by_kind, memo = self.by_kind, self.memo
        self.node_facts: list[NodeFacts] = memo.facts("Node", by_kind.get("Node", []), NodeFacts)
        self.pod_facts: list[PodFacts] = memo.facts("Pod", by_kind.get("Pod", []), PodFacts)
        self.group_facts: list[GroupFacts] = memo.facts(
            "PodGroup", by_kind.get("PodGroup", []), GroupFacts
        )
        sets: set[frozenset[str]] = set()
        for facts in (self.node_facts, self.pod_facts, self.group_facts):
            sets.update(f.names for f in facts)
        names: set[Any] = set().union(*sets)
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
        rows = sorted(
            zip(self.node_facts, self.by_kind.get("Node", []), strict=True),
            key=lambda r: r[0].name,
        )
        if rows:  # the build named the last node (input order) before reading any
            _CURRENT[0] = self.node_facts[-1].where
        names = self.names
        for facts, node in rows:
            if facts.space != names:
                facts.read(node, self.space, names)
        alloc = np.array([f.alloc for f, _ in rows], dtype=np.float64)
        return NodeTable(
            space=self.space,
            names=[f.name for f, _ in rows],
            allocatable=alloc.reshape(len(rows), self.space.size),
            labels=[dict(f.labels) for f, _ in rows],
            taints=[list(f.taints) for f, _ in rows],
            unschedulable=np.array([f.unschedulable for f, _ in rows], dtype=bool),
            ready=np.array([f.ready for f, _ in rows], dtype=bool),
            objects=[node for _, node in rows],
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
        names, space = self.names, self.space
        for f, pg in zip(self.group_facts, self.by_kind.get("PodGroup", []), strict=True):
            if f.space != names:
                self._read(f, pg)
            pc, min_res = f.priority_class, f.min_resources
            uid = f.key
            job = JobInfo(
                uid=uid,
                namespace=f.namespace,
                name=f.name,
                queue=f.queue,
                min_available=f.minimum,
                space=space,
                task_min_available=dict(f.task_min),
                priority=classes.get(pc, default_prio) if pc else default_prio,
                preemptable=f.preemptable,
                phase=f.phase,
                min_resources=None if min_res is None else min_res.copy(),
                creation=f.creation,
                podgroup=pg,
            )
            for kind, cond in f.conditions:
                job.conditions[kind] = dict(cond)
            if f.queue not in queues:
                skipped[uid] = f"queue {f.queue} does not exist"
                continue
            jobs[uid] = job
        if self.group_facts:
            _CURRENT[0] = self.group_facts[-1].where
        return dict(sorted(jobs.items())), skipped

    def tasks(
        self, nodes: NodeTable, jobs: Mapping[str, JobInfo], classes: Mapping[str, int]
    ) -> tuple[list[TaskInfo], dict[str, str]]:
        others: list[TaskInfo] = []
        skipped: dict[str, str] = {}
        names, ours_names = self.names, self.scheduler_names
        pods = self.by_kind.get("Pod", [])
        for f, pod in zip(self.pod_facts, pods, strict=True):
            if f.space != names:  # read in input order: the first bad pod is reported
                self._read(f, pod)
        if pods:  # the build named the last pod (input order) before placing any
            _CURRENT[0] = self.pod_facts[-1].where
        facts = self.pod_facts
        keys = [f.sort_key for f in facts]
        running, pending, releasing, bound = S.RUNNING, S.PENDING, S.RELEASING, S.BOUND
        index, get_job = nodes.index, jobs.get
        rows: list[int] = []
        placed: list[TaskInfo] = []
        for k in sorted(range(len(keys)), key=keys.__getitem__):
            f, pod = facts[k], pods[k]
            # read fresh each build: the cache's overlays change these two (module doc)
            node_name = (pod.get("spec") or {}).get("nodeName")
            phase = f.phase
            if phase == "Running" or (phase == "Pending" and node_name):
                md = pod.get("metadata")
                if isinstance(md, dict) and md.get("deletionTimestamp"):
                    status = releasing
                else:
                    status = running if phase == "Running" else bound
            else:
                status = pending if phase == "Pending" else phase
            pod_priority = f.raw_priority
            if pod_priority is None and f.class_name in classes:
                pod_priority = classes[f.class_name]
            priority = f.override
            if priority is None:
                priority = 1 if pod_priority is None else pod_priority
            ours = f.scheduler in ours_names
            task = new_task(
                f.uid,
                f.namespace,
                f.name,
                f.job_group if ours else "",
                f.resreq.copy(),
                status,
                f.role,
                priority,
                pod_priority,
                f.preemptable,
                f.priority_class_name,
                f.preemption_policy,
                f.nominated,
                f.creation,
                f.gated,
                pod,
                f.best_effort,
                f.ordinal,
            )
            # every pod with a node that has not terminated uses it (Unknown included)
            if node_name and status not in COMPLETED_SET:
                i = index.get(node_name)
                if i is not None:
                    rows.append(i)
                    placed.append(task)
                else:
                    task.node = node_name
            job = get_job(task.job)
            if job is not None:
                job.add_task(task)
                continue
            others.append(task)
            if status is pending and ours:
                if not task.job:
                    skipped[f.key] = f"pod has no {GROUP_ANNOTATION} annotation"
                else:
                    skipped[f.key] = f"PodGroup {task.job} is not in the session"
        nodes.add_tasks(rows, placed)
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
