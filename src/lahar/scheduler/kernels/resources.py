"""Resource fit and resource-based node scores over every node at once.

Inputs are the dense arrays of the session's NodeTable (``float64[n_nodes, n_resources]``,
Volcano units: cpu milli, memory bytes, pods whole, other scalars milli) and a task's
request vector in the same columns. All functions take whole arrays (or the rows of the
candidate nodes) and return arrays; nothing loops over nodes in Python.

* :func:`resource_fit` — Volcano's ``InitResreq.LessEqual(FutureIdle, Zero)`` with its
  0.1 tolerance: cpu and memory always compared, other dimensions when requested.
  Reasons are kube-scheduler's: ``Insufficient <name>``, and ``Too many pods`` for the
  ``pods`` dimension.
* :func:`pod_count_fails` — the predicates plugin's own pod-number check
  (``allocatable pods <= pods on the node``).
* :func:`least_allocated`, :func:`most_allocated`, :func:`balanced_allocation` —
  kube-scheduler's NodeResourcesFit/BalancedAllocation scorers with the resource weights
  Volcano's nodeorder passes (cpu/memory 50/50, 1/1; balanced over cpu, memory,
  nvidia.com/gpu), integer arithmetic as in Go.
* :func:`nonzero_request` — kube-scheduler's "non-zero" pod request (100m cpu, 200Mi
  memory for a container that names no request) used by the least/most scorers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lahar.api.quantity import QuantityError, to_int, to_milli
from lahar.scheduler.api.resources import CPU, EPS, MEMORY, PODS

DEFAULT_MILLI_CPU = 100.0
DEFAULT_MEMORY = float(200 * 1024 * 1024)
TOO_MANY_PODS = "Too many pods"
GPU = "nvidia.com/gpu"


def insufficient_reason(name: str) -> str:
    return TOO_MANY_PODS if name == "pods" else f"Insufficient {name}"


def resource_fit(
    request: np.ndarray, available: np.ndarray, names: Sequence[str]
) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """(passed, [(reason, failed nodes)]) for ``request <= available`` per node row.

    ``available`` is usually ``NodeTable.future_idle()`` (allocate) or ``idle``.
    """
    cols = np.flatnonzero(request != 0)
    cols = np.union1d(cols, [CPU, MEMORY])
    short = request[cols] - available[:, cols] >= EPS  # [n, k]
    failed_any = short.any(axis=1)
    reasons = []
    if failed_any.any():
        for j, col in enumerate(cols):
            hit = short[:, j]
            if hit.any():
                reasons.append((insufficient_reason(names[col]), hit))
    return ~failed_any, reasons


def pod_count_fails(pod_counts: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """Nodes already holding as many pods as their allocatable ``pods``."""
    return allocatable[:, PODS] <= pod_counts


# --- pod requests -------------------------------------------------------------------


def _amount(requests: Mapping[str, Any], name: str, milli: bool) -> float | None:
    raw = requests.get(name)
    if raw is None:
        return None
    try:
        return float(to_milli(raw) if milli else to_int(raw))
    except (QuantityError, TypeError, ValueError):
        return 0.0


def _container_nonzero(container: Mapping[str, Any]) -> tuple[float, float]:
    requests = ((container.get("resources") or {}).get("requests")) or {}
    cpu = _amount(requests, "cpu", True)
    mem = _amount(requests, "memory", False)
    return (DEFAULT_MILLI_CPU if cpu is None else cpu, DEFAULT_MEMORY if mem is None else mem)


def nonzero_request(pod: Mapping[str, Any]) -> tuple[float, float]:
    """(milli-cpu, memory bytes) with defaults for containers that name no request:
    regular containers (and sidecars) summed, each ordinary init container taken as a
    floor, plus ``spec.overhead``."""
    spec = pod.get("spec") or {}
    cpu = mem = 0.0
    sidecar_cpu = sidecar_mem = 0.0
    init_cpu = init_mem = 0.0
    for c in spec.get("initContainers") or []:
        c_cpu, c_mem = _container_nonzero(c)
        if c.get("restartPolicy") == "Always":
            sidecar_cpu += c_cpu
            sidecar_mem += c_mem
        else:
            init_cpu = max(init_cpu, sidecar_cpu + c_cpu)
            init_mem = max(init_mem, sidecar_mem + c_mem)
    for c in spec.get("containers") or []:
        c_cpu, c_mem = _container_nonzero(c)
        cpu += c_cpu
        mem += c_mem
    cpu, mem = max(cpu + sidecar_cpu, init_cpu), max(mem + sidecar_mem, init_mem)
    overhead = spec.get("overhead") or {}
    cpu += _amount(overhead, "cpu", True) or 0.0
    mem += _amount(overhead, "memory", False) or 0.0
    return cpu, mem


# --- kube-scheduler resource scorers --------------------------------------------------
# Inputs are 1-D columns over the scored nodes: capacity (allocatable) and requested
# (the node's requests plus the pod's). Go computes these in int64; the values here are
# whole numbers below 2**53, for which floor(a / b) in float64 is exact.


def _least(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.floor((capacity - requested) * 100.0 / capacity)
    score[(capacity == 0) | (requested > capacity)] = 0.0
    return score


def _most(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.floor(np.minimum(requested, capacity) * 100.0 / capacity)
    score[capacity == 0] = 0.0
    return score


def _pair(
    s_cpu: np.ndarray, s_mem: np.ndarray, cap_cpu: np.ndarray, cap_mem: np.ndarray
) -> np.ndarray:
    """Equal-weight mean of two scores, leaving out a resource the node lacks (Go's
    ``Σ score * w / Σ w`` in integers; equal weights make it ``floor(mean)``)."""
    both = np.floor((s_cpu + s_mem) / 2.0)
    out = np.where(cap_cpu == 0, s_mem, both)
    out[cap_mem == 0] = s_cpu[cap_mem == 0]
    out[(cap_cpu == 0) & (cap_mem == 0)] = 0.0
    return out


def least_allocated(
    cap_cpu: np.ndarray, cap_mem: np.ndarray, req_cpu: np.ndarray, req_mem: np.ndarray
) -> np.ndarray:
    """LeastAllocated with cpu/memory weights 50/50 (``req_*`` include the pod's
    non-zero request)."""
    return _pair(_least(req_cpu, cap_cpu), _least(req_mem, cap_mem), cap_cpu, cap_mem)


def most_allocated(
    cap_cpu: np.ndarray, cap_mem: np.ndarray, req_cpu: np.ndarray, req_mem: np.ndarray
) -> np.ndarray:
    """MostAllocated with cpu/memory weights 1/1 (requests clamped to capacity)."""
    return _pair(_most(req_cpu, cap_cpu), _most(req_mem, cap_mem), cap_cpu, cap_mem)


def balanced_allocation(caps: Sequence[np.ndarray], reqs: Sequence[np.ndarray]) -> np.ndarray:
    """BalancedAllocation: ``int((1 - std(fractions)) * 100)`` with each fraction
    ``min(requested / capacity, 1)``; resources a node does not offer are left out, Go's
    ``|a - b| / 2`` is used for two resources and the population std above two.
    Callers pass cpu, memory and (when the pod asks for it) nvidia.com/gpu."""
    fracs, present = [], []
    for cap, req in zip(caps, reqs, strict=True):
        has = cap != 0
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.minimum(req / cap, 1.0)
        frac[~has] = 0.0
        fracs.append(frac)
        present.append(has)
    if len(fracs) == 2:
        std = np.abs(fracs[0] - fracs[1]) / 2.0
        std[~(present[0] & present[1])] = 0.0
        return np.trunc((1.0 - std) * 100.0)
    frac_m, has_m = np.stack(fracs, axis=1), np.stack(present, axis=1)
    count = has_m.sum(axis=1)
    safe = np.maximum(count, 1)
    mean = frac_m.sum(axis=1) / safe
    var = np.where(has_m, (frac_m - mean[:, None]) ** 2, 0.0).sum(axis=1) / safe
    hi = np.where(has_m, frac_m, -np.inf).max(axis=1)
    lo = np.where(has_m, frac_m, np.inf).min(axis=1)
    std = np.where(count == 2, (hi - lo) / 2.0, np.sqrt(var))
    std[count < 2] = 0.0
    return np.trunc((1.0 - std) * 100.0)
