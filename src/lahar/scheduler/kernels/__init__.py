"""Node-level scheduling kernels: predicates and scores over all nodes at once.

Pure functions over the session's NodeTable arrays and plain Kubernetes dicts, used by
the ``predicates``, ``nodeorder`` and ``binpack`` plugins. The entry points:

* :class:`KernelState` — per-session indexes (interned node labels
  and taints, pods by labels, node request aggregates), updated incrementally with
  :meth:`KernelState.update_on_allocate` / :meth:`KernelState.update_on_deallocate`;
* :func:`feasible` — a :class:`~lahar.scheduler.api.fit.NodeFilter` for one task over
  every node, with kube-scheduler's reason texts;
* :func:`nodeorder_score` / :func:`nodeorder_components` and :func:`binpack_score` —
  Volcano's node scores for the candidate nodes;
* :func:`resource_fit` — the ``request <= available`` check with "Insufficient X".
"""

from lahar.scheduler.kernels.feasibility import (
    NODE_AFFINITY_MISMATCH,
    UNSCHEDULABLE,
    PredicateSwitches,
    feasible,
)
from lahar.scheduler.kernels.interpod import (
    AFFINITY_MISMATCH,
    ANTI_AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY_MISMATCH,
)
from lahar.scheduler.kernels.resources import TOO_MANY_PODS, resource_fit
from lahar.scheduler.kernels.scoring import (
    BinpackWeights,
    NodeOrderWeights,
    binpack_score,
    nodeorder_components,
    nodeorder_score,
)
from lahar.scheduler.kernels.spread import SPREAD_MISMATCH, SPREAD_MISSING_LABEL
from lahar.scheduler.kernels.state import KernelState, parse_pod
from lahar.scheduler.kernels.taints import untolerated_reason

__all__ = [
    "AFFINITY_MISMATCH",
    "ANTI_AFFINITY_MISMATCH",
    "EXISTING_ANTI_AFFINITY_MISMATCH",
    "NODE_AFFINITY_MISMATCH",
    "SPREAD_MISMATCH",
    "SPREAD_MISSING_LABEL",
    "TOO_MANY_PODS",
    "UNSCHEDULABLE",
    "BinpackWeights",
    "KernelState",
    "NodeOrderWeights",
    "PredicateSwitches",
    "binpack_score",
    "feasible",
    "nodeorder_components",
    "nodeorder_score",
    "parse_pod",
    "resource_fit",
    "untolerated_reason",
]
