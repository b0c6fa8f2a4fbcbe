"""Node-local scores for ONE node in plain Python, with the NumPy kernels' arithmetic.

Why: the allocate cache (``actions/nodecache.py``) re-scores only the node a placement
just changed, and for a single row the NumPy kernels cost more in call overhead than the
arithmetic itself. These twins of :func:`~lahar.scheduler.kernels.resources.least_allocated`,
:func:`~lahar.scheduler.kernels.resources.most_allocated`,
:func:`~lahar.scheduler.kernels.resources.balanced_allocation` (two resources) and
:func:`~lahar.scheduler.kernels.scoring.binpack_score` perform the same IEEE operations
in the same order on Python floats, so they give bit-identical results; the cache's
tests compare both paths end to end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def least(requested: float, capacity: float) -> float:
    if capacity == 0 or requested > capacity:
        return 0.0
    return float(math.floor((capacity - requested) * 100.0 / capacity))


def most(requested: float, capacity: float) -> float:
    if capacity == 0:
        return 0.0
    return float(math.floor(min(requested, capacity) * 100.0 / capacity))


def pair(s_cpu: float, s_mem: float, cap_cpu: float, cap_mem: float) -> float:
    """Equal-weight cpu/memory mean, leaving out a resource the node lacks."""
    if cap_mem == 0:
        return 0.0 if cap_cpu == 0 else s_cpu
    return s_mem if cap_cpu == 0 else float(math.floor((s_cpu + s_mem) / 2.0))


def balanced(req_cpu: float, req_mem: float, cap_cpu: float, cap_mem: float) -> float:
    """BalancedAllocation over cpu and memory."""
    f_cpu = min(req_cpu / cap_cpu, 1.0) if cap_cpu != 0 else 0.0
    f_mem = min(req_mem / cap_mem, 1.0) if cap_mem != 0 else 0.0
    std = abs(f_cpu - f_mem) / 2.0 if cap_cpu != 0 and cap_mem != 0 else 0.0
    return float(math.trunc((1.0 - std) * 100.0))


def binpack(
    terms: Sequence[tuple[int, int, float]],
    weight_sum: int,
    weight: int,
    allocatable: Sequence[float],
    used: Sequence[float],
) -> float:
    """BinPackingScore of one node; ``terms`` are ``(column, resource weight, request)``
    for the requested resources with a non-zero weight, in column order."""
    score = 0.0
    overflow = False
    for col, w, request in terms:
        cap = allocatable[col]
        if cap == 0:
            score += 0.0
            continue
        final = used[col] + request
        if final > cap:
            overflow = True
        score += final * w / cap
    if weight_sum > 0:
        score /= weight_sum
    if overflow:
        score = 0.0
    return score * 100.0 * weight
