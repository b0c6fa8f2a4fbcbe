"""Node scores of Volcano's ``nodeorder`` and ``binpack`` plugins, over candidate nodes.

``nodeorder`` adds kube-scheduler scorers, each multiplied by its weight from the
plugin arguments (Volcano's spellings and defaults):

=========================  ========  ==============================================
argument                   default   scorer (per node, before weighting)
=========================  ========  ==============================================
``leastrequested.weight``  1         LeastAllocated, cpu/memory 50/50, 0..100
``mostrequested.weight``   0         MostAllocated, cpu/memory 1/1, 0..100
``balancedresource.weight`` 1        BalancedAllocation (cpu, memory, nvidia.com/gpu)
``nodeaffinity.weight``    2         Σ weights of matching preferred terms (raw)
``podaffinity.weight``     2         InterPodAffinity, min-max normalised 0..100
``tainttoleration.weight`` 3         PreferNoSchedule count, reverse-normalised
``podtopologyspread.weight`` 2       PodTopologySpread (ScheduleAnyway), 0..100
``imagelocality.weight``   1         not applicable: lahar nodes report no images,
                                     so this scorer always gives 0
=========================  ========  ==============================================

The normalised scorers (pod affinity, taints, spread) are normalised over the nodes
being scored, as Volcano's batch scorer is called with the candidate list. A weight of 0
skips the scorer.

``binpack`` (Volcano's own): for each resource the task requests (>= 0.1) that has a
weight (``binpack.cpu``, ``binpack.memory``, ``binpack.resources.<name>`` for names in
``binpack.resources``; negative weights become 1): a node without the resource, or a
0 weight, contributes 0 but its weight still counts; ``used + request > allocatable``
makes the whole score 0; otherwise ``(used + request) * w / allocatable``. The total
is ``Σ / Σw * 100 * binpack.weight``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lahar.scheduler.api.resources import CPU, EPS, MEMORY
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.kernels.interpod import interpod_raw_score, normalize_min_max
from lahar.scheduler.kernels.resources import (
    GPU,
    balanced_allocation,
    least_allocated,
    most_allocated,
)
from lahar.scheduler.kernels.spread import spread_score
from lahar.scheduler.kernels.state import KernelState, ParsedPod
from lahar.scheduler.kernels.taints import normalize_reverse


def arg_int(args: Mapping[str, Any], key: str, default: int) -> int:
    """Lenient integer argument: a missing or unparsable value keeps the default."""
    value = args.get(key)
    if value is None or isinstance(value, bool):
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        return default


NODEORDER_ARGS: dict[str, str] = {
    "leastrequested.weight": "least_requested",
    "mostrequested.weight": "most_requested",
    "balancedresource.weight": "balanced_resource",
    "nodeaffinity.weight": "node_affinity",
    "podaffinity.weight": "pod_affinity",
    "tainttoleration.weight": "taint_toleration",
    "imagelocality.weight": "image_locality",
    "podtopologyspread.weight": "pod_topology_spread",
}


@dataclass(frozen=True, slots=True)
class NodeOrderWeights:
    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    node_affinity: int = 2
    pod_affinity: int = 2
    taint_toleration: int = 3
    image_locality: int = 1
    pod_topology_spread: int = 2

    @classmethod
    def from_arguments(cls, args: Mapping[str, Any]) -> NodeOrderWeights:
        defaults = cls()
        values = {
            attr: arg_int(args, key, getattr(defaults, attr))
            for key, attr in NODEORDER_ARGS.items()
        }
        return cls(**values)


def _resource_components(
    state: KernelState,
    p: ParsedPod,
    request: np.ndarray,
    rows: np.ndarray,
    weights: NodeOrderWeights,
    out: dict[str, np.ndarray],
) -> None:
    """The resource scorers (least/most requested, balanced) for the node ``rows``: they
    read only each node's own row, so any subset of nodes can be (re)scored alone."""
    table = state.table
    if weights.least_requested or weights.most_requested or weights.balanced_resource:
        cap_cpu = table.allocatable[rows, CPU]
        cap_mem = table.allocatable[rows, MEMORY]
    if weights.least_requested or weights.most_requested:
        nz_cpu = state.nonzero[rows, 0] + p.nonzero[0]
        nz_mem = state.nonzero[rows, 1] + p.nonzero[1]
        if weights.least_requested:
            out["leastrequested"] = least_allocated(cap_cpu, cap_mem, nz_cpu, nz_mem)
        if weights.most_requested:
            out["mostrequested"] = most_allocated(cap_cpu, cap_mem, nz_cpu, nz_mem)
    if weights.balanced_resource:
        caps = [cap_cpu, cap_mem]
        reqs = [
            state.requested[rows, CPU] + request[CPU],
            state.requested[rows, MEMORY] + request[MEMORY],
        ]
        gpu = table.space.index.get(GPU)
        if gpu is not None and request[gpu] != 0:
            caps.append(table.allocatable[rows, gpu])
            reqs.append(state.requested[rows, gpu] + request[gpu])
        out["balancedresource"] = balanced_allocation(caps, reqs)


