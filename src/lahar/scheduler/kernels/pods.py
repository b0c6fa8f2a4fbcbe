"""The pods already on nodes, indexed for inter-pod affinity and topology spread.

Inter-pod affinity and topology spread both ask "how many pods matching this selector
(in these namespaces) sit on each node?". Answering it by scanning pods per task would
cost O(pods) Python work per task; here the pods of the session's snapshot are interned
once (:class:`~lahar.scheduler.kernels.labels.LabelIndex` over their labels, integer
namespace and node columns), a count vector ``int64[n_nodes]`` is computed with NumPy the
first time a selector is seen, and every cached vector is then kept current by
:meth:`PodIndex.add` / :meth:`PodIndex.remove`. A placement only visits the cached
selectors it could match (:class:`ByLabel` files each selector under a ``key=value`` it
requires); the cache holds at most :data:`MAX_CACHED_SELECTORS` vectors, dropping the
oldest (a dropped vector is simply recomputed when asked for again).

Existing pods' own affinity terms (their required anti-affinity, which can reject the
incoming pod, and the terms that feed the interpodaffinity score) are grouped by
identical term, each group holding the nodes its owners run on, so a task checks each
distinct term once, and only the terms whose selector could match its labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np

from lahar.scheduler.kernels.labels import IN, LabelIndex, Selector, label_selector, matches


class PodMatcher(NamedTuple):
    """Pods in ``namespaces`` (or in a namespace whose labels satisfy ``ns_selector``)
    whose labels satisfy ``selector``."""

    namespaces: frozenset[str]
    ns_selector: Selector
    selector: Selector


class AffinityTerm(NamedTuple):
    matcher: PodMatcher
    topology_key: str


class PodAffinity(NamedTuple):
    required: tuple[AffinityTerm, ...]
    required_anti: tuple[AffinityTerm, ...]
    preferred: tuple[tuple[int, AffinityTerm], ...]
    preferred_anti: tuple[tuple[int, AffinityTerm], ...]

    def any(self) -> bool:
        return bool(self.required or self.required_anti or self.preferred or self.preferred_anti)


def affinity_term(raw: Mapping[str, Any], pod_namespace: str) -> AffinityTerm:
    """A ``PodAffinityTerm``; no namespaces and no namespaceSelector means the owning
    pod's namespace; ``namespaceSelector: {}`` means every namespace."""
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or [])
    raw_ns_sel = raw.get("namespaceSelector")
    ns_selector = label_selector(raw_ns_sel) if raw_ns_sel is not None else None
    if not namespaces and raw_ns_sel is None:
        namespaces = frozenset({pod_namespace})
    matcher = PodMatcher(namespaces, ns_selector, label_selector(raw.get("labelSelector")))
    return AffinityTerm(matcher, str(raw.get("topologyKey") or ""))


def _weighted(
    raw_list: Iterable[Mapping[str, Any]], ns: str
) -> tuple[tuple[int, AffinityTerm], ...]:
    out = []
    for raw in raw_list or []:
        weight = int(raw.get("weight") or 0)
        if weight:
            out.append((weight, affinity_term(raw.get("podAffinityTerm") or {}, ns)))
    return tuple(out)


