"""Session close: PodGroup phases, as Volcano's job updater recomputes them.

Kept apart from the session so the rules of volcano-semantics §5.1 read in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.task import TaskStatus

if TYPE_CHECKING:
    from lahar.scheduler.framework.session import Session

S = TaskStatus


def podgroup_phase(job: JobInfo, session_uid: str) -> str:
    """The phase the scheduler writes for ``job`` at the end of the session."""
    unsched = job.conditions.get("Unschedulable")
    if (
        job.count(S.RUNNING) > 0
        and unsched is not None
        and unsched.get("status") == "True"
        and unsched.get("transitionID") == session_uid
    ):
        return "Unknown"
    releasing_on_node = sum(1 for t in job.tasks_in(S.RELEASING) if t.node)
    scheduled = job.count(S.RUNNING, S.BOUND, S.FAILED, S.SUCCEEDED) + releasing_on_node
    if scheduled >= job.min_available:
        if scheduled == job.count(S.SUCCEEDED, S.FAILED):
            return "Completed"
        return "Running"
    return "Inqueue" if job.phase == "Inqueue" else "Pending"


def update_job_statuses(ssn: Session) -> None:
    for job in ssn.jobs.values():
        job.out_phase = podgroup_phase(job, ssn.uid)