def row_local_score(
    state: KernelState,
    task: TaskInfo,
    rows: np.ndarray,
    weights: NodeOrderWeights = NodeOrderWeights(),
) -> np.ndarray:
    """Σ weight * scorer over the scorers that read only the node's own row (least/most
    requested, balanced resource, preferred node affinity; image locality is 0). Every
    value is a whole number, so the sum does not depend on the order of the terms: a
    cache may keep this part per node and add the normalised scorers later."""
    p = state.parsed(task)
    parts: dict[str, np.ndarray] = {}
    _resource_components(state, p, task.resreq, rows, weights, parts)
    total = np.zeros(rows.shape[0])
    for name, score in parts.items():
        total += score * getattr(weights, _ATTR[name])
    if weights.node_affinity and p.preferred:
        affinity = state.node_affinity.preferred_score(p.preferred)[rows]
        total += affinity * weights.node_affinity
    return total


def nodeorder_components(
    state: KernelState,
    task: TaskInfo,
    candidates: np.ndarray,
    weights: NodeOrderWeights = NodeOrderWeights(),
) -> dict[str, np.ndarray]:
    """Unweighted score per scorer with a non-zero weight, for the candidate nodes."""
    p = state.parsed(task)
    k = candidates.shape[0]
    out: dict[str, np.ndarray] = {}
    _resource_components(state, p, task.resreq, candidates, weights, out)
    if weights.node_affinity:
        out["nodeaffinity"] = (
            state.node_affinity.preferred_score(p.preferred)[candidates]
            if p.preferred
            else np.zeros(k)
        )
    if weights.image_locality:
        out["imagelocality"] = np.zeros(k)
    if weights.pod_affinity:
        raw = None
        if p.affinity.preferred or p.affinity.preferred_anti or state.affine_pods:
            raw = interpod_raw_score(p.affinity, p.namespace, p.labels, state.labels, state.pods)
        out["podaffinity"] = np.zeros(k) if raw is None else normalize_min_max(raw[candidates])
    if weights.taint_toleration:
        counts = state.taints.prefer_counts(p.tolerations)[candidates]
        out["tainttoleration"] = normalize_reverse(counts)
    if weights.pod_topology_spread:
        if any(not c.hard for c in p.spread):
            affinity_ok = state.node_affinity.required_mask(p.constraints)
            taint_failed, _ = state.taints.filter(p.tolerations)
            out["podtopologyspread"] = spread_score(
                p.spread,
                p.namespace,
                state.labels,
                state.pods,
                candidates,
                affinity_ok,
                ~taint_failed,
            )
        else:
            out["podtopologyspread"] = np.zeros(candidates.shape[0])
    return out


def nodeorder_score(
    state: KernelState,
    task: TaskInfo,
    candidates: np.ndarray,
    weights: NodeOrderWeights = NodeOrderWeights(),
) -> np.ndarray:
    """Σ weight * scorer for the candidate nodes (Volcano's nodeorder total)."""
    total = np.zeros(candidates.shape[0])
    for name, score in nodeorder_components(state, task, candidates, weights).items():
        total += score * getattr(weights, _ATTR[name])
    return total


_ATTR = {key.split(".")[0]: attr for key, attr in NODEORDER_ARGS.items()}


# --- binpack ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BinpackWeights:
    weight: int = 1
    resources: Mapping[str, int] = field(default_factory=lambda: {"cpu": 1, "memory": 1})

    @classmethod
    def from_arguments(cls, args: Mapping[str, Any]) -> BinpackWeights:
        weight = arg_int(args, "binpack.weight", 1)
        cpu = arg_int(args, "binpack.cpu", 1)
        memory = arg_int(args, "binpack.memory", 1)
        resources: dict[str, int] = {}
        listed = args.get("binpack.resources")
        for name in (listed if isinstance(listed, str) else "").split(","):
            name = name.strip()
            if name:
                w = arg_int(args, f"binpack.resources.{name}", 1)
                resources[name] = 1 if w < 0 else w
        resources["cpu"] = 1 if cpu < 0 else cpu
        resources["memory"] = 1 if memory < 0 else memory
        return cls(weight, resources)


def binpack_score(
    request: np.ndarray,
    allocatable: np.ndarray,
    used: np.ndarray,
    names: Sequence[str],
    weights: BinpackWeights,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """Volcano's BinPackingScore per node row of ``allocatable``/``used``
    (``[n, n_resources]``, ``used`` being the NodeTable's ``used``), or only for the
    node indices ``rows`` when given (the candidates; only the needed columns are read)."""
    k = allocatable.shape[0] if rows is None else rows.shape[0]
    score = np.zeros(k)
    overflow = np.zeros(k, dtype=bool)
    weight_sum = 0
    for col in np.flatnonzero(request >= EPS):
        w = weights.resources.get(names[col])
        if w is None:
            continue
        weight_sum += w
        if w == 0:
            continue
        cap = allocatable[:, col] if rows is None else allocatable[rows, col]
        final = (used[:, col] if rows is None else used[rows, col]) + request[col]
        usable = cap != 0
        overflow |= usable & (final > cap)
        with np.errstate(divide="ignore", invalid="ignore"):
            part = final * w / cap
        part[~usable] = 0.0
        score += part
    if weight_sum > 0:
        score /= weight_sum
    score[overflow] = 0.0
    return score * 100.0 * weights.weight
