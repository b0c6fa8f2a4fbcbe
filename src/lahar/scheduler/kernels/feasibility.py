"""Feasibility of one task on every node at once, with kube-scheduler's reasons.

:func:`feasible` runs the predicates Volcano's ``predicates`` plugin wraps, each as
array operations over all nodes, and returns a :class:`~lahar.scheduler.api.fit.NodeFilter`:
``passed`` per node, the failing nodes under each reason (what ``explain`` counts), and
the nodes whose failure no eviction can fix (``unresolvable``: preempt/reclaim skip them).

Reasons, in kube-scheduler's wording:

==============================================================  ============
``Insufficient <resource>`` / ``Too many pods``                  resolvable
``node(s) were unschedulable``                                   unresolvable
``node(s) didn't match Pod's node affinity/selector``            unresolvable
``node(s) had untolerated taint {key: value}``                   unresolvable
``node(s) didn't match pod affinity rules``                      unresolvable
``node(s) didn't match pod anti-affinity rules``                 resolvable
``node(s) didn't satisfy existing pods anti-affinity rules``     resolvable
``node(s) didn't match pod topology spread constraints``         resolvable
``... (missing required label)``                                 unresolvable
==============================================================  ============

The resource check is off by default: in Volcano it belongs to the actions
(``InitResreq <= FutureIdle``), not to the predicates plugin; ``resources=True`` adds it
for callers that want one combined answer. The pod-number check (allocatable ``pods``
against the pods on the node) is the predicates plugin's own and is on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lahar.scheduler.api.fit import NodeFilter
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.kernels.interpod import AFFINITY_MISMATCH, interpod_filter
from lahar.scheduler.kernels.resources import TOO_MANY_PODS, pod_count_fails, resource_fit
from lahar.scheduler.kernels.spread import spread_filter
from lahar.scheduler.kernels.state import KernelState
from lahar.scheduler.kernels.taints import unschedulable_fails

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"


@dataclass(frozen=True, slots=True)
class PredicateSwitches:
    """Which checks run (Volcano's ``predicate.<Name>Enable`` arguments, default on)."""

    node_affinity: bool = True
    taint_toleration: bool = True
    inter_pod_affinity: bool = True
    pod_topology_spread: bool = True
    pod_count: bool = True
    resources: bool = False


def feasible(
    state: KernelState,
    task: TaskInfo,
    switches: PredicateSwitches = PredicateSwitches(),
    available: np.ndarray | None = None,
) -> NodeFilter:
    """Every predicate for ``task`` over every node of ``state.table``.

    ``available`` (rows per node) is what the resource check compares against when
    ``switches.resources`` is on; default ``table.future_idle()``.
    """
    table = state.table
    n = table.size
    p = state.parsed(task)
    failed = np.zeros(n, dtype=bool)
    unresolvable = np.zeros(n, dtype=bool)
    reasons: list[tuple[str, np.ndarray]] = []

    def add(text: str, mask: np.ndarray, unres: bool) -> None:
        nonlocal failed, unresolvable
        if mask.any():
            for j, (seen, prior) in enumerate(reasons):
                if seen == text:  # one count per node and text ("Too many pods" twice)
                    reasons[j] = (text, prior | mask)
                    break
            else:
                reasons.append((text, mask))
            failed |= mask
            if unres:
                unresolvable |= mask

    if switches.resources:
        rows = table.future_idle() if available is None else available
        _, fit_reasons = resource_fit(task.resreq, rows, table.space.names)
        for text, mask in fit_reasons:
            add(text, mask, False)
    if switches.pod_count:
        add(TOO_MANY_PODS, pod_count_fails(state.pod_count, table.allocatable), False)
    add(UNSCHEDULABLE, unschedulable_fails(state.unschedulable, p.tolerations), True)
    affinity_ok = state.node_affinity.required_mask(p.constraints)
    if switches.node_affinity:
        add(NODE_AFFINITY_MISMATCH, ~affinity_ok, True)
    taint_failed, taint_reasons = state.taints.filter(p.tolerations)
    if switches.taint_toleration:
        for text, mask in taint_reasons:
            add(text, mask, True)
    if switches.inter_pod_affinity and (
        p.affinity.required or p.affinity.required_anti or state.anti_pods
    ):
        for text, mask in interpod_filter(
            p.affinity, p.namespace, p.labels, state.labels, state.pods
        ):
            add(text, mask, text == AFFINITY_MISMATCH)
    if switches.pod_topology_spread and p.spread:
        for text, mask, unres in spread_filter(
            p.spread, p.namespace, p.labels, state.labels, state.pods, affinity_ok, ~taint_failed
        ):
            add(text, mask, unres)
    return NodeFilter(~failed, reasons, unresolvable if unresolvable.any() else None)
