"""conformance: never preempt or reclaim cluster-critical pods or kube-system pods (§6.6)."""

from __future__ import annotations

from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import PERMIT
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.registry import register_plugin

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def evictable(task: TaskInfo) -> bool:
    return task.priority_class_name not in CRITICAL_CLASSES and task.namespace != "kube-system"


@register_plugin
class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        ssn.preemptable.add(self, self.victims)
        ssn.reclaimable.add(self, self.victims)

    @staticmethod
    def victims(preemptor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        return [t for t in candidates if evictable(t)], PERMIT
