"""gang: all-or-nothing scheduling of PodGroups (§6.1).

A job is valid only with enough tasks to reach minMember (and each role's minimum),
ready once minMember tasks are placed, pipelined once placed-or-pipelined tasks reach
it. Victim selection never takes a gang below minMember. At session close it writes the
PodGroup condition (Unschedulable with the reason, or Scheduled).
"""

from __future__ import annotations

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.task import TaskInfo, TaskStatus
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import PERMIT, REJECT, ValidateResult
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.registry import register_plugin

S = TaskStatus


def job_valid(job: JobInfo) -> ValidateResult:
    if not job.check_task_valid():
        return ValidateResult(
            False, "NotEnoughPodsOfTask", "not enough valid pods of each role for gang-scheduling"
        )
    valid = job.valid_task_num()
    if valid < job.min_available:
        return ValidateResult(
            False,
            "NotEnoughPods",
            f"not enough valid tasks for gang-scheduling: {valid} valid, {job.min_available} "
            "required (minMember)",
        )
    return ValidateResult(True)


def job_ready(job: JobInfo) -> bool:
    return job.check_task_ready() and job.is_ready()


def job_pipelined(job: JobInfo) -> int:
    return PERMIT if job.check_task_pipelined() and job.is_pipelined() else REJECT


def status_histogram(job: JobInfo) -> str:
    parts = [
        f"{len(tasks)} {status.name.title()}" for status, tasks in job.by_status.items() if tasks
    ]
    return ", ".join(sorted(parts, key=lambda p: p.split(" ", 1)[1]))


@register_plugin
class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.job_valid.add(self, job_valid)
        ssn.job_ready.add(self, job_ready)
        ssn.job_pipelined.add(self, job_pipelined)
        ssn.job_starving.add(self, lambda job: job.is_starving())
        ssn.job_order.add(self, self.job_order)
        ssn.preemptable.add(self, self.victims)
        ssn.reclaimable.add(self, self.victims)

    @staticmethod
    def job_order(left: JobInfo, right: JobInfo) -> int:
        lr, rr = left.is_ready(), right.is_ready()
        if lr == rr:
            return 0
        return 1 if lr else -1

    def victims(
        self, preemptor: TaskInfo, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        remaining: dict[str, int] = {}
        chosen: list[TaskInfo] = []
        for task in candidates:
            job = self.ssn.jobs.get(task.job)
            if job is None:
                continue
            left = remaining.setdefault(job.uid, job.ready_task_num())
            if left > job.min_available:
                remaining[job.uid] = left - 1
                chosen.append(task)
        return chosen, PERMIT

    def on_session_close(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            # A PodGroup whose pods do not exist yet is unready too, and says so (as in
            # Volcano: "N/0 tasks in gang unschedulable").
            if job.is_ready():
                job.conditions["Scheduled"] = {
                    "type": "Scheduled",
                    "status": "True",
                    "reason": "tasks in gang are ready to be scheduled",
                    "message": "",
                    "transitionID": ssn.uid,
                }
                job.conditions.pop("Unschedulable", None)
                continue
            releasing = [t for t in job.tasks_in(S.RELEASING) if t.node]
            scheduled = job.count(S.RUNNING, S.BOUND, S.FAILED, S.SUCCEEDED)
            if (
                releasing
                and not job.count(S.PENDING, S.PIPELINED)
                and scheduled + len(releasing) >= job.min_available
            ):
                continue
            unready = job.min_available - job.ready_task_num()
            detail = (
                f"pod group is not ready, {status_histogram(job)}, {job.min_available} minAvailable"
            )
            fit = job.fit_error_summary()
            if fit:
                detail += f"; {fit}"
            job.conditions["Unschedulable"] = {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": f"{unready}/{job.total_tasks} tasks in gang unschedulable: {detail}",
                "transitionID": ssn.uid,
            }
