"""Victim handling shared by preempt and reclaim: candidate nodes and tasks.

The eviction order itself lives in :mod:`lahar.scheduler.framework.victims`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lahar.scheduler.actions.common import predicate_all
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.session import Session


def candidate_nodes(ssn: Session, task: TaskInfo) -> np.ndarray:
    """Nodes where evictions could help: every node whose predicate failures (if any) are
    not unresolvable (``PredicateForPreemptAction``), in node order."""
    result = predicate_all(ssn, task, check_resources=False)
    if result.unresolvable is None:
        return np.arange(ssn.nodes.size)
    return np.flatnonzero(~result.unresolvable)


def node_tasks(ssn: Session, node: int, keep: Callable[[TaskInfo], bool]) -> list[TaskInfo]:
    tasks = ssn.nodes.tasks[node]
    return [tasks[uid] for uid in sorted(tasks) if keep(tasks[uid])]
