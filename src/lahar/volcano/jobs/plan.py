"""One reconcile step of the vcjob controller, as a pure function.

:func:`plan` reads a Job, its pods and its PodGroup (plus the events that woke it up)
and returns a :class:`Plan`: what to create, update and delete, and the status to write.
The reconciler executes it and calls ``plan`` again on the next change; every decision is
re-derived from the objects, so a restarted controller picks up where it left off.

As in Volcano: pods are created only once the PodGroup has left ``Pending`` (the
scheduler's enqueue gates pod creation); killing a whole job also deletes its PodGroup
(so a restarted gang is enqueued afresh) and the svc plugin's objects; a task with
``dependsOn`` gets pods only once the tasks it depends on have enough running pods.

lahar decision: Volcano bumps ``status.version`` on every kill call, even when nothing
was left to kill; lahar bumps it only when a kill deletes something, so a finished job's
status settles instead of changing on every reconcile.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lahar.volcano import constants as c
from lahar.volcano.jobs import plugins as jp
from lahar.volcano.jobs import podgroup as jpg
from lahar.volcano.jobs import spec as js
from lahar.volcano.jobs import state as st
from lahar.volcano.jobs.pods import build_pod, desired_pod_names
from lahar.volcano.jobs.policies import Request, apply_policies
from lahar.volcano.jobs.spec import Obj
from lahar.volcano.jobs.status import Counts, pod_state, pod_task

__all__ = ["Plan", "Request", "plan"]


@dataclass
class Plan:
    action: str = c.SYNC_JOB
    create_podgroup: Obj | None = None
    update_podgroup: Obj | None = None
    delete_podgroup: bool = False
    apply_objects: list[Obj] = field(default_factory=list)  # create, or update if changed
    delete_objects: list[Obj] = field(default_factory=list)  # apiVersion/kind/metadata only
    create_pods: list[Obj] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    status: Obj = field(default_factory=dict)
    delete_job: bool = False  # ttlSecondsAfterFinished has passed
    requeue_after: float | None = None  # seconds until the TTL passes

    @property
    def phase(self) -> str:
        return self.status.get("state", {}).get("phase", "")


def _timestamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None


def choose_action(
    job: Obj, requests: Iterable[Request], podgroup: Obj | None
) -> tuple[str, Request | None]:
    """The first non-sync action the requests trigger (and the request that did)."""
    reqs = list(requests)
    if podgroup is not None and (podgroup.get("status") or {}).get("phase") == "Unknown":
        reqs.append(Request(event=c.JOB_UNKNOWN))
    for req in reqs:
        action = apply_policies(job, req)
        if action != c.SYNC_JOB:
            return action, req
    return c.SYNC_JOB, None


def _pod_index(pod: Obj) -> int:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    try:
        return int(labels.get(c.TASK_INDEX_KEY, "-1"))
    except ValueError:
        return -1


def _target_pods(job: Obj, pods: list[Obj], action: str, req: Request | None) -> list[Obj]:
    if req is None:
        return []
    if action == c.RESTART_TASK:
        return [p for p in pods if pod_task(p) == req.task]
    named = [p for p in pods if (p.get("metadata") or {}).get("name") == req.pod]
    if action == c.RESTART_POD or not named:
        return named
    # RestartPartition: the pods of the same task whose index falls in the same partition.
    task_name = pod_task(named[0])
    size = 0
    for i, task in enumerate(js.tasks(job)):
        if js.task_name(task, i) == task_name:
            size = int((task.get("partitionPolicy") or {}).get("partitionSize") or 0)
    if size <= 0:
        return named
    partition = _pod_index(named[0]) // size
    return [p for p in pods if pod_task(p) == task_name and _pod_index(p) // size == partition]


def _dependencies_ready(job: Obj, task: Obj, pods: list[Obj]) -> bool:
    depends = task.get("dependsOn") or {}
    names = depends.get("name") or []
    if not names:
        return True
    min_by_task = {
        js.task_name(t, i): js.task_min_available(t) for i, t in enumerate(js.tasks(job))
    }

    def ready(name: str) -> bool:
        up = sum(
            1 for p in pods if pod_task(p) == name and pod_state(p) in ("Running", "Succeeded")
        )
        return up >= max(min_by_task.get(name, 1), 1)

    if depends.get("iteration") == "any":
        return any(ready(n) for n in names)
    return all(ready(n) for n in names)


def _ttl(job: Obj, phase: str, state: Obj, now: datetime) -> tuple[bool, float | None]:
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or phase not in c.FINISHED_PHASES:
        return False, None
    finished = _parse_time(state.get("lastTransitionTime", "")) or now
    left = (finished + timedelta(seconds=int(ttl)) - now).total_seconds()
    return (True, None) if left <= 0 else (False, left)


def plan(
    job: Obj,
    pods: list[Obj],
    podgroup: Obj | None,
    now: datetime,
    requests: Iterable[Request] = (),
    priorities: dict[str, int] | None = None,
) -> Plan:
    """Compute one reconcile step. ``priorities`` maps PriorityClass names to values."""
    old_status = job.get("status") or {}
    phase = (old_status.get("state") or {}).get("phase") or c.PENDING
    by_name = {(p.get("metadata") or {}).get("name", ""): p for p in pods}
    live = any(pod_state(p) != "Terminating" for p in pods)
    action, req = choose_action(job, requests, podgroup)
    decision = st.decide(phase, action, live)
    out = Plan(action=action)
    old_retry = int(old_status.get("retryCount") or 0)
    retry_count = old_retry + decision.retry_increment
    controlled = dict(old_status.get("controlledResources") or {})

    deleting: set[str] = set()
    if decision.full_kill:
        retained: tuple[str, ...] = ("Succeeded", "Failed")
        if decision.kill == st.KILL_NONE and old_retry < js.max_retry(job) - 1:
            retained = ()
        for name, pod in by_name.items():
            state = pod_state(pod)
            if state != "Terminating" and state not in retained:
                deleting.add(name)
        out.delete_podgroup = podgroup is not None
        if controlled.pop("plugin-svc", None):
            out.delete_objects = [
                {"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": dict(o["metadata"])}
                for o in jp.svc_objects(job)
            ]
    else:
        if decision.kill == st.KILL_TARGET:
            for pod in _target_pods(job, pods, action, req):
                if pod_state(pod) != "Terminating":
                    deleting.add((pod.get("metadata") or {}).get("name", ""))
        if podgroup is None:
            out.create_podgroup = jpg.desired_podgroup(job, priorities)
        else:
            out.update_podgroup = jpg.podgroup_update(podgroup, job, priorities)
        out.apply_objects = jp.plugin_objects(job)
        if out.apply_objects:
            controlled["plugin-svc"] = "svc"
        wanted = desired_pod_names(job)
        for name, pod in by_name.items():
            if name not in wanted and pod_state(pod) != "Terminating":
                deleting.add(name)  # scaled down, or a task that no longer exists
        pg_phase = ((podgroup or {}).get("status") or {}).get("phase") or ""
        exhausted = phase == c.RESTARTING and retry_count >= js.max_retry(job)
        if podgroup is not None and pg_phase not in ("", "Pending") and not exhausted:
            job_for_pods = copy.deepcopy(job)
            job_for_pods.setdefault("status", {})["retryCount"] = retry_count
            tasks = js.tasks(job)
            for name, (t, index) in sorted(wanted.items(), key=lambda kv: kv[1]):
                if name not in by_name and _dependencies_ready(job, tasks[t], pods):
                    out.create_pods.append(build_pod(job_for_pods, t, index))
    out.delete_pods = sorted(deleting)

    killed = bool(deleting) or out.delete_podgroup or bool(out.delete_objects)
    version = int(old_status.get("version") or 0) + (1 if decision.kill and killed else 0)
    for pod in out.create_pods:
        pod["metadata"]["annotations"][c.JOB_VERSION_KEY] = str(version)

    counts = Counts()
    for name, pod in by_name.items():
        counts.add(pod_task(pod), "Terminating" if name in deleting else pod_state(pod))
    for pod in out.create_pods:
        counts.add(pod_task(pod), "Pending")

    status_min = int(old_status.get("minAvailable") or js.job_min_available(job))
    if decision.phase != phase:
        new_phase = decision.phase  # an action moved the job: its counters are read next time
    else:
        new_phase = st.next_phase(job, phase, counts, retry_count, status_min)

    state = dict(old_status.get("state") or {})
    conditions = list(old_status.get("conditions") or [])
    if new_phase != (old_status.get("state") or {}).get("phase"):
        state = {"phase": new_phase, "lastTransitionTime": _timestamp(now)}
        if action != c.SYNC_JOB:
            state["reason"] = action
        conditions.append({"status": new_phase, "lastTransitionTime": _timestamp(now)})
    out.status = {
        "state": state,
        "minAvailable": js.job_min_available(job),
        "taskStatusCount": counts.task_status_count(),
        "pending": counts.pending,
        "running": counts.running,
        "succeeded": counts.succeeded,
        "failed": counts.failed,
        "terminating": counts.terminating,
        "unknown": counts.unknown,
        "version": version,
        "retryCount": retry_count,
        "conditions": conditions,
    }
    if controlled:
        out.status["controlledResources"] = controlled
    out.delete_job, out.requeue_after = _ttl(job, new_phase, state, now)
    return out
