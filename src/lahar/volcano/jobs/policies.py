"""Lifecycle policies: which action an event (or exit code) triggers.

Task-level policies are searched first, then job-level ones; a policy matches by event
(its ``event``/``events``, or ``*``) or by ``exitCode``; no match means ``SyncJob``.
An explicit action (a bus Command) wins over policies; ``OutOfSync`` always syncs.
:func:`pod_events` derives the pod-driven events from an old and a new pod, the way
Volcano's pod-update handler raises them.
"""

from __future__ import annotations

from dataclasses import dataclass

from lahar.volcano import constants as c
from lahar.volcano.jobs import spec as js
from lahar.volcano.jobs.spec import Obj
from lahar.volcano.jobs.status import pod_task


@dataclass(frozen=True)
class Request:
    """Why the job is being looked at: an event about a task/pod, or a command's action."""

    event: str = ""
    task: str = ""
    pod: str = ""
    exit_code: int | None = None
    action: str = ""


def _events(policy: Obj) -> list[str]:
    return [*(policy.get("events") or []), *([policy["event"]] if policy.get("event") else [])]


def _match(policies: list[Obj], req: Request) -> str | None:
    for policy in policies:
        events = _events(policy)
        if events and req.event and (req.event in events or c.ANY_EVENT in events):
            return policy.get("action") or c.SYNC_JOB
        code = policy.get("exitCode")
        if code is not None and req.exit_code is not None and int(code) == req.exit_code:
            return policy.get("action") or c.SYNC_JOB
    return None


def apply_policies(job: Obj, req: Request) -> str:
    if req.action:
        return req.action
    if req.event in (c.OUT_OF_SYNC, c.COMMAND_ISSUED, c.POD_RUNNING):
        return c.SYNC_JOB
    if req.task:
        for i, task in enumerate(js.tasks(job)):
            if js.task_name(task, i) == req.task:
                action = _match(task.get("policies") or [], req)
                if action:
                    return action
                break
    action = _match((job.get("spec") or {}).get("policies") or [], req)
    return action or c.SYNC_JOB


def _exit_code(pod: Obj) -> int | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated") or {}
        code = terminated.get("exitCode")
        if code:
            return int(code)
    return None


def pod_events(job: Obj, old: Obj | None, new: Obj | None, pods: list[Obj]) -> list[Request]:
    """Events for a pod changing from ``old`` to ``new`` (None: added / deleted).

    ``pods`` are the job's pods after the change (to decide TaskCompleted/TaskFailed).
    """
    pod = new or old or {}
    task = pod_task(pod)
    name = (pod.get("metadata") or {}).get("name", "")
    old_phase = ((old or {}).get("status") or {}).get("phase", "")
    out: list[Request] = []
    if new is None:
        # Deleted by someone else while it was running or pending: evicted.
        if old_phase in ("Running", "Pending") and not ((old or {}).get("metadata") or {}).get(
            "deletionTimestamp"
        ):
            out.append(Request(event=c.POD_EVICTED, task=task, pod=name))
        return out
    new_phase = (new.get("status") or {}).get("phase", "")
    if new_phase == old_phase:
        return out
    if new_phase == "Failed":
        out.append(Request(event=c.POD_FAILED, task=task, pod=name, exit_code=_exit_code(new)))
    if new_phase in ("Succeeded", "Failed"):
        replicas = 0
        for i, t in enumerate(js.tasks(job)):
            if js.task_name(t, i) == task:
                replicas = js.replicas(t)
        mine = [p for p in pods if pod_task(p) == task]
        succeeded = sum(1 for p in mine if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in mine if (p.get("status") or {}).get("phase") == "Failed")
        if replicas and succeeded == replicas:
            out.append(Request(event=c.TASK_COMPLETED, task=task, pod=name))
        elif new_phase == "Failed" and replicas and succeeded + failed == replicas:
            out.append(Request(event=c.TASK_FAILED, task=task, pod=name))
    return out
