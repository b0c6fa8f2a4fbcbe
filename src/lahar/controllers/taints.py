"""Taints and tolerations: which taint a node condition calls for, and whether (and for
how long) a pod tolerates a taint. Pure functions, shared by the node lifecycle
controller (which writes taints) and taint-based eviction (which reads them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"
MANAGED = (NOT_READY, UNREACHABLE)


def wanted_key(ready_status: str | None) -> str | None:
    """The taint key a node's Ready status calls for: none when ``True``,
    ``not-ready`` when ``False``, ``unreachable`` when ``Unknown``."""
    if ready_status == "False":
        return NOT_READY
    if ready_status == "Unknown":
        return UNREACHABLE
    return None


def with_health_taints(taints: Iterable[Obj], key: str | None, stamp: str) -> list[Obj]:
    """``taints`` with the not-ready/unreachable ones replaced by ``key``'s NoSchedule and
    NoExecute pair (none when ``key`` is None). A pair already there keeps its
    ``timeAdded``, so eviction deadlines do not move."""
    kept = [t for t in taints if t.get("key") not in MANAGED]
    if key is None:
        return kept
    existing = {(t.get("key"), t.get("effect")): t for t in taints}
    for effect in (NO_SCHEDULE, NO_EXECUTE):
        old = existing.get((key, effect))
        if old is not None:
            kept.append(old)
        elif effect == NO_EXECUTE:
            kept.append({"key": key, "effect": effect, "timeAdded": stamp})
        else:
            kept.append({"key": key, "effect": effect})
    return kept


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """Whether one toleration matches one taint (effect, key, operator and value)."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def toleration_seconds(tolerations: Iterable[Obj], taints: Iterable[Obj]) -> float | None:
    """How long a pod may stay on a node with these NoExecute ``taints``: None when some
    taint is not tolerated at all (evict now), else the smallest ``tolerationSeconds``
    among the matching tolerations (``inf`` when none sets it)."""
    tolerations = list(tolerations)
    least = math.inf
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return None
        for tol in matching:
            secs = tol.get("tolerationSeconds")
            if secs is not None:
                least = min(least, max(float(secs), 0.0))
    return least
