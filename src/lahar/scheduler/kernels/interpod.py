"""Inter-pod affinity and anti-affinity (filter and preferred score) over all nodes.

Everything reduces to *topology domains*: a term with ``topologyKey: zone`` is about the
set of nodes sharing a ``zone`` value. Given per-node counts of matching pods (from
:class:`~lahar.scheduler.kernels.pods.PodIndex`), one ``bincount`` over the node column of
that key gives the count per domain, and indexing it back by each node's value gives the
answer for every node — O(n_nodes) NumPy work per term, no per-node Python.

Filter (kube-scheduler InterPodAffinity):

* required affinity: the node must carry every term's topology key, and each term's
  domain must hold a pod matching *all* the terms — unless no such pod exists anywhere
  and the incoming pod matches its own terms (the first pod of a self-affine group);
* required anti-affinity: no term's domain may hold a pod matching that term;
* existing pods' required anti-affinity: no domain (of the term's key, around the
  owner's node) whose term the incoming pod matches.

Score: Σ over domains of ±weight for each (incoming preferred term, matching existing
pod) and (existing pod's preferred term matched by the incoming pod), then min-max
normalised to 0..100 over the scored nodes. Existing pods' *required* affinity terms
would add ``hard_weight`` each; Volcano leaves that weight at 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from lahar.scheduler.kernels.labels import LabelIndex
from lahar.scheduler.kernels.pods import (
    PREFERRED,
    PREFERRED_ANTI,
    REQUIRED,
    REQUIRED_ANTI,
    PodAffinity,
    PodIndex,
)

AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_MISMATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
HARD_POD_AFFINITY_WEIGHT = 0
"""Weight of an existing pod's *required* affinity term in the score. kube-scheduler's
default is 1, but Volcano builds the plugin with empty ``InterPodAffinityArgs``, so 0:
such terms do not score at all."""


def domain_totals(
    col: np.ndarray, counts: np.ndarray, n_values: int, where: np.ndarray | None = None
) -> np.ndarray:
    """Σ ``counts`` per label value over the nodes that carry the key (and ``where``)."""
    has = col >= 0 if where is None else (col >= 0) & where
    return np.bincount(col[has], weights=counts[has], minlength=n_values)


def per_node(col: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Broadcast per-value totals back to nodes (0 where the node lacks the key)."""
    if totals.size == 0:
        return np.zeros(col.shape[0])
    return np.where(col >= 0, totals[col], 0.0)


def interpod_filter(
    aff: PodAffinity,
    namespace: str,
    labels: Mapping[str, str],
    nodes: LabelIndex,
    pods: PodIndex,
) -> list[tuple[str, np.ndarray]]:
    """[(reason, failed nodes)]; each node is listed under its first failing rule."""
    n = nodes.size
    out: list[tuple[str, np.ndarray]] = []
    decided = np.zeros(n, dtype=bool)
    if aff.required:
        counts = pods.counts(tuple(t.matcher for t in aff.required))
        has_all = np.ones(n, dtype=bool)
        exist = np.ones(n, dtype=bool)
        any_pair = False
        for term in aff.required:
            col = nodes.column(term.topology_key)
            if col is None:
                has_all[:] = False
                continue
            totals = domain_totals(col, counts, nodes.n_values(term.topology_key))
            any_pair = any_pair or bool(totals.any())
            has_all &= col >= 0
            exist &= per_node(col, totals) > 0
        self_ok = all(pods.matcher_matches(t.matcher, namespace, labels) for t in aff.required)
        passed = has_all & (exist | (not any_pair and self_ok))
        failed = ~passed
        if failed.any():
            out.append((AFFINITY_MISMATCH, failed))
            decided |= failed
    if aff.required_anti:
        failed = np.zeros(n, dtype=bool)
        for term in aff.required_anti:
            col = nodes.column(term.topology_key)
            if col is None:
                continue
            counts = pods.counts((term.matcher,))
            totals = domain_totals(col, counts, nodes.n_values(term.topology_key))
            failed |= per_node(col, totals) > 0
        failed &= ~decided
        if failed.any():
            out.append((ANTI_AFFINITY_MISMATCH, failed))
            decided |= failed
    values: dict[str, set[int]] = {}
    for term, _, owners in pods.matching_groups(REQUIRED_ANTI, namespace, labels):
        col = nodes.column(term.topology_key)
        if col is None:
            continue
        bucket = values.setdefault(term.topology_key, set())
        bucket.update(int(col[node]) for node in owners if col[node] >= 0)
    if values:
        failed = np.zeros(n, dtype=bool)
        for key, codes in values.items():
            if codes:
                col = nodes.column(key)
                assert col is not None
                failed |= np.isin(col, list(codes))
        failed &= ~decided
        if failed.any():
            out.append((EXISTING_ANTI_AFFINITY_MISMATCH, failed))
    return out


def interpod_raw_score(
    aff: PodAffinity,
    namespace: str,
    labels: Mapping[str, str],
    nodes: LabelIndex,
    pods: PodIndex,
    hard_weight: int = HARD_POD_AFFINITY_WEIGHT,
) -> np.ndarray | None:
    """Un-normalised score per node; ``None`` when no term applies at all."""
    per_key: dict[str, np.ndarray] = {}

    def bucket(key: str) -> np.ndarray | None:
        if nodes.column(key) is None:
            return None
        if key not in per_key:
            per_key[key] = np.zeros(nodes.n_values(key))
        return per_key[key]

    for sign, terms in ((1.0, aff.preferred), (-1.0, aff.preferred_anti)):
        for weight, term in terms:
            acc = bucket(term.topology_key)
            if acc is None:
                continue
            col = nodes.column(term.topology_key)
            assert col is not None
            acc += sign * weight * domain_totals(col, pods.counts((term.matcher,)), acc.size)
    kinds = [(PREFERRED, 1.0), (PREFERRED_ANTI, -1.0)]
    if hard_weight > 0:
        kinds.append((REQUIRED, 1.0))
    for kind, sign in kinds:
        for term, weight, owners in pods.matching_groups(kind, namespace, labels):
            acc = bucket(term.topology_key)
            if acc is None:
                continue
            col = nodes.column(term.topology_key)
            assert col is not None
            w = hard_weight if kind == REQUIRED else weight
            for node, owners_here in owners.items():
                if col[node] >= 0:
                    acc[col[node]] += sign * w * owners_here
    if not per_key:
        return None
    score = np.zeros(nodes.size)
    for key, acc in per_key.items():
        col = nodes.column(key)
        assert col is not None
        score += per_node(col, acc)
    return score


def normalize_min_max(raw: np.ndarray) -> np.ndarray:
    """InterPodAffinity's NormalizeScore: ``int(100 * (s - min) / (max - min))``."""
    if raw.size == 0:
        return raw.astype(np.float64)
    lo, hi = float(raw.min()), float(raw.max())
    if hi - lo <= 0:
        return np.zeros(raw.shape[0])
    return np.trunc(100.0 * ((raw - lo) / (hi - lo)))
