"""Counting a vcjob's pods into its status counters.

A pod being deleted counts as ``terminating`` whatever its phase; otherwise its phase
decides (Pending, Running, Succeeded, Failed, Unknown). Per task, ``taskStatusCount``
holds the same counts by phase, keyed by the ``volcano.sh/task-spec`` of the pod.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lahar.volcano import constants as c
from lahar.volcano.jobs.spec import Obj

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


@dataclass
class Counts:
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    tasks: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, task: str, state: str) -> None:
        """Count one pod in ``state``: a pod phase or ``"Terminating"``."""
        attr = state.lower()
        setattr(self, attr, getattr(self, attr) + 1)
        if state != "Terminating":
            per_task = self.tasks.setdefault(task, {})
            per_task[state] = per_task.get(state, 0) + 1

    @property
    def total(self) -> int:
        return (
            self.pending
            + self.running
            + self.succeeded
            + self.failed
            + self.terminating
            + self.unknown
        )

    def task_status_count(self) -> dict[str, Obj]:
        return {task: {"phase": dict(phases)} for task, phases in sorted(self.tasks.items())}


def pod_state(pod: Obj) -> str:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    return phase if phase in PHASES else "Unknown"


def pod_task(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return (meta.get("annotations") or {}).get(c.TASK_SPEC_KEY) or (meta.get("labels") or {}).get(
        c.TASK_SPEC_KEY, ""
    )


def count(pods: list[Obj]) -> Counts:
    counts = Counts()
    for pod in pods:
        counts.add(pod_task(pod), pod_state(pod))
    return counts
