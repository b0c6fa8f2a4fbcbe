"""Per-session kernel state: the interned indexes and the node aggregates they need.

The NodeTable (``scheduler/api/node.py``) holds the resource arrays every plugin shares;
the predicate and score kernels additionally need node labels and taints interned, the
pods on each node indexed by labels, and two aggregates kube-scheduler's scorers read
(Σ requests and Σ "non-zero" requests per node). :class:`KernelState` builds each of
them once per session (O(nodes + pods); the pod parts on first use) and keeps them
current through :meth:`~KernelState.update_on_allocate` and
:meth:`~KernelState.update_on_deallocate`, which the plugins wire to the session's
allocate/deallocate events (Volcano's predicates and nodeorder plugins keep their own
pod lists the same way: an eviction in the session takes the pod off its node at once).
An update costs O(cached selectors that could match the pod), never O(nodes); it
appends the node's row to the table's ``changed`` log like the table's own updates.

Parsed pod specs (selectors, tolerations, affinity terms, spread constraints) are cached
by task uid: a pod's spec does not change within a session.

One state serves every plugin of a session (the predicates plugin's ``session_state``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.resources import CPU, MEMORY
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.gcpause import paused_gc
from lahar.scheduler.kernels.labels import LabelIndex
from lahar.scheduler.kernels.nodeaffinity import (
    NodeAffinityIndex,
    NodeConstraints,
    NodeTerm,
    node_constraints,
    preferred_terms,
)
from lahar.scheduler.kernels.pods import PodAffinity, PodIndex, pod_affinity
from lahar.scheduler.kernels.resources import nonzero_request
from lahar.scheduler.kernels.spread import SpreadConstraint, spread_constraints
from lahar.scheduler.kernels.taints import TaintIndex, tolerations_of


@dataclass(frozen=True, slots=True)
class ParsedPod:
    """Everything the kernels read from a pod spec, parsed once."""

    namespace: str
    labels: Mapping[str, str]
    constraints: NodeConstraints
    preferred: tuple[tuple[int, NodeTerm], ...]
    tolerations: tuple[Mapping[str, Any], ...]
    affinity: PodAffinity
    spread: tuple[SpreadConstraint, ...]
    nonzero: tuple[float, float]


def _names_cpu_and_memory(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("resources"):
        return False
    for c in chain(spec.get("containers") or (), spec.get("initContainers") or ()):
        req = (c.get("resources") or {}).get("requests") or {}
        if "cpu" not in req or "memory" not in req:
            return False
    return True


def task_nonzero(pod: Mapping[str, Any], resreq: np.ndarray | None) -> tuple[float, float]:
    """The pod's non-zero cpu/memory request. When every container names both, it equals
    the task's request vector (same sum/max/overhead rule), which avoids re-reading
    quantities."""
    if resreq is not None and _names_cpu_and_memory(pod):
        return float(resreq[CPU]), float(resreq[MEMORY])
    return nonzero_request(pod)


def affinity_flags(pod: Mapping[str, Any]) -> tuple[bool, bool]:
    """(has pod affinity or anti-affinity terms, has required anti-affinity terms)."""
    aff = (pod.get("spec") or {}).get("affinity") or {}
    pa, paa = aff.get("podAffinity") or {}, aff.get("podAntiAffinity") or {}
    anti = bool(paa.get("requiredDuringSchedulingIgnoredDuringExecution"))
    return bool(anti or any(pa.values()) or any(paa.values())), anti


def parse_pod(
    pod: Mapping[str, Any], namespace: str | None = None, resreq: np.ndarray | None = None
) -> ParsedPod:
    meta = pod.get("metadata") or {}
    ns = namespace or str(meta.get("namespace") or "default")
    return ParsedPod(
        namespace=ns,
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        constraints=node_constraints(pod),
        preferred=preferred_terms(pod),
        tolerations=tuple(tolerations_of(pod)),
        affinity=pod_affinity(pod, ns),
        spread=spread_constraints(pod),
        nonzero=task_nonzero(pod, resreq),
    )


def _parse_inputs(task: TaskInfo) -> tuple[Any, ...]:
    """Everything :func:`parse_pod` reads for this task."""
    pod = task.pod
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return (
        task.namespace,
        task.resreq.tobytes(),
        meta.get("namespace"),
        meta.get("labels"),
        spec.get("nodeSelector"),
        spec.get("affinity"),
        spec.get("tolerations"),
        spec.get("topologySpreadConstraints"),
        spec.get("resources"),
        spec.get("containers"),
        spec.get("initContainers"),
        spec.get("overhead"),
    )


class KernelState:
    """Indexes over one session's nodes and the pods on them.

    Node labels, taints and the per-node pod count are built at once. The pod index and
    the request aggregates are built on first use (a session whose pods use no
    affinity, spread or resource scores never pays for them), from the NodeTable's
    tasks minus the ones evicted earlier in the session, then kept current by events.
    """

    def __init__(
        self, table: NodeTable, namespace_labels: Mapping[str, Mapping[str, str]] | None = None
    ) -> None:
        self.table = table
        self.namespace_labels = dict(namespace_labels or {})
        self.labels = LabelIndex(table.labels)
        self.node_affinity = NodeAffinityIndex(self.labels, list(table.names))
        self.taints = TaintIndex(table.taints)
        self.unschedulable = np.asarray(table.unschedulable, dtype=bool).reshape(table.size)
        # pods counted on each node: uid -> node (Volcano's k8s NodeInfo pod list)
        self._where: dict[str, int] = {
            uid: i for i, tasks in enumerate(table.tasks) for uid in tasks
        }
        self.pod_count = np.array([len(tasks) for tasks in table.tasks], dtype=np.int64)
        # how many counted pods carry pod (anti-)affinity terms / required anti-affinity:
        # when none do, the existing-pods parts of the filter and score are skipped
        self.affine_pods = self.anti_pods = 0
        for tasks in table.tasks:
            for task in tasks.values():
                self._count_affinity(task, 1)
        self._parsed: dict[str, ParsedPod] = {}
        self._last_inputs: tuple[Any, ...] | None = None
        self._last_parsed: ParsedPod | None = None
        self._pods: PodIndex | None = None
        self._aggregates: tuple[np.ndarray, np.ndarray] | None = None
        # tasks still listed on the table that an event took off their node (evicted
        # in the session): the lazy builds leave them out
        self._gone: dict[str, tuple[int, TaskInfo]] = {}

    def _count_affinity(self, task: TaskInfo, delta: int) -> None:
        if (task.pod.get("spec") or {}).get("affinity"):
            affine, anti = affinity_flags(task.pod)
            self.affine_pods += delta * affine
            self.anti_pods += delta * anti

    def parsed(self, task: TaskInfo) -> ParsedPod:
        """The task's parsed spec. Consecutive tasks of a gang are usually the same pod
        template, so when everything parsing reads compares equal to the previous
        task's, that parse (immutable) is shared instead of repeated."""
        got = self._parsed.get(task.uid)
        if got is None:
            key = _parse_inputs(task)
            if key == self._last_inputs and self._last_parsed is not None:
                got = self._last_parsed
            else:
                got = parse_pod(task.pod, task.namespace, task.resreq)
                self._last_inputs, self._last_parsed = key, got
            self._parsed[task.uid] = got
        return got

    def _counted(self) -> list[tuple[str, int, TaskInfo]]:
        table = self.table
        return [
            (uid, i, table.tasks[i][uid]) for uid, i in self._where.items() if uid in table.tasks[i]
        ]

    @property
    def pods(self) -> PodIndex:
        """The pods on the nodes, indexed by labels (built on first use)."""
        if self._pods is None:
            with paused_gc():
                placed = [(uid, i, t.pod, t.namespace) for uid, i, t in self._counted()]
                self._pods = PodIndex.build(self.table.size, placed, self.namespace_labels)
        return self._pods

    def _build_aggregates(self) -> tuple[np.ndarray, np.ndarray]:
        if self._aggregates is None:
            table = self.table
            # the table's used + pipelined is Σ requests of every task it lists
            requested = table.used + table.pipelined
            for uid, (i, task) in self._gone.items():
                if uid in table.tasks[i]:
                    requested[i] -= task.resreq
            nonzero = requested[:, [CPU, MEMORY]].copy()
            for _, i, task in self._counted():
                if not _names_cpu_and_memory(task.pod):  # defaults differ from requests
                    cpu, mem = nonzero_request(task.pod)
                    nonzero[i, 0] += cpu - task.resreq[CPU]
                    nonzero[i, 1] += mem - task.resreq[MEMORY]
            self._aggregates = (requested, nonzero)
        return self._aggregates

    @property
    def requested(self) -> np.ndarray:
        """Σ requests of the pods on each node, ``[n_nodes, n_resources]`` (kube-scheduler's
        ``NodeInfo.Requested``: every pod listed on the node, pipelined ones included)."""
        return self._build_aggregates()[0]

    @property
    def nonzero(self) -> np.ndarray:
        """Σ non-zero cpu/memory requests per node, ``[n_nodes, 2]``
        (``NodeInfo.NonZeroRequested``)."""
        return self._build_aggregates()[1]

    # --- incremental updates ------------------------------------------------------------

    def update_on_allocate(self, node: int, task: TaskInfo) -> None:
        """``task`` now occupies ``node`` (allocated, pipelined, or an eviction undone).
        A task's request vector and spec must not change while it is placed."""
        if task.uid in self._where:
            self.update_on_deallocate(task)
        self._gone.pop(task.uid, None)
        self._where[task.uid] = node
        self.pod_count[node] += 1
        self.table.changed.append(node)
        self._count_affinity(task, 1)
        parsed = self.parsed(task)
        if self._pods is not None:
            self._pods.add(task.uid, node, task.pod, parsed.namespace, parsed.affinity)
        if self._aggregates is not None:
            self._aggregates[0][node] += task.resreq
            nonzero = self._aggregates[1]
            nonzero[node, 0] += parsed.nonzero[0]
            nonzero[node, 1] += parsed.nonzero[1]

    def update_on_deallocate(self, task: TaskInfo) -> None:
        """``task`` left its node (allocation undone, or evicted in the session)."""
        node = self._where.pop(task.uid, None)
        if node is None:
            return
        if task.uid in self.table.tasks[node]:
            self._gone[task.uid] = (node, task)
        self.pod_count[node] -= 1
        self.table.changed.append(node)
        self._count_affinity(task, -1)
        if self._pods is not None:
            self._pods.remove(task.uid)
        if self._aggregates is not None:
            self._aggregates[0][node] -= task.resreq
            cpu, mem = self.parsed(task).nonzero
            nonzero = self._aggregates[1]
            nonzero[node, 0] -= cpu
            nonzero[node, 1] -= mem

    def on_allocate_event(self, task: TaskInfo) -> None:
        if task.node_index >= 0:
            self.update_on_allocate(task.node_index, task)

    def on_deallocate_event(self, task: TaskInfo) -> None:
        self.update_on_deallocate(task)
