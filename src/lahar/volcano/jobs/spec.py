"""Read-only helpers over a vcjob's ``spec`` (tasks, replicas, minAvailable) and names.

Everything here tolerates a job that skipped defaulting (no task names, no minAvailable),
filling the same defaults Volcano's mutating webhook would.
"""

from __future__ import annotations

from typing import Any

from lahar.volcano import constants as c

Obj = dict[str, Any]


def tasks(job: Obj) -> list[Obj]:
    return list((job.get("spec") or {}).get("tasks") or [])


def task_name(task: Obj, index: int) -> str:
    return task.get("name") or f"{c.DEFAULT_TASK_PREFIX}{index}"


def replicas(task: Obj) -> int:
    return max(int(task.get("replicas") or 0), 0)


def task_min_available(task: Obj) -> int:
    value = task.get("minAvailable")
    return replicas(task) if value is None else int(value)


def total_replicas(job: Obj) -> int:
    return sum(replicas(t) for t in tasks(job))


def total_task_min_available(job: Obj) -> int:
    return sum(task_min_available(t) for t in tasks(job))


def job_min_available(job: Obj) -> int:
    value = (job.get("spec") or {}).get("minAvailable")
    return total_task_min_available(job) if not value else int(value)


def max_retry(job: Obj) -> int:
    return int((job.get("spec") or {}).get("maxRetry") or c.DEFAULT_MAX_RETRY)


def queue(job: Obj) -> str:
    return (job.get("spec") or {}).get("queue") or c.DEFAULT_QUEUE


def name(job: Obj) -> str:
    return (job.get("metadata") or {}).get("name", "")


def namespace(job: Obj) -> str:
    return (job.get("metadata") or {}).get("namespace", "")


def uid(job: Obj) -> str:
    return (job.get("metadata") or {}).get("uid", "")


def make_pod_name(job_name: str, task: str, index: int) -> str:
    return f"{job_name}-{task}-{index}"


def podgroup_name(job: Obj) -> str:
    """``<job>-<uid>`` as current Volcano names it (plain ``<job>`` without a UID)."""
    return f"{name(job)}-{uid(job)}" if uid(job) else name(job)


def owner_reference(job: Obj) -> Obj:
    return {
        "apiVersion": c.JOB_API_VERSION,
        "kind": "Job",
        "name": name(job),
        "uid": uid(job),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def env_key(task: str) -> str:
    """``my-task`` -> ``MY_TASK`` as used in ``VC_<TASK>_HOSTS``."""
    return task.replace("-", "_").upper()
