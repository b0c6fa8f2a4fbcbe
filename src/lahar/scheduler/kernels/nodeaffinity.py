"""Node selector and node affinity over every node at once.

A pod's ``spec.nodeSelector`` and ``affinity.nodeAffinity`` are compiled into hashable
terms, then evaluated against the session's interned node labels
(:class:`~lahar.scheduler.kernels.labels.LabelIndex`), so the filter is a few array
comparisons and the same pod template is answered from a cache.

Kubernetes rules kept here (``component-helpers/scheduling/corev1/nodeaffinity``):

* required terms are ORed; inside a term ``matchExpressions`` and ``matchFields`` are
  ANDed; a term with neither (or whose parts all fail to parse) matches no node;
* if a term's ``matchExpressions`` do not parse, that part is dropped and only its
  ``matchFields`` count (the library keeps the parsed half);
* ``matchFields`` supports ``metadata.name`` with ``In``/``NotIn`` and exactly one value;
* the preferred score is the sum of the weights of the matching preferred terms. Volcano
  adds this raw sum times ``nodeaffinity.weight`` without normalising it to 0..100.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from lahar.scheduler.kernels.labels import (
    IN,
    NOT_IN,
    LabelIndex,
    Requirement,
    Selector,
    make_requirement,
    matches,
    set_selector,
)

FieldReq = tuple[str, str, str]  # (field, In|NotIn, value)


class NodeTerm(NamedTuple):
    """One ``NodeSelectorTerm``; ``None`` parts are absent (or failed to parse)."""

    labels: Selector
    fields: tuple[FieldReq, ...] | None


class NodeConstraints(NamedTuple):
    """What a pod requires of its node: nodeSelector AND (any required term)."""

    selector: Selector
    required: tuple[NodeTerm, ...] | None  # None: no required node affinity


def node_term(term: Mapping[str, Any] | None) -> NodeTerm:
    term = term or {}
    labels: Selector = None
    exprs = term.get("matchExpressions") or []
    if exprs:
        reqs: list[Requirement] = []
        for expr in exprs:
            req = None
            if isinstance(expr, Mapping):
                req = make_requirement(expr.get("key"), expr.get("operator"), expr.get("values"))
            if req is None:
                reqs = []
                break
            reqs.append(req)
        labels = tuple(sorted(set(reqs))) if reqs else None
    fields: tuple[FieldReq, ...] | None = None
    fexprs = term.get("matchFields") or []
    if fexprs:
        out: list[FieldReq] = []
        for expr in fexprs:
            if not isinstance(expr, Mapping):
                out = []
                break
            op, values = expr.get("operator"), expr.get("values") or []
            if op not in (IN, NOT_IN) or not isinstance(values, list) or len(values) != 1:
                out = []
                break
            out.append((str(expr.get("key")), op, str(values[0])))
        fields = tuple(sorted(set(out))) if out else None
    return NodeTerm(labels, fields)


def _node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec") or {}
    return ((spec.get("affinity") or {}).get("nodeAffinity")) or {}


def node_constraints(pod: Mapping[str, Any]) -> NodeConstraints:
    """Compile a pod's nodeSelector and required node affinity."""
    spec = pod.get("spec") or {}
    selector = set_selector(spec.get("nodeSelector"))
    req = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    required = None
    if req is not None:
        required = tuple(node_term(t) for t in (req.get("nodeSelectorTerms") or []))
    return NodeConstraints(selector, required)


def preferred_terms(pod: Mapping[str, Any]) -> tuple[tuple[int, NodeTerm], ...]:
    """``preferredDuringScheduling...`` as (weight, term); weight-0 terms are dropped."""
    out = []
    for pref in _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        weight = int(pref.get("weight") or 0)
        if weight:
            out.append((weight, node_term(pref.get("preference"))))
    return tuple(out)


class NodeAffinityIndex:
    """Node labels and names of one session, with cached masks per compiled selector."""

    def __init__(self, labels: LabelIndex, names: list[str]) -> None:
        self.labels = labels
        self.names = names
        self.name_index = {n: i for i, n in enumerate(names)}
        self._terms: dict[NodeTerm, np.ndarray] = {}
        self._constraints: dict[NodeConstraints, np.ndarray] = {}

    def _field_mask(self, field: FieldReq) -> np.ndarray:
        key, op, value = field
        hit = np.zeros(self.labels.size, dtype=bool)
        if key == "metadata.name":
            i = self.name_index.get(value)
            if i is not None:
                hit[i] = True
        elif value == "":
            hit[:] = True  # any other field reads as "" on every node
        return hit if op == IN else ~hit

    def term_mask(self, term: NodeTerm) -> np.ndarray:
        cached = self._terms.get(term)
        if cached is not None:
            return cached
        if term.labels is None and term.fields is None:
            mask = np.zeros(self.labels.size, dtype=bool)
        else:
            mask = np.ones(self.labels.size, dtype=bool)
            if term.labels is not None:
                mask &= self.labels.selector_mask(term.labels)
            for field in term.fields or ():
                mask &= self._field_mask(field)
        self._terms[term] = mask
        return mask

    def required_mask(self, cons: NodeConstraints) -> np.ndarray:
        """Nodes that satisfy the nodeSelector and the required node affinity."""
        cached = self._constraints.get(cons)
        if cached is not None:
            return cached
        mask = self.labels.selector_mask(cons.selector) if cons.selector else None
        if cons.required is not None:
            any_term = np.zeros(self.labels.size, dtype=bool)
            for term in cons.required:
                any_term |= self.term_mask(term)
            mask = any_term if mask is None else (mask & any_term)
        if mask is None:
            mask = np.ones(self.labels.size, dtype=bool)
        self._constraints[cons] = mask
        return mask

    def preferred_score(self, terms: tuple[tuple[int, NodeTerm], ...]) -> np.ndarray:
        """Σ weight of the matching preferred terms, per node (not normalised)."""
        score = np.zeros(self.labels.size, dtype=np.float64)
        for weight, term in terms:
            score += weight * self.term_mask(term)
        return score


def term_matches(term: NodeTerm, labels: Mapping[str, str], name: str) -> bool:
    """Scalar form of :meth:`NodeAffinityIndex.term_mask` for one node."""
    if term.labels is None and term.fields is None:
        return False
    if term.labels is not None and not matches(labels, term.labels):
        return False
    for key, op, value in term.fields or ():
        actual = name if key == "metadata.name" else ""
        if (actual == value) != (op == IN):
            return False
    return True
