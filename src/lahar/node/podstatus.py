"""The pod status a kubelet reports, built as merge-patch bodies.

Three moments of a pod's life are reported, each in one write: its containers are
running (phase Running, every condition True, init containers completed), they
stopped (terminated with an exit code: the pod's final phase, or, while it is being
deleted, just the containers), and one was restarted (``restartCount`` up, the last
run in ``lastState``). A merge patch replaces lists whole, so the conditions are
merged by type with the ones already on the pod (``PodScheduled`` comes from the
binding, others from other controllers) and keep their ``lastTransitionTime`` when
their status does not change. The pod's uid rides in the patch: a real API server
refuses the write (409) if the pod was replaced by another of the same name.
"""

from __future__ import annotations

import hashlib
import time
from functools import lru_cache
from typing import Any

Obj = dict[str, Any]

RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINAL = (SUCCEEDED, FAILED)


def rfc3339(when: float | None = None) -> str:
    """Seconds-precision RFC 3339 in UTC, as ``metav1.Time`` is written."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if when is None else when))


def parse_rfc3339(value: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 UTC time (None when absent or unreadable)."""
    if not value:
        return None
    import calendar

    try:
        base = value[:19]
        return float(calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


@lru_cache(maxsize=4096)
def image_id(image: str) -> str:
    """A stable, made-up image digest (real ones name the pulled image's content)."""
    name = image.split("@", 1)[0]
    return f"{name}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def container_id(runtime: str, uid: str, name: str, restarts: int) -> str:
    return f"{runtime}://{uid.replace('-', '')[:24]}-{name}-{restarts}"


def merge_conditions(
    existing: list[Obj] | None, updates: dict[str, tuple[str, str]], now: str
) -> list[Obj]:
    """``existing`` with the conditions in ``updates`` (type -> (status, reason)) set.

    A condition whose status changes gets ``lastTransitionTime`` now; one whose
    status stays keeps its time. Conditions not named are kept as they are.
    """
    out: list[Obj] = []
    seen: set[str] = set()
    for cond in existing or ():
        ctype = cond.get("type", "")
        if ctype in updates:
            seen.add(ctype)
            status, reason = updates[ctype]
            new = {"type": ctype, "status": status}
            if reason:
                new["reason"] = reason
            new["lastTransitionTime"] = (
                cond.get("lastTransitionTime") or now if cond.get("status") == status else now
            )
            out.append(new)
        else:
            out.append(cond)
    for ctype, (status, reason) in updates.items():
        if ctype not in seen:
            new = {"type": ctype, "status": status, "lastTransitionTime": now}
            if reason:
                new["reason"] = reason
            out.append(new)
    return out


class PodRun:
    """What the agent knows of one run of a pod: where and since when it runs."""

    __slots__ = ("host_ip", "pod_ip", "restarts", "runtime", "started", "uid")

    def __init__(
        self, uid: str, host_ip: str, pod_ip: str, *, runtime: str = "lahar", started: float = 0.0
    ) -> None:
        self.uid = uid
        self.host_ip = host_ip
        self.pod_ip = pod_ip
        self.runtime = runtime
        self.started = started  # epoch seconds the containers (last) started
        self.restarts = 0


def _is_sidecar(c: Obj) -> bool:
    return c.get("restartPolicy") == "Always"


def _init_statuses(pod: Obj, run: PodRun, started: str) -> list[Obj]:
    out = []
    for c in (pod.get("spec") or {}).get("initContainers") or ():
        name, image = c.get("name", ""), c.get("image", "")
        cid = container_id(run.runtime, run.uid, name, 0)
        st: Obj = {
            "name": name,
            "image": image,
            "imageID": image_id(image),
            "containerID": cid,
            "restartCount": 0,
        }
        if _is_sidecar(c):  # a sidecar keeps running beside the main containers
            st.update(ready=True, started=True, state={"running": {"startedAt": started}})
        else:  # an init container succeeds at once
            st.update(
                ready=True,
                started=False,
                state={
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": started,
                        "finishedAt": started,
                        "containerID": cid,
                    }
                },
            )
        out.append(st)
    return out


