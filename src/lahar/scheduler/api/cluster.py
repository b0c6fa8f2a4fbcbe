"""ClusterInfo: the immutable input of one scheduling session.

Built by ``scheduler/snapshot.py`` from Kubernetes objects; the session mutates the
task statuses and node arrays it holds, so build a fresh one per session.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import ResourceSpace
from lahar.scheduler.api.task import TaskInfo


@dataclass(eq=False)
class ClusterInfo:
    space: ResourceSpace
    nodes: NodeTable
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    # pods on nodes that belong to no session job (other schedulers, no PodGroup)
    other_tasks: list[TaskInfo] = field(default_factory=list)
    # pending volcano pods the session will not schedule, with the reason
    skipped_pods: dict[str, str] = field(default_factory=dict)
    # PodGroups left out of the session (queue missing...), with the reason
    skipped_jobs: dict[str, str] = field(default_factory=dict)
    default_priority: int = 0
