"""Taints and tolerations over every node at once.

Clusters carry few distinct taints, so each distinct ``(key, value, effect)`` becomes a row
of a boolean matrix ``present[taint, node]`` (plus its position in the node's own taint
list, for the error message). A pod's tolerations are checked against the distinct taints
in plain Python (a handful of comparisons), and the per-node answer is one ``any`` over
the rows the pod does not tolerate.

Rules (kube-scheduler TaintToleration / NodeUnschedulable):

* filter: a ``NoSchedule`` or ``NoExecute`` taint the pod does not tolerate rejects the
  node; the message names the first such taint in the node's list:
  ``node(s) had untolerated taint {key: value}``;
* ``spec.unschedulable`` rejects the node unless the pod tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule``;
* score: the number of ``PreferNoSchedule`` taints not tolerated by the pod's tolerations
  whose effect is empty or ``PreferNoSchedule``, normalised in reverse over the scored
  nodes: ``100 - 100 * count // max`` (all 100 when no node has such a taint).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE = "NoSchedule", "NoExecute", "PreferNoSchedule"
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
_ABSENT = np.iinfo(np.int32).max


class Taint(NamedTuple):
    key: str
    value: str
    effect: str


def as_taint(raw: Mapping[str, Any]) -> Taint:
    return Taint(
        str(raw.get("key") or ""), str(raw.get("value") or ""), str(raw.get("effect") or "")
    )


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """``Toleration.ToleratesTaint``: effect and key (when set) must be equal; operator
    ``Exists`` matches any value, ``Equal`` (or empty) needs the same value."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return str(toleration.get("value") or "") == taint.value
    return False


def tolerations_of(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("tolerations") or [])


def tolerated(tolerations: Sequence[Mapping[str, Any]], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


class TaintIndex:
    """Distinct taints of one session's nodes as rows over the nodes."""

    def __init__(self, node_taints: Sequence[Sequence[Mapping[str, Any]] | None]) -> None:
        n = len(node_taints)
        self.size = n
        self.taints: list[Taint] = []
        ids: dict[Taint, int] = {}
        cells: list[tuple[int, int, int]] = []  # (taint id, node, position)
        for node, raw_list in enumerate(node_taints):
            for pos, raw in enumerate(raw_list or []):
                taint = as_taint(raw)
                t = ids.get(taint)
                if t is None:
                    t = ids[taint] = len(self.taints)
                    self.taints.append(taint)
                cells.append((t, node, pos))
        self.present = np.zeros((len(self.taints), n), dtype=bool)
        self.position = np.full((len(self.taints), n), _ABSENT, dtype=np.int32)
        for t, node, pos in cells:
            if not self.present[t, node]:
                self.present[t, node] = True
                self.position[t, node] = pos
        self.hard = [i for i, t in enumerate(self.taints) if t.effect in (NO_SCHEDULE, NO_EXECUTE)]
        self.soft = [i for i, t in enumerate(self.taints) if t.effect == PREFER_NO_SCHEDULE]

    def untolerated_hard(self, tolerations: Sequence[Mapping[str, Any]]) -> list[int]:
        return [i for i in self.hard if not tolerated(tolerations, self.taints[i])]

    def filter(
        self, tolerations: Sequence[Mapping[str, Any]]
    ) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
        """(failed mask, [(reason, nodes)]) for the NoSchedule/NoExecute taints."""
        bad = self.untolerated_hard(tolerations)
        if not bad:
            return np.zeros(self.size, dtype=bool), []
        if len(bad) == 1:
            failed = self.present[bad[0]].copy()
            return failed, [(untolerated_reason(self.taints[bad[0]]), failed)]
        failed = self.present[bad].any(axis=0)
        first = np.asarray(bad)[np.argmin(self.position[bad], axis=0)]
        reasons = []
        for t in np.unique(first[failed]):
            reasons.append((untolerated_reason(self.taints[int(t)]), failed & (first == t)))
        return failed, reasons

    def prefer_counts(self, tolerations: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Untolerated PreferNoSchedule taints per node."""
        usable = [t for t in tolerations if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]
        bad = [i for i in self.soft if not tolerated(usable, self.taints[i])]
        if not bad:
            return np.zeros(self.size, dtype=np.int64)
        return self.present[bad].sum(axis=0, dtype=np.int64)


def untolerated_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def unschedulable_fails(
    unschedulable: np.ndarray, tolerations: Sequence[Mapping[str, Any]]
) -> np.ndarray:
    """Cordoned nodes the pod may not use (it lacks the unschedulable toleration)."""
    if tolerated(tolerations, Taint(UNSCHEDULABLE_TAINT_KEY, "", NO_SCHEDULE)):
        return np.zeros(unschedulable.shape[0], dtype=bool)
    return np.asarray(unschedulable, dtype=bool)


def normalize_reverse(counts: np.ndarray) -> np.ndarray:
    """kube-scheduler ``DefaultNormalizeScore(100, reverse=true)`` over the given nodes."""
    if counts.size == 0:
        return np.zeros(0)
    top = int(counts.max())
    if top == 0:
        return np.full(counts.shape[0], 100.0)
    return 100.0 - np.floor(counts * 100.0 / top)
