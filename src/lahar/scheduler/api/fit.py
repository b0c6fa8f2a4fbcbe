"""Predicate results over all nodes at once, and the fit errors they leave behind.

``NodeFilter`` is what a vectorized predicate returns (the contract with the kernels in
``scheduler/kernels``): one boolean per node of the session's NodeTable, plus, for each
failure reason, the nodes that failed with it. ``FitErrors`` accumulates why a task found
no node, so explanations can be summarised like kube-scheduler's
"0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint(s)."
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class NodeFilter:
    """Outcome of one predicate for one task over every node.

    ``passed[i]``: node ``i`` is feasible. ``reasons``: ``(text, failed_mask)`` pairs;
    a node may appear under several reasons. ``unresolvable``: nodes whose failure no
    eviction can fix (``UnschedulableAndUnresolvable``: selectors, affinity, taints...);
    preempt and reclaim skip them. ``None`` means "none of them".
    """

    passed: np.ndarray
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)
    unresolvable: np.ndarray | None = None

    @staticmethod
    def all_pass(n: int) -> NodeFilter:
        return NodeFilter(np.ones(n, dtype=bool))

    def combine(self, other: NodeFilter) -> NodeFilter:
        """Both must pass (the predicate tier rule: all plugins must pass)."""
        unres = self.unresolvable
        if other.unresolvable is not None:
            unres = other.unresolvable if unres is None else (unres | other.unresolvable)
        return NodeFilter(self.passed & other.passed, self.reasons + other.reasons, unres)


@dataclass(slots=True)
class FitErrors:
    """Why one task did not fit: node count and reason -> number of nodes."""

    total_nodes: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    message: str = ""

    @staticmethod
    def from_filter(result: NodeFilter, considered: np.ndarray | None = None) -> FitErrors:
        n = int(result.passed.shape[0])
        errors = FitErrors(total_nodes=n)
        failed = ~result.passed if considered is None else (~result.passed & considered)
        seen = np.zeros(n, dtype=bool)
        for text, mask in result.reasons:
            hit = mask & failed
            count = int(np.count_nonzero(hit))
            if count:
                errors.reasons[text] += count
                seen |= hit
        rest = int(np.count_nonzero(failed & ~seen))
        if rest:
            errors.reasons["node(s) didn't satisfy the plugins"] += rest
        return errors

    @staticmethod
    def single(text: str) -> FitErrors:
        return FitErrors(message=text)

    def summary(self) -> str:
        """kube-scheduler style: ``0/5 nodes are available: 3 Insufficient cpu.``"""
        if self.message:
            return self.message
        parts = sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        detail = ", ".join(f"{count} {text}" for text, count in parts)
        text = f"0/{self.total_nodes} nodes are available"
        return f"{text}: {detail}." if detail else f"{text}."
