"""The PodGroup a vcjob runs in: ``<job>-<uid>``, gang size, per-task minimums, queue,
priority class and the minimum resources the scheduler's enqueue gate checks.

minResources follows Volcano: tasks ordered by their pods' priority (highest first);
when the job's minAvailable is below the tasks' summed minimums, the first
``minAvailable`` replicas in that order count; otherwise every task's minimum counts,
topped up to the job's minAvailable with further replicas in the same order.
"""

from __future__ import annotations

from fractions import Fraction

from lahar.api.quantity import QuantityError, format_quantity, parse_quantity
from lahar.volcano import constants as c
from lahar.volcano.jobs import spec as js
from lahar.volcano.jobs.spec import Obj

Resources = dict[str, Fraction]


def task_request(task: Obj) -> Resources:
    """Summed container requests of one replica (limits stand in for absent requests)."""
    total: Resources = {}
    for container in ((task.get("template") or {}).get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        source = resources.get("requests")
        if source is None:
            source = resources.get("limits") or {}
        for name, raw in source.items():
            try:
                total[name] = total.get(name, Fraction(0)) + parse_quantity(raw)
            except (QuantityError, TypeError, ValueError):
                continue
    return total


def _add(acc: Resources, req: Resources, times: int) -> None:
    for name, value in req.items():
        acc[name] = acc.get(name, Fraction(0)) + value * times


def min_resources(job: Obj, priorities: dict[str, int] | None = None) -> dict[str, str]:
    priorities = priorities or {}
    ordered = []
    for i, task in enumerate(js.tasks(job)):
        pc = ((task.get("template") or {}).get("spec") or {}).get("priorityClassName") or ""
        ordered.append((priorities.get(pc, 0), i, task))
    ordered.sort(key=lambda item: (-item[0], item[1]))
    job_min = js.job_min_available(job)
    acc: Resources = {}
    if job_min < js.total_task_min_available(job):
        left = job_min
        for _, _, task in ordered:
            take = min(left, js.replicas(task))
            _add(acc, task_request(task), take)
            left -= take
            if left <= 0:
                break
    else:
        counted = 0
        for _, _, task in ordered:
            _add(acc, task_request(task), js.task_min_available(task))
            counted += js.task_min_available(task)
        left = job_min - counted
        for _, _, task in ordered:
            if left <= 0:
                break
            extra = min(left, js.replicas(task) - js.task_min_available(task))
            if extra > 0:
                _add(acc, task_request(task), extra)
                left -= extra
    return {
        name: format_quantity(value, binary=name == "memory" or name.startswith("hugepages-"))
        for name, value in sorted(acc.items())
    }


def desired_podgroup_spec(job: Obj, priorities: dict[str, int] | None = None) -> Obj:
    s = job.get("spec") or {}
    out: Obj = {
        "minMember": js.job_min_available(job),
        "minTaskMember": {
            js.task_name(t, i): js.task_min_available(t) for i, t in enumerate(js.tasks(job))
        },
        "queue": js.queue(job),
        "minResources": min_resources(job, priorities),
    }
    if s.get("priorityClassName"):
        out["priorityClassName"] = s["priorityClassName"]
    if s.get("networkTopology"):
        out["networkTopology"] = s["networkTopology"]
    return out


def desired_podgroup(job: Obj, priorities: dict[str, int] | None = None) -> Obj:
    annotations = {
        k: v
        for k, v in ((job.get("metadata") or {}).get("annotations") or {}).items()
        if k.startswith(("volcano.sh/", "scheduling.volcano.sh/"))
    }
    meta: Obj = {
        "name": js.podgroup_name(job),
        "namespace": js.namespace(job),
        "labels": {c.JOB_NAME_KEY: js.name(job), c.JOB_NAMESPACE_KEY: js.namespace(job)},
        "ownerReferences": [js.owner_reference(job)],
    }
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": c.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": meta,
        "spec": desired_podgroup_spec(job, priorities),
    }


def podgroup_update(
    existing: Obj, job: Obj, priorities: dict[str, int] | None = None
) -> Obj | None:
    """The updated PodGroup when the job's gang shape changed (scaling), else None."""
    desired = desired_podgroup_spec(job, priorities)
    current = existing.get("spec") or {}
    keys = ("minMember", "minTaskMember", "minResources", "priorityClassName")
    if all(current.get(k) == desired.get(k) for k in keys):
        return None
    updated = {**existing, "spec": {**current, **{k: desired[k] for k in keys if k in desired}}}
    return updated
