"""Shared machinery of the actions: ordered queues, feasibility over all nodes, node choice.

Feasibility and scoring are NumPy operations over the session's NodeTable: the resource
check compares the task's request with every node's (future) idle row at once, the
predicate plugins return masks, and the node-order plugins return score arrays, so no
action loops over nodes in Python on the allocate path.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import numpy as np

from lahar.scheduler.api.fit import NodeFilter
from lahar.scheduler.api.resources import insufficient_rows, less_equal_rows
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.session import Session

T = TypeVar("T")

MINIMUM_FEASIBLE_NODES = 100
MINIMUM_PERCENTAGE_NODES_TO_FIND = 5


class _Entry(Generic[T]):
    __slots__ = ("cmp", "item", "seq")

    def __init__(self, item: T, cmp: Callable[[T, T], int], seq: int) -> None:
        self.item, self.cmp, self.seq = item, cmp, seq

    def __lt__(self, other: _Entry[T]) -> bool:
        result = self.cmp(self.item, other.item)
        return result < 0 if result else self.seq < other.seq


class PriorityQueue(Generic[T]):
    """A heap ordered by a live comparison (like Volcano's ``util.PriorityQueue``: the
    order is evaluated when items move, so shares that change mid-action matter).

    With ``key`` (a key that orders exactly like ``cmp``, which must then be a strict
    total order, e.g. :meth:`Session.task_sort_key`) the heap holds key tuples and
    compares them natively: the same pops, without a Python call per comparison."""

    def __init__(
        self,
        cmp: Callable[[T, T], int],
        items: Iterable[T] = (),
        key: Callable[[T], Any] | None = None,
    ) -> None:
        self._cmp = cmp
        self._key = key
        self._heap: list[Any] = []
        self._seq = itertools.count()
        for item in items:
            self.push(item)

    def push(self, item: T) -> None:
        if self._key is not None:
            heapq.heappush(self._heap, (self._key(item), next(self._seq), item))
        else:
            heapq.heappush(self._heap, _Entry(item, self._cmp, next(self._seq)))

    def pop(self) -> T:
        entry = heapq.heappop(self._heap)
        return entry[2] if self._key is not None else entry.item  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def items(self) -> list[T]:
        if self._key is not None:
            return [e[2] for e in self._heap]
        return [e.item for e in self._heap]


def resource_filter(ssn: Session, task: TaskInfo, rows: np.ndarray) -> NodeFilter:
    """``request <= rows`` per node (Volcano's ``LessEqual``), with "Insufficient X" reasons."""
    passed = less_equal_rows(task.resreq, rows)
    if passed.all():
        return NodeFilter(passed)
    insufficient = insufficient_rows(task.resreq, rows)
    reasons = [
        (f"Insufficient {ssn.space.names[col]}", insufficient[:, col])
        for col in np.flatnonzero(insufficient.any(axis=0))
    ]
    return NodeFilter(passed, reasons)


def predicate_all(ssn: Session, task: TaskInfo, *, check_resources: bool = True) -> NodeFilter:
    """Resource fit against future idle (optional) combined with every predicate plugin."""
    nodes = ssn.nodes
    result = (
        resource_filter(ssn, task, nodes.future_idle())
        if check_resources
        else NodeFilter.all_pass(nodes.size)
    )
    if ssn.predicates:
        result = result.combine(ssn.predicates.run(task, nodes))
    return result


def nodes_to_find(n: int, percentage: int = 0) -> int:
    """How many feasible nodes the predicate phase looks for (Volcano's adaptive rule)."""
    if n <= MINIMUM_FEASIBLE_NODES or percentage >= 100:
        return n
    pct = percentage if percentage > 0 else max(MINIMUM_PERCENTAGE_NODES_TO_FIND, 50 - n // 125)
    return max(MINIMUM_FEASIBLE_NODES, n * pct // 100)


def take_feasible(ssn: Session, passed: np.ndarray) -> np.ndarray:
    """Indices of feasible nodes scanned from the session's rotating offset, stopping after
    :func:`nodes_to_find` hits; the offset advances by the number of nodes examined.

    The scan order is ``offset .. n-1, 0 .. offset-1``: the feasible indices are found
    once, in node order, and split at the offset (no rotated copy of the mask)."""
    n = passed.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    offset = ssn.predicate_offset
    found = passed.nonzero()[0]
    count = found.shape[0]
    limit = nodes_to_find(n)
    if offset:
        k = int(found.searchsorted(offset))
        if count - k >= limit:
            hits = found[k : k + limit]
        else:
            hits = np.concatenate((found[k:], found[: min(k, limit - (count - k))]))
    else:
        hits = found[:limit]
    examined = (int(hits[-1]) - offset) % n + 1 if count > limit else n
    ssn.predicate_offset = (offset + examined) % n
    return hits


def best_scored(ssn: Session, task: TaskInfo, candidates: np.ndarray) -> int:
    """Highest summed node-order score; equal scores are broken by the session's seeded
    random generator, as Volcano breaks them at random."""
    explaining = ssn.score_log is not None
    if candidates.shape[0] == 1 and not explaining:
        return int(candidates[0])
    if ssn.node_order:
        scores = ssn.node_order.score(task, ssn.nodes, candidates)
    else:
        scores = np.zeros(candidates.shape[0])
    if ssn.score_log is not None:
        names = ssn.nodes.names
        ssn.score_log[task.key] = {
            names[int(c)]: float(s) for c, s in sorted(zip(candidates, scores, strict=True))
        }
    top = (scores == scores.max()).nonzero()[0]
    if top.shape[0] == 1:
        return int(candidates[top[0]])
    return int(candidates[top[int(ssn.rng.integers(top.shape[0]))]])


def sort_by_score(ssn: Session, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
    """Candidates by descending score (stable: ties keep node order)."""
    if candidates.shape[0] <= 1 or not ssn.node_order:
        return candidates
    scores = ssn.node_order.score(task, ssn.nodes, candidates)
    return candidates[np.argsort(-scores, kind="stable")]
