"""priority: order tasks and jobs by priority; lower-priority work may be preempted (§6.5)."""

from __future__ import annotations

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import PERMIT
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.registry import register_plugin


def _higher_first(left: int, right: int) -> int:
    return (left < right) - (left > right)


def _negated_priority(task: TaskInfo) -> int:
    return -task.priority


@register_plugin
class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.task_order.add(self, self.task_order)
        ssn.task_order.set_key(self.task_order, _negated_priority)
        ssn.job_order.add(self, lambda a, b: _higher_first(a.priority, b.priority))
        ssn.preemptable.add(self, self.preemptable)
        ssn.job_starving.add(self, self.starving)

    @staticmethod
    def task_order(left: TaskInfo, right: TaskInfo) -> int:
        return _higher_first(left.priority, right.priority)

    def preemptable(
        self, preemptor: TaskInfo, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        jobs = self.ssn.jobs
        preemptor_job = jobs[preemptor.job]
        victims: list[TaskInfo] = []
        for task in candidates:
            if task.job != preemptor.job:
                job = jobs.get(task.job)
                if job is not None and job.priority < preemptor_job.priority:
                    victims.append(task)
            elif task.priority < preemptor.priority:
                victims.append(task)
        return victims, PERMIT

    @staticmethod
    def starving(job: JobInfo) -> bool:
        return job.ready_task_num() + job.waiting_task_num() < job.total_tasks
