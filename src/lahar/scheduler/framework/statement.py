"""Statement: the transactional operations of a session (Volcano's ``Statement``).

``allocate``/``pipeline``/``evict`` change the session at once (task status, node
arrays, plugin accounting through the event handlers) and are recorded. ``commit``
turns them into decisions in operation order: an allocation becomes a bind, an eviction
an eviction, a pipeline nothing (pipelining lives only in the session). ``discard``
undoes them in reverse order: an evicted task comes back as Running whatever it was
before, a pipelined or allocated task goes back to Pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lahar.scheduler.api.task import TaskInfo

if TYPE_CHECKING:
    from lahar.scheduler.framework.session import Session


@dataclass(slots=True)
class Operation:
    kind: str  # "evict" | "pipeline" | "allocate"
    task: TaskInfo
    reason: str = ""


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.ssn.evict_in_session(task)
        self.operations.append(Operation("evict", task, reason))

    def pipeline(self, task: TaskInfo, node: int, eviction_occurred: bool = False) -> None:
        """Pipeline onto ``node``; ``eviction_occurred`` marks a preemptor, which Volcano
        nominates to that node at session close (``status.nominatedNodeName``)."""
        self.ssn.pipeline_in_session(task, node)
        self.operations.append(Operation("pipeline", task, "evicted" if eviction_occurred else ""))

    def allocate(self, task: TaskInfo, node: int) -> None:
        self.ssn.allocate_in_session(task, node)
        self.operations.append(Operation("allocate", task))

    def merge(self, other: Statement) -> None:
        self.operations.extend(other.operations)
        other.operations = []

    def commit(self) -> None:
        for op in self.operations:
            if op.kind == "evict":
                self.ssn.record_eviction(op.task, op.reason)
            elif op.kind == "allocate":
                self.ssn.dispatch(op.task)
            elif op.reason == "evicted" and op.task.node is not None:
                self.ssn.nominations[op.task.uid] = op.task.node
        self.operations = []

    def discard(self) -> None:
        for op in reversed(self.operations):
            if op.kind == "evict":
                self.ssn.unevict_in_session(op.task)
            else:
                self.ssn.unplace_in_session(op.task)
        self.operations = []
