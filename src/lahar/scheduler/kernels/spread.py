"""Pod topology spread constraints (filter and score) over all nodes.

For each constraint the matching pods per node (same namespace as the incoming pod, not
terminating) come from the cached counts of
:class:`~lahar.scheduler.kernels.pods.PodIndex`; a ``bincount`` over the node column of
the topology key then gives the count per domain.

Filter (``whenUnsatisfiable: DoNotSchedule``), kube-scheduler PodTopologySpread:

* domains are counted over the nodes that carry *every* constraint's key and pass the
  inclusion policies — ``nodeAffinityPolicy`` (default Honor: the pod's nodeSelector and
  required node affinity) and ``nodeTaintsPolicy`` (default Ignore; Honor: the node's
  NoSchedule/NoExecute taints must be tolerated);
* a node lacking the key fails ("... (missing required label)", unresolvable);
* otherwise ``count(domain) + self_match - global_min <= maxSkew``, where the global
  minimum is 0 when fewer than ``minDomains`` (default 1) domains exist.

Score (``ScheduleAnyway``): candidate nodes lacking a key are ignored (score 0); each
constraint adds ``count * log(size + 2) + maxSkew - 1`` (``size`` = number of candidate
domains, or candidate nodes for ``kubernetes.io/hostname``), rounded, then reversed and
normalised: ``100 * (max + min - s) // max`` (100 everywhere when max is 0).

Not modelled: the system default constraints kube-scheduler derives from Services and
ReplicaSets owning a pod (lahar has no such listers, which is what Kubernetes does for a
pod that no Service/controller selects).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from lahar.scheduler.kernels.labels import (
    IN,
    LabelIndex,
    Requirement,
    Selector,
    label_selector,
    matches,
)
from lahar.scheduler.kernels.pods import PodIndex, PodMatcher

SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_MISMATCH + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"


class SpreadConstraint(NamedTuple):
    max_skew: int
    topology_key: str
    hard: bool
    selector: Selector
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def spread_constraints(pod: Mapping[str, Any]) -> tuple[SpreadConstraint, ...]:
    """Parse ``spec.topologySpreadConstraints`` (``matchLabelKeys`` folded into the
    selector with the pod's own values)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    labels = meta.get("labels") or {}
    out = []
    for raw in spec.get("topologySpreadConstraints") or []:
        selector = label_selector(raw.get("labelSelector"))
        if selector is not None:
            extra = [
                Requirement(str(k), IN, (str(labels[k]),))
                for k in raw.get("matchLabelKeys") or []
                if k in labels
            ]
            selector = tuple(sorted(set(selector) | set(extra)))
        out.append(
            SpreadConstraint(
                max_skew=int(raw.get("maxSkew") or 1),
                topology_key=str(raw.get("topologyKey") or ""),
                hard=(raw.get("whenUnsatisfiable") or "DoNotSchedule") == "DoNotSchedule",
                selector=selector,
                min_domains=int(raw["minDomains"]) if raw.get("minDomains") is not None else 1,
                honor_affinity=(raw.get("nodeAffinityPolicy") or "Honor") == "Honor",
                honor_taints=(raw.get("nodeTaintsPolicy") or "Ignore") == "Honor",
            )
        )
    return tuple(out)


def _columns(cons: tuple[SpreadConstraint, ...], nodes: LabelIndex) -> list[np.ndarray]:
    missing = np.full(nodes.size, -1, dtype=np.int32)
    cols = []
    for c in cons:
        col = nodes.column(c.topology_key)
        cols.append(missing if col is None else col)
    return cols


def _eligible(
    c: SpreadConstraint, base: np.ndarray, affinity_ok: np.ndarray, taints_ok: np.ndarray
) -> np.ndarray:
    mask = base
    if c.honor_affinity:
        mask = mask & affinity_ok
    if c.honor_taints:
        mask = mask & taints_ok
    return mask


def _counts(pods: PodIndex, c: SpreadConstraint, namespace: str) -> np.ndarray:
    return pods.counts(
        (PodMatcher(frozenset({namespace}), None, c.selector),), skip_terminating=True
    )


def spread_filter(
    cons: tuple[SpreadConstraint, ...],
    namespace: str,
    labels: Mapping[str, str],
    nodes: LabelIndex,
    pods: PodIndex,
    affinity_ok: np.ndarray,
    taints_ok: np.ndarray,
) -> list[tuple[str, np.ndarray, bool]]:
    """[(reason, failed nodes, unresolvable)] for the DoNotSchedule constraints."""
    hard = tuple(c for c in cons if c.hard)
    if not hard:
        return []
    n = nodes.size
    cols = _columns(hard, nodes)
    all_keys = np.ones(n, dtype=bool)
    for col in cols:
        all_keys &= col >= 0
    missing = np.zeros(n, dtype=bool)
    skewed = np.zeros(n, dtype=bool)
    decided = np.zeros(n, dtype=bool)
    for c, col in zip(hard, cols, strict=True):
        n_values = nodes.n_values(c.topology_key)
        eligible = _eligible(c, all_keys, affinity_ok, taints_ok)
        counts = _counts(pods, c, namespace)
        totals = np.bincount(col[eligible], weights=counts[eligible], minlength=n_values)
        present = np.bincount(col[eligible], minlength=n_values) > 0
        n_domains = int(present.sum())
        low = float(totals[present].min()) if n_domains else float(2**31 - 1)
        if n_domains < c.min_domains:
            low = 0.0
        self_match = 1.0 if matches(labels, c.selector) else 0.0
        has = col >= 0
        idx = np.where(has, col, 0)
        match_num = np.where(has & present[idx], totals[idx], 0.0) if n_values else np.zeros(n)
        miss = ~decided & ~has
        skew = ~decided & has & (match_num + self_match - low > c.max_skew)
        missing |= miss
        skewed |= skew
        decided |= miss | skew
    out = []
    if missing.any():
        out.append((SPREAD_MISSING_LABEL, missing, True))
    if skewed.any():
        out.append((SPREAD_MISMATCH, skewed, False))
    return out


def spread_score(
    cons: tuple[SpreadConstraint, ...],
    namespace: str,
    nodes: LabelIndex,
    pods: PodIndex,
    candidates: np.ndarray,
    affinity_ok: np.ndarray,
    taints_ok: np.ndarray,
) -> np.ndarray:
    """Normalised 0..100 score for the candidate nodes (indices into the node table)."""
    soft = tuple(c for c in cons if not c.hard)
    k = candidates.shape[0]
    if not soft or k == 0:
        return np.zeros(k)
    cols = _columns(soft, nodes)
    all_keys = np.ones(nodes.size, dtype=bool)
    for col in cols:
        all_keys &= col >= 0
    scored = all_keys[candidates]
    kept = candidates[scored]
    raw = np.zeros(k)
    for c, col in zip(soft, cols, strict=True):
        counts = _counts(pods, c, namespace)
        if c.topology_key == HOSTNAME:
            size = int(kept.shape[0])
            cnt = counts[candidates].astype(np.float64)
        else:
            n_values = nodes.n_values(c.topology_key)
            in_play = np.zeros(max(n_values, 1), dtype=bool)
            in_play[col[kept]] = True
            size = int(in_play.sum())
            eligible = _eligible(c, all_keys, affinity_ok, taints_ok)
            eligible &= in_play[np.where(col >= 0, col, 0)]
            totals = np.bincount(
                col[eligible], weights=counts[eligible], minlength=max(n_values, 1)
            )
            cnt = totals[np.where(col[candidates] >= 0, col[candidates], 0)]
        raw += cnt * math.log(size + 2) + (c.max_skew - 1)
    raw = np.floor(raw + 0.5)  # Go's math.Round for non-negative values
    if not scored.any():
        return np.zeros(k)
    lo, hi = float(raw[scored].min()), float(raw[scored].max())
    if hi == 0:
        return np.where(scored, 100.0, 0.0)
    return np.where(scored, np.floor_divide(100.0 * (hi + lo - raw), hi), 0.0)