def _containers(pod: Obj) -> list[Obj]:
    return list((pod.get("spec") or {}).get("containers") or ())


def _base(pod: Obj, run: PodRun, phase: str, conditions: list[Obj]) -> Obj:
    status = pod.get("status") or {}
    return {
        "metadata": {"uid": run.uid},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "hostIP": run.host_ip,
            "hostIPs": [{"ip": run.host_ip}],
            "podIP": run.pod_ip,
            "podIPs": [{"ip": run.pod_ip}],
            "startTime": status.get("startTime") or rfc3339(run.started),
        },
    }


def running(pod: Obj, run: PodRun, *, last: Obj | None = None) -> Obj:
    """Every container running and ready (after a restart, ``last`` is the previous run's
    terminated state)."""
    now = rfc3339()
    started = rfc3339(run.started)
    conds = merge_conditions(
        (pod.get("status") or {}).get("conditions"),
        {
            "PodReadyToStartContainers": ("True", ""),
            "Initialized": ("True", ""),
            "ContainersReady": ("True", ""),
            "Ready": ("True", ""),
            "PodScheduled": ("True", ""),
        },
        now,
    )
    body = _base(pod, run, RUNNING, conds)
    statuses = []
    for c in _containers(pod):
        name, image = c.get("name", ""), c.get("image", "")
        status: Obj = {
            "name": name,
            "image": image,
            "imageID": image_id(image),
            "containerID": container_id(run.runtime, run.uid, name, run.restarts),
            "ready": True,
            "started": True,
            "restartCount": run.restarts,
            "state": {"running": {"startedAt": started}},
        }
        if last:
            previous = container_id(run.runtime, run.uid, name, run.restarts - 1)
            status["lastState"] = {"terminated": dict(last, containerID=previous)}
        statuses.append(status)
    body["status"]["containerStatuses"] = statuses
    if (pod.get("spec") or {}).get("initContainers"):
        body["status"]["initContainerStatuses"] = _init_statuses(pod, run, started)
    return body


def terminated(pod: Obj, run: PodRun, exit_code: int, *, phase: str | None = None) -> Obj:
    """Every container terminated with ``exit_code``. ``phase`` is the pod's final
    phase; None keeps the phase it has (a pod being deleted)."""
    now = rfc3339()
    reason = "Completed" if exit_code == 0 else "Error"
    cond_reason = "PodCompleted" if phase in TERMINAL or exit_code == 0 else "ContainersNotReady"
    conds = merge_conditions(
        (pod.get("status") or {}).get("conditions"),
        {"ContainersReady": ("False", cond_reason), "Ready": ("False", cond_reason)},
        now,
    )
    current = (pod.get("status") or {}).get("phase") or RUNNING
    body = _base(pod, run, phase or current, conds)
    statuses = []
    for c in _containers(pod):
        name, image = c.get("name", ""), c.get("image", "")
        cid = container_id(run.runtime, run.uid, name, run.restarts)
        statuses.append(
            {
                "name": name,
                "image": image,
                "imageID": image_id(image),
                "containerID": cid,
                "ready": False,
                "started": False,
                "restartCount": run.restarts,
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": reason,
                        "startedAt": rfc3339(run.started),
                        "finishedAt": now,
                        "containerID": cid,
                    }
                },
            }
        )
    body["status"]["containerStatuses"] = statuses
    return body


def last_run(run: PodRun, exit_code: int) -> Obj:
    """The ``lastState.terminated`` of a run that just ended (for a restart)."""
    return {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": rfc3339(run.started),
        "finishedAt": rfc3339(),
    }


def restart_count(pod: Obj) -> int:
    """The highest restart count the pod reports (0 before any report)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def running_since(pod: Obj) -> float | None:
    """When the pod's containers started, if every one of them reports running."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    if not statuses:
        return None
    starts = []
    for s in statuses:
        r = (s.get("state") or {}).get("running")
        if r is None:
            return None
        starts.append(parse_rfc3339(r.get("startedAt")) or time.time())
    return max(starts)
