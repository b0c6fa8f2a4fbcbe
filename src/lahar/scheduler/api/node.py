"""NodeTable: every node of a session as rows of NumPy arrays.

This is the layout the vectorized kernels (``scheduler/kernels``) read. Row ``i`` is node
``names[i]`` (``index[name] == i``); columns follow ``space`` (a ResourceSpace:
``space.index["cpu"]`` etc., cpu in milli, memory in bytes, pods whole, scalars milli).

* ``allocatable``: node ``status.allocatable``.
* ``used``: Σ requests of every task placed on the node except pipelined ones
  (releasing tasks included).
* ``idle``: ``allocatable - used`` (may go negative when a snapshot is out of sync).
* ``releasing``: Σ requests of releasing (being evicted or deleted) tasks.
* ``pipelined``: Σ requests of tasks pipelined onto the node this session.
* ``future``: ``idle + releasing - pipelined`` (Volcano's ``FutureIdle``), kept up to
  date incrementally; :meth:`future_idle` returns it (read-only, do not mutate).
* ``labels[i]`` (dict), ``taints[i]`` (list of taint dicts), ``unschedulable`` (bool,
  ``spec.unschedulable``), ``ready`` (bool; Volcano treats every known node as ready, so
  this is informational), ``objects[i]`` (the raw Node), ``tasks[i]`` (uid -> TaskInfo of
  the tasks on the node, any on-node status).

The arrays are mutated in place by the session's statements (allocate, pipeline, evict),
so a kernel must not cache them across calls without watching ``changed``: every
mutation appends the row it touched to that log (per-node state derived elsewhere, e.g.
the kernels' pod counts, appends too), so a cache of per-node values can remember a
position in the log and recompute only the rows listed after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lahar.scheduler.api.resources import ResourceSpace, Vector
from lahar.scheduler.api.task import TaskInfo, TaskStatus


def _accounting(status: TaskStatus) -> int:
    """Which arrays a task's request counts in: 1 pipelined, 2 releasing, 0 used only."""
    if status == TaskStatus.PIPELINED:
        return 1
    return 2 if status == TaskStatus.RELEASING else 0


@dataclass(eq=False)
class NodeTable:
    space: ResourceSpace
    names: list[str]
    allocatable: np.ndarray
    labels: list[dict[str, str]]
    taints: list[list[dict[str, Any]]]
    unschedulable: np.ndarray
    ready: np.ndarray
    objects: list[dict[str, Any]]
    index: dict[str, int] = field(init=False)
    used: np.ndarray = field(init=False)
    idle: np.ndarray = field(init=False)
    releasing: np.ndarray = field(init=False)
    pipelined: np.ndarray = field(init=False)
    future: np.ndarray = field(init=False)
    tasks: list[dict[str, TaskInfo]] = field(init=False)
    changed: list[int] = field(init=False)

    def __post_init__(self) -> None:
        n, r = len(self.names), self.space.size
        self.index = {name: i for i, name in enumerate(self.names)}
        self.allocatable = np.asarray(self.allocatable, dtype=np.float64).reshape(n, r)
        self.used = np.zeros((n, r))
        self.idle = self.allocatable.copy()
        self.releasing = np.zeros((n, r))
        self.pipelined = np.zeros((n, r))
        self.future = self.allocatable.copy()
        self.tasks = [{} for _ in range(n)]
        self.changed = []

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def resource_index(self) -> dict[str, int]:
        return self.space.index

    def future_idle(self) -> np.ndarray:
        return self.future

    def future_idle_of(self, i: int) -> Vector:
        return self.future[i].copy()

    def total_allocatable(self) -> Vector:
        return self.allocatable.sum(axis=0) if self.size else self.space.zeros()

    # --- accounting, in Volcano's NodeInfo.AddTask / RemoveTask terms ----------------

    def add_task(self, i: int, task: TaskInfo) -> None:
        req = task.resreq
        if task.status != TaskStatus.RELEASING:
            self.future[i] -= req
        if task.status == TaskStatus.PIPELINED:
            self.pipelined[i] += req
        else:
            if task.status == TaskStatus.RELEASING:
                self.releasing[i] += req
            self.idle[i] -= req
            self.used[i] += req
        self.tasks[i][task.uid] = task
        task.node_index = i
        task.node = self.names[i]
        self.changed.append(i)

    def add_tasks(self, rows: list[int], tasks: list[TaskInfo]) -> None:
        """:meth:`add_task` of ``tasks[k]`` on row ``rows[k]`` for every k, in order, with
        the arrays updated in bulk: each row sees the same additions in the same order
        (``ufunc.at`` applies them one by one), so the sums are the same to the bit."""
        if not tasks:
            return
        idx = np.fromiter(rows, dtype=np.intp, count=len(rows))
        reqs = np.concatenate([t.resreq for t in tasks]).reshape(len(tasks), self.space.size)
        status = np.fromiter([t.status for t in tasks], dtype=np.int8, count=len(tasks))
        releasing = status == TaskStatus.RELEASING
        pipelined = status == TaskStatus.PIPELINED
        if releasing.any():
            np.add.at(self.releasing, idx[releasing], reqs[releasing])
            keep = ~releasing
            np.subtract.at(self.future, idx[keep], reqs[keep])
        else:
            np.subtract.at(self.future, idx, reqs)
        if pipelined.any():
            np.add.at(self.pipelined, idx[pipelined], reqs[pipelined])
            idx, reqs = idx[~pipelined], reqs[~pipelined]
        np.subtract.at(self.idle, idx, reqs)
        np.add.at(self.used, idx, reqs)
        names, on_node = self.names, self.tasks
        for i, task in zip(rows, tasks, strict=True):
            on_node[i][task.uid] = task
            task.node_index = i
            task.node = names[i]
        self.changed.extend(rows)

    def remove_task(self, i: int, task: TaskInfo) -> None:
        req = task.resreq
        if task.status != TaskStatus.RELEASING:
            self.future[i] += req
        if task.status == TaskStatus.PIPELINED:
            self.pipelined[i] -= req
        else:
            if task.status == TaskStatus.RELEASING:
                self.releasing[i] -= req
            self.idle[i] += req
            self.used[i] -= req
        self.tasks[i].pop(task.uid, None)
        self.changed.append(i)

    def update_task(self, i: int, task: TaskInfo, old: TaskStatus) -> None:
        """Re-account a task whose status changed from ``old`` (still on node ``i``).

        Between two statuses that count alike (neither pipelined nor releasing, e.g.
        Allocated -> Binding) no amount moves, so only the task's place in the node's
        task list is renewed, as a remove and add would."""
        new = task.status
        if _accounting(old) == _accounting(new):
            on_node = self.tasks[i]
            on_node.pop(task.uid, None)
            on_node[task.uid] = task
            return
        task.status = old
        self.remove_task(i, task)
        task.status = new
        self.add_task(i, task)
