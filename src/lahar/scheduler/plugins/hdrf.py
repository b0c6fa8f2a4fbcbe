"""Hierarchical DRF (drf with ``enableHierarchy: true``): fair share along a queue tree.

Queues name their place in the tree with the annotation ``volcano.sh/hierarchy``
(``root/eng/dev``) and the weight of each level with ``volcano.sh/hierarchy-weights``
(``1/2/8``; weights below 1 or unparsable count as 1). Jobs hang below their queue's
node. A node's allocation is its children's, each non-saturated child rescaled to the
smallest dominant share among them, saturated children added as they are; queues are
compared level by level by ``share / weight`` with saturated nodes last (§6.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import EPS, Vector

ROOT = "root"


def queue_path(queue: QueueInfo) -> tuple[list[str], list[float]]:
    """Path names and weights from the queue's annotations, rooted as admission would."""
    names = [p for p in queue.hierarchy.split("/") if p] or [queue.name]
    raw = [w for w in queue.hierarchy_weights.split("/") if w]
    if names[0] != ROOT:
        names = [ROOT, *names]
        raw = ["1", *raw]
    weights: list[float] = []
    for i in range(len(names)):
        try:
            value = float(raw[i]) if i < len(raw) else 1.0
        except ValueError:
            value = 1.0
        weights.append(value if value >= 1 else 1.0)
    return names, weights


@dataclass(eq=False)
class HNode:
    name: str
    weight: float = 1.0
    children: dict[str, HNode] = field(default_factory=dict)
    allocated: Vector | None = None
    request: Vector | None = None  # leaves (jobs) only
    share: float = 0.0
    saturated: bool = False

    @property
    def is_leaf(self) -> bool:
        return self.request is not None


class HierarchyTree:
    def __init__(self, total: Vector, demanding: np.ndarray) -> None:
        self.dims = np.flatnonzero(total >= EPS)
        self.total = total
        self.demanding = demanding
        self.root = HNode(ROOT)

    def dominant(self, allocated: Vector) -> float:
        best = 0.0
        for c in self.dims:
            best = max(best, float(allocated[c]) / float(self.total[c]))
        return best

    def add_job(self, queue: QueueInfo, job_uid: str, allocated: Vector, request: Vector) -> None:
        names, weights = queue_path(queue)
        node = self.root
        for name, weight in zip(names[1:], weights[1:], strict=True):
            node = node.children.setdefault(name, HNode(name, weight))
        node.children[job_uid] = HNode(job_uid, 1.0, allocated=allocated.copy(), request=request)

    def leaf(self, queue: QueueInfo, job_uid: str) -> HNode | None:
        node = self.root
        for name in queue_path(queue)[0][1:]:
            node = node.children.get(name)  # type: ignore[assignment]
            if node is None:
                return None
        return node.children.get(job_uid)

    def _saturated(self, allocated: Vector, request: Vector) -> bool:
        for c in np.flatnonzero(allocated >= EPS):
            if request[c] != 0 and allocated[c] >= request[c]:
                return True
            if not self.demanding[c] and request[c] != 0:
                return True
        return False

    def update(self, node: HNode | None = None) -> None:
        """Recompute shares bottom-up (Volcano's UpdateHierarchicalShare)."""
        node = node or self.root
        if node.is_leaf:
            assert node.allocated is not None and node.request is not None
            node.share = self.dominant(node.allocated)
            node.saturated = self._saturated(node.allocated, node.request)
            return
        smallest = 1.0
        for child in node.children.values():
            self.update(child)
            if child.share != 0 and not child.saturated:
                smallest = min(smallest, child.share)
        total = np.zeros_like(self.total)
        saturated = True
        for child in node.children.values():
            saturated &= child.saturated
            if child.share == 0 or child.allocated is None:
                continue
            scale = 1.0 if child.saturated else smallest / child.share
            total += child.allocated * scale
        node.allocated = total
        node.share = self.dominant(total)
        node.saturated = saturated

    def compare(self, left: QueueInfo, right: QueueInfo) -> float:
        """< 0 when ``left`` should be served first (Volcano's compareQueues)."""
        lpath, rpath = queue_path(left)[0], queue_path(right)[0]
        lnode, rnode = self.root, self.root
        depth = min(len(lpath), len(rpath))
        for i in range(depth):
            if lnode.saturated != rnode.saturated:
                return 1.0 if lnode.saturated else -1.0
            lv, rv = lnode.share / lnode.weight, rnode.share / rnode.weight
            if lv != rv:
                return lv - rv
            if i < depth - 1:
                ln, rn = lnode.children.get(lpath[i + 1]), rnode.children.get(rpath[i + 1])
                if ln is None or rn is None:
                    return 0.0
                lnode, rnode = ln, rn
        return 0.0