def pod_affinity(pod: Mapping[str, Any], namespace: str | None = None) -> PodAffinity:
    """Parse ``spec.affinity.podAffinity`` / ``podAntiAffinity`` of a pod."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    ns = namespace or str(meta.get("namespace") or "default")
    aff = spec.get("affinity") or {}
    pa, paa = aff.get("podAffinity") or {}, aff.get("podAntiAffinity") or {}
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    return PodAffinity(
        tuple(affinity_term(t, ns) for t in pa.get(req) or []),
        tuple(affinity_term(t, ns) for t in paa.get(req) or []),
        _weighted(pa.get(pref) or [], ns),
        _weighted(paa.get(pref) or [], ns),
    )


@dataclass(slots=True)
class PodRecord:
    node: int
    namespace: str
    labels: dict[str, str]
    terminating: bool
    affinity: PodAffinity | None = None
    row: int = -1  # row in the static arrays, -1 for pods added in the session


# kinds of existing pods' terms kept in groups
REQUIRED_ANTI, REQUIRED, PREFERRED, PREFERRED_ANTI = (
    "required_anti",
    "required",
    "pref",
    "pref_anti",
)
TermGroups = dict[tuple[AffinityTerm, int], Counter[int]]  # (term, weight) -> node -> owners
CacheKey = tuple[tuple[PodMatcher, ...], bool]
MAX_CACHED_SELECTORS = 1024
K = TypeVar("K", bound=Hashable)


class ByLabel(Generic[K]):
    """Entries (cached selectors, term groups) filed under one ``key=value`` pair their
    selectors require, so a pod only visits the entries it could match: the candidates
    for a pod are the entries filed under one of its labels plus those with no
    ``In``/``matchLabels`` requirement. Selectors that match nothing are not filed."""

    def __init__(self) -> None:
        self.by_pair: dict[tuple[str, str], set[K]] = {}
        self.always: set[K] = set()

    @staticmethod
    def _pairs(matchers: Iterable[PodMatcher]) -> list[tuple[str, str]] | None:
        for m in matchers:
            if m.selector is None:
                return []
            for req in m.selector:
                if req.op == IN:
                    return [(req.key, v) for v in req.values]
        return None

    def add(self, key: K, matchers: Iterable[PodMatcher]) -> None:
        pairs = self._pairs(matchers)
        if pairs is None:
            self.always.add(key)
        for pair in pairs or ():
            self.by_pair.setdefault(pair, set()).add(key)

    def discard(self, key: K, matchers: Iterable[PodMatcher]) -> None:
        pairs = self._pairs(matchers)
        if pairs is None:
            self.always.discard(key)
        for pair in pairs or ():
            bucket = self.by_pair.get(pair)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self.by_pair[pair]

    def candidates(self, labels: Mapping[str, str]) -> set[K]:
        out = set(self.always)
        for pair in labels.items():
            bucket = self.by_pair.get(pair)
            if bucket:
                out |= bucket
        return out


@dataclass(eq=False)
class PodIndex:
    """Pods on the session's nodes; see the module docstring."""

    n_nodes: int
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    records: dict[str, PodRecord] = field(default_factory=dict)
    groups: dict[str, TermGroups] = field(default_factory=dict)
    _cache: dict[CacheKey, np.ndarray] = field(default_factory=dict)
    _cache_index: ByLabel[CacheKey] = field(default_factory=ByLabel)
    _group_index: dict[str, ByLabel[tuple[AffinityTerm, int]]] = field(default_factory=dict)
    # static columns over the snapshot's pods (set by build)
    labels: LabelIndex = field(init=False)
    ns_names: list[str] = field(init=False)
    node: np.ndarray = field(init=False)
    ns_code: np.ndarray = field(init=False)
    terminating: np.ndarray = field(init=False)
    alive: np.ndarray = field(init=False)

    @classmethod
    def build(
        cls,
        n_nodes: int,
        pods: Iterable[tuple[str, int, Mapping[str, Any], str | None]],
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> PodIndex:
        """``pods``: (uid, node index, pod dict, namespace or None to read it from the
        pod) of every pod placed on a node."""
        index = cls(n_nodes, dict(namespace_labels or {}))
        kinds = (REQUIRED_ANTI, REQUIRED, PREFERRED, PREFERRED_ANTI)
        index.groups = {k: {} for k in kinds}
        index._group_index = {k: ByLabel() for k in kinds}
        label_maps: list[dict[str, str]] = []
        ns_ids: dict[str, int] = {}
        nodes, nss, term = [], [], []
        for uid, node, pod, namespace in pods:
            rec = _record(node, pod, namespace)
            rec.row = len(label_maps)
            index.records[uid] = rec
            label_maps.append(rec.labels)
            nodes.append(node)
            nss.append(ns_ids.setdefault(rec.namespace, len(ns_ids)))
            term.append(rec.terminating)
            index._add_terms(rec, 1)
        index.labels = LabelIndex(label_maps)
        index.ns_names = list(ns_ids)
        index.node = np.asarray(nodes, dtype=np.int64)
        index.ns_code = np.asarray(nss, dtype=np.int64)
        index.terminating = np.asarray(term, dtype=bool)
        index.alive = np.ones(len(label_maps), dtype=bool)
        return index

    # --- namespace and pod matching ---------------------------------------------------

    def ns_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespace_labels.get(namespace) or {}

    def matcher_matches(self, m: PodMatcher, namespace: str, labels: Mapping[str, str]) -> bool:
        ns_ok = namespace in m.namespaces or (
            m.ns_selector is not None and matches(self.ns_labels(namespace), m.ns_selector)
        )
        return ns_ok and matches(labels, m.selector)

    def _matcher_mask(self, m: PodMatcher) -> np.ndarray:
        ns_ok = np.array(
            [
                ns in m.namespaces
                or (m.ns_selector is not None and matches(self.ns_labels(ns), m.ns_selector))
                for ns in self.ns_names
            ]
            + [False],
            dtype=bool,
        )
        return ns_ok[self.ns_code] & self.labels.selector_mask(m.selector)

    def counts(
        self, matchers: tuple[PodMatcher, ...], skip_terminating: bool = False
    ) -> np.ndarray:
        """Pods per node matching *all* ``matchers`` (cached, kept current)."""
        key = (matchers, skip_terminating)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        mask = self.alive.copy()
        if skip_terminating:
            mask &= ~self.terminating
        for m in matchers:
            mask &= self._matcher_mask(m)
        counts = np.bincount(self.node[mask], minlength=self.n_nodes).astype(np.int32)
        for rec in self.records.values():
            if rec.row < 0 and self._record_matches(rec, matchers, skip_terminating):
                counts[rec.node] += 1
        if len(self._cache) >= MAX_CACHED_SELECTORS:  # drop the oldest; it is recomputable
            old = next(iter(self._cache))
            del self._cache[old]
            self._cache_index.discard(old, old[0])
        self._cache[key] = counts
        self._cache_index.add(key, matchers)
        return counts

    def _record_matches(
        self, rec: PodRecord, matchers: tuple[PodMatcher, ...], skip_terminating: bool
    ) -> bool:
        if skip_terminating and rec.terminating:
            return False
        return all(self.matcher_matches(m, rec.namespace, rec.labels) for m in matchers)

    # --- incremental updates ---------------------------------------------------------

    def add(
        self,
        uid: str,
        node: int,
        pod: Mapping[str, Any],
        namespace: str | None = None,
        affinity: PodAffinity | None = None,
    ) -> None:
        """A pod was placed on ``node`` in the session (or came back after an undo);
        ``affinity`` is the pod's already parsed affinity, if the caller has it."""
        if uid in self.records:
            self.remove(uid)
        rec = _record(node, pod, namespace, affinity)
        self.records[uid] = rec
        self._apply(rec, 1)

    def remove(self, uid: str) -> int | None:
        """A pod left its node; returns the node index it was counted on."""
        rec = self.records.pop(uid, None)
        if rec is None:
            return None
        if rec.row >= 0:
            self.alive[rec.row] = False
        self._apply(rec, -1)
        return rec.node

    def _apply(self, rec: PodRecord, delta: int) -> None:
        for key in self._cache_index.candidates(rec.labels):
            if self._record_matches(rec, key[0], key[1]):
                self._cache[key][rec.node] += delta
        self._add_terms(rec, delta)

    def _add_terms(self, rec: PodRecord, delta: int) -> None:
        aff = rec.affinity
        if aff is None:
            return
        for kind, terms in (
            (REQUIRED_ANTI, [(t, 1) for t in aff.required_anti]),
            (REQUIRED, [(t, 1) for t in aff.required]),
            (PREFERRED, [(t, w) for w, t in aff.preferred]),
            (PREFERRED_ANTI, [(t, w) for w, t in aff.preferred_anti]),
        ):
            groups, index = self.groups[kind], self._group_index[kind]
            for term, weight in terms:
                owners = groups.get((term, weight))
                if owners is None:
                    owners = groups[(term, weight)] = Counter()
                    index.add((term, weight), (term.matcher,))
                owners[rec.node] += delta
                if owners[rec.node] <= 0:
                    del owners[rec.node]
                if not owners:
                    del groups[(term, weight)]
                    index.discard((term, weight), (term.matcher,))

    def matching_groups(
        self, kind: str, namespace: str, labels: Mapping[str, str]
    ) -> Iterable[tuple[AffinityTerm, int, Counter[int]]]:
        """Existing pods' terms of ``kind`` that the incoming pod satisfies."""
        groups = self.groups[kind]
        for key in self._group_index[kind].candidates(labels):
            term, weight = key
            if self.matcher_matches(term.matcher, namespace, labels):
                yield term, weight, groups[key]


def _record(
    node: int,
    pod: Mapping[str, Any],
    namespace: str | None = None,
    affinity: PodAffinity | None = None,
) -> PodRecord:
    meta = pod.get("metadata") or {}
    namespace = namespace or str(meta.get("namespace") or "default")
    aff = affinity
    if aff is None and (pod.get("spec") or {}).get("affinity"):
        aff = pod_affinity(pod, namespace)
    return PodRecord(
        node=node,
        namespace=namespace,
        labels=meta.get("labels") or {},
        terminating=meta.get("deletionTimestamp") is not None,
        affinity=aff if aff is not None and aff.any() else None,
    )
