"""JobInfo: one PodGroup and its tasks, with Volcano's gang counters.

The counters (ReadyTaskNum, WaitingTaskNum, ValidTaskNum...) and the per-role checks are
what gang, priority, the actions and the session-close phase computation all read, so
they live here once. ``allocated`` is kept equal to Σ requests of the tasks in the
allocated set by :meth:`update_task_status`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lahar.scheduler.api.fit import FitErrors
from lahar.scheduler.api.resources import ResourceSpace, Vector
from lahar.scheduler.api.task import (
    ALLOCATED_SET,
    COMPLETED_SET,
    TaskInfo,
    TaskStatus,
)

S = TaskStatus
READY_SET = frozenset({S.BOUND, S.BINDING, S.RUNNING, S.ALLOCATED, S.SUCCEEDED})
"""Statuses ``ReadyTaskNum`` counts."""


@dataclass(eq=False)
class JobInfo:
    uid: str  # "<namespace>/<name>"
    namespace: str
    name: str
    queue: str
    min_available: int
    space: ResourceSpace
    task_min_available: dict[str, int] = field(default_factory=dict)
    priority: int = 0
    preemptable: bool = False
    phase: str = "Pending"
    min_resources: Vector | None = None
    creation: str = ""
    podgroup: dict[str, Any] = field(default_factory=dict)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    by_status: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    allocated: Vector = field(init=False)
    fit_errors: dict[str, FitErrors] = field(default_factory=dict)
    job_fit_error: str = ""
    # why the session did not admit / run the job, in words (read by explain.py)
    enqueue_rejected: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    invalid: str = ""
    conditions: dict[str, dict[str, str]] = field(default_factory=dict)
    out_phase: str = ""

    def __post_init__(self) -> None:
        self.allocated = self.space.zeros()
        self._pending_best_effort = 0
        self._ready = 0  # tasks in READY_SET, kept by add_task / update_task_status

    # --- membership ------------------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        bucket = self.by_status.setdefault(task.status, {})
        if task.status in READY_SET and task.uid not in bucket:
            self._ready += 1
        bucket[task.uid] = task
        if task.status in ALLOCATED_SET:
            self.allocated += task.resreq
        if task.status == S.PENDING and task.best_effort:
            self._pending_best_effort += 1

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        old = task.status
        removed = self.by_status.get(old, {}).pop(task.uid, None) is not None
        if old in ALLOCATED_SET:
            self.allocated -= task.resreq
        task.status = status
        bucket = self.by_status.setdefault(status, {})
        added = task.uid not in bucket
        bucket[task.uid] = task
        if status in ALLOCATED_SET:
            self.allocated += task.resreq
        self._ready += (added and status in READY_SET) - (removed and old in READY_SET)
        if task.best_effort:
            self._pending_best_effort += (status == S.PENDING) - (old == S.PENDING)

    def count(self, *statuses: TaskStatus) -> int:
        by_status = self.by_status
        total = 0
        for s in statuses:
            tasks = by_status.get(s)
            if tasks:
                total += len(tasks)
        return total

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for s in statuses:
            out.extend(self.by_status.get(s, {}).values())
        return out

    # --- counters --------------------------------------------------------------------

    @property
    def total_tasks(self) -> int:
        return len(self.tasks)

    def ready_task_num(self) -> int:
        return self._ready

    def waiting_task_num(self) -> int:
        return len(self.by_status.get(S.PIPELINED, ()))

    def pending_best_effort_num(self) -> int:
        return self._pending_best_effort

    def valid_task_num(self) -> int:
        return self.count(*ALLOCATED_SET, S.SUCCEEDED, S.PIPELINED, S.PENDING)

    def is_ready(self) -> bool:
        return self._ready + self._pending_best_effort >= self.min_available

    def is_pipelined(self) -> bool:
        done = self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_num()
        return done >= self.min_available

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.phase in ("Pending", "")

    # --- per-role checks -------------------------------------------------------------

    def _task_min_total(self) -> int:
        return sum(self.task_min_available.values())

    def _role_counts(self, statuses: frozenset[TaskStatus], best_effort_pending: bool) -> Counter:
        counts: Counter[str] = Counter()
        for task in self.tasks.values():
            if task.status in statuses or (
                best_effort_pending and task.status == S.PENDING and task.best_effort
            ):
                counts[task.role] += 1
        return counts

    def _check_roles(self, statuses: frozenset[TaskStatus], best_effort_pending: bool) -> bool:
        if not self.task_min_available or self.min_available < self._task_min_total():
            return True
        counts = self._role_counts(statuses, best_effort_pending)
        return all(counts[r] >= m for r, m in self.task_min_available.items() if m > 0)

    def check_task_valid(self) -> bool:
        return self._check_roles(ALLOCATED_SET | {S.SUCCEEDED, S.PIPELINED, S.PENDING}, False)

    def check_task_ready(self) -> bool:
        return self._check_roles(ALLOCATED_SET | {S.SUCCEEDED}, True)

    def check_task_pipelined(self) -> bool:
        return self._check_roles(ALLOCATED_SET | {S.SUCCEEDED, S.PIPELINED}, True)

    def need_continue_allocating(self) -> bool:
        """Volcano's ``NeedContinueAllocating`` (no sub-group policies in lahar yet)."""
        if self.min_available == self.total_tasks:
            return False
        failed_roles = {self.tasks[uid].role for uid in self.fit_errors if uid in self.tasks}
        if self.min_available < self._task_min_total():
            pending_ok = sum(
                1 for t in self.by_status.get(S.PENDING, {}).values() if t.role not in failed_roles
            )
            return self.ready_task_num() + pending_ok >= self.min_available
        counts = self._role_counts(ALLOCATED_SET | {S.SUCCEEDED}, True)
        for role in failed_roles:
            need = self.task_min_available.get(role, 0)
            if need > 0 and counts[role] < need:
                return False
        return True

    def completed(self) -> int:
        return self.count(*COMPLETED_SET)

    def gated_request(self) -> Vector:
        total = self.space.zeros()
        for task in self.by_status.get(S.PENDING, {}).values():
            if task.gated:
                total += task.resreq
        return total

    def fit_error_summary(self) -> str:
        """``job.FitError()``-like text: the distinct task fit errors, most common first."""
        if self.job_fit_error:
            return self.job_fit_error
        texts = Counter(e.summary() for e in self.fit_errors.values())
        return "; ".join(t for t, _ in sorted(texts.items(), key=lambda kv: (-kv[1], kv[0])))
