"""The scheduler's data model: resource vectors, tasks, jobs, nodes, queues, snapshots.

See :mod:`lahar.scheduler.api.resources` for the dense resource layout and
:mod:`lahar.scheduler.api.node` for the NodeTable arrays the kernels read.
"""

from lahar.scheduler.api.cluster import ClusterInfo
from lahar.scheduler.api.fit import FitErrors, NodeFilter
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.queue import QueueInfo
from lahar.scheduler.api.resources import CPU, EPS, MEMORY, PODS, ResourceSpace, Vector
from lahar.scheduler.api.task import (
    ALLOCATED_SET,
    PREEMPTABLE_STATUS,
    TaskInfo,
    TaskStatus,
)

__all__ = [
    "ALLOCATED_SET",
    "CPU",
    "EPS",
    "MEMORY",
    "PODS",
    "PREEMPTABLE_STATUS",
    "ClusterInfo",
    "FitErrors",
    "JobInfo",
    "NodeFilter",
    "NodeTable",
    "QueueInfo",
    "ResourceSpace",
    "TaskInfo",
    "TaskStatus",
    "Vector",
]
