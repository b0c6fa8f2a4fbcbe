"""TaskInfo: one Pod as the scheduler sees it, with Volcano's defaults.

A task's request is a dense vector in the session's :class:`ResourceSpace` (``resreq``)
that always includes ``pods: 1``. Its status follows Volcano's task state machine;
the status sets below are the ones Volcano's counters and filters use.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from lahar.scheduler.api.resources import Vector, is_empty


class TaskStatus(enum.IntEnum):
    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 3
    BINDING = 4
    BOUND = 5
    RUNNING = 6
    RELEASING = 7
    SUCCEEDED = 8
    FAILED = 9
    UNKNOWN = 10


S = TaskStatus
ALLOCATED_SET = frozenset({S.BOUND, S.BINDING, S.RUNNING, S.ALLOCATED})
"""Statuses whose request counts as allocated (``AllocatedStatus``)."""
SCHEDULED_SET = frozenset({S.RUNNING, S.BOUND, S.FAILED, S.SUCCEEDED})
COMPLETED_SET = frozenset({S.SUCCEEDED, S.FAILED})
PREEMPTABLE_STATUS = frozenset({S.BOUND, S.RUNNING})
ON_NODE = frozenset({S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING, S.RELEASING})
"""Statuses that place a task on a node (Succeeded/Failed pods never use a node)."""


def name_ordinal(name: str) -> int | None:
    """The integer after the last ``-`` of a name with at least three parts, else None."""
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


@dataclass(eq=False, slots=True)
class TaskInfo:
    """A pod. ``job`` is ``"<ns>/<podgroup>"`` or "" when the pod has no PodGroup."""

    uid: str
    namespace: str
    name: str
    job: str
    resreq: Vector
    status: TaskStatus
    node: str | None = None
    role: str = ""
    priority: int = 1
    pod_priority: int | None = None
    preemptable: bool = True
    priority_class_name: str = ""
    preemption_policy: str = ""
    nominated_node: str = ""
    creation: str = ""
    gated: bool = False
    pod: dict[str, Any] = field(default_factory=dict)
    best_effort: bool = False
    # index of the node in the session's NodeTable (-1 when not on a node)
    node_index: int = -1
    # trailing index of the name (``job-worker-3`` -> 3), read by the task-order fallback
    ordinal: int | None = None

    def __post_init__(self) -> None:
        self.best_effort = is_empty(self.resreq)
        self.ordinal = name_ordinal(self.name)

    @property
    def key(self) -> str:
        """``namespace/name``: how the command line and messages name a pod."""
        return f"{self.namespace}/{self.name}"


_new_object = object.__new__


def new_task(
    uid: str,
    namespace: str,
    name: str,
    job: str,
    resreq: Vector,
    status: TaskStatus,
    role: str,
    priority: int,
    pod_priority: int | None,
    preemptable: bool,
    priority_class_name: str,
    preemption_policy: str,
    nominated_node: str,
    creation: str,
    gated: bool,
    pod: dict[str, Any],
    best_effort: bool,
    ordinal: int | None,
) -> TaskInfo:
    """``TaskInfo(...)`` with what ``__post_init__`` would compute given (``best_effort``
    of ``resreq``, ``ordinal`` of ``name``): the snapshot build's fast path."""
    task = _new_object(TaskInfo)
    task.uid = uid
    task.namespace = namespace
    task.name = name
    task.job = job
    task.resreq = resreq
    task.status = status
    task.node = None
    task.role = role
    task.priority = priority
    task.pod_priority = pod_priority
    task.preemptable = preemptable
    task.priority_class_name = priority_class_name
    task.preemption_policy = preemption_policy
    task.nominated_node = nominated_node
    task.creation = creation
    task.gated = gated
    task.pod = pod
    task.best_effort = best_effort
    task.node_index = -1
    task.ordinal = ordinal
    return task
