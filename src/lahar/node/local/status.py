"""The status a kubelet reports for a pod of the local node, from what the agent knows.

The agent keeps a small record per container (:class:`ContainerState`: waiting with a
reason, running since, or terminated with an exit code, its restart count and last
run); :func:`pod_status` turns those records into the merge patch of the pod's status:
phase, conditions (merged with the ones already there, keeping their transition
times), container and init-container statuses, addresses and start time. Pure: the
same records give the same body, whenever it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lahar.node.podstatus import merge_conditions, rfc3339

Obj = dict[str, Any]

PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"


@dataclass
class ContainerState:
    """One container as the agent sees it."""

    name: str
    image: str = ""
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    running_since: float | None = None
    exit_code: int | None = None
    reason: str = ""  # of the termination
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    restart_count: int = 0
    last: Obj | None = None  # lastState.terminated
    ready: bool = False
    started: bool = False
    container_id: str = ""
    backoff: float = 0.0  # the next crash-loop delay

    def run(self, since: float, container_id: str) -> None:
        if self.exit_code is not None:  # restarted without waiting: the ended run is lastState
            self.last = self.terminated()
        self.running_since, self.started_at, self.container_id = since, since, container_id
        self.exit_code, self.finished_at, self.reason, self.message = None, None, "", ""
        self.waiting_reason = self.waiting_message = ""
        self.ready = False
        self.started = True

    def terminate(
        self, exit_code: int, finished: float, reason: str = "", message: str = ""
    ) -> None:
        self.exit_code, self.finished_at = exit_code, finished
        self.reason = reason or ("Completed" if exit_code == 0 else "Error")
        self.message = message
        self.running_since = None
        self.ready = self.started = False

    def wait(self, reason: str, message: str = "") -> None:
        """Waiting to run again (CrashLoopBackOff ...): the ended run becomes lastState."""
        if self.exit_code is not None:
            self.last = self.terminated()
        self.exit_code = None
        self.running_since = None
        self.waiting_reason, self.waiting_message = reason, message
        self.ready = self.started = False

    @property
    def terminated_ok(self) -> bool:
        return self.exit_code == 0

    def terminated(self) -> Obj:
        body: Obj = {
            "exitCode": self.exit_code if self.exit_code is not None else 0,
            "reason": self.reason or "Error",
            "startedAt": rfc3339(self.started_at) if self.started_at else None,
            "finishedAt": rfc3339(self.finished_at),
            "containerID": self.container_id or None,
        }
        if self.message:
            body["message"] = self.message
        return {k: v for k, v in body.items() if v is not None}

    def to_status(self) -> Obj:
        if self.running_since is not None:
            state: Obj = {"running": {"startedAt": rfc3339(self.running_since)}}
        elif self.exit_code is not None:
            state = {"terminated": self.terminated()}
        else:
            waiting: Obj = {"reason": self.waiting_reason or "ContainerCreating"}
            if self.waiting_message:
                waiting["message"] = self.waiting_message
            state = {"waiting": waiting}
        out: Obj = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
            "state": state,
            "lastState": {"terminated": self.last} if self.last else {},
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass
class PodState:
    """Everything :func:`pod_status` needs."""

    uid: str
    host_ip: str
    pod_ip: str = ""
    start_time: float | None = None
    phase: str = PENDING
    reason: str = ""
    message: str = ""
    initialized: bool = False
    sandbox_ready: bool = False
    init: list[ContainerState] = field(default_factory=list)
    containers: list[ContainerState] = field(default_factory=list)


def pod_status(pod: Obj, state: PodState, now: float | None = None) -> Obj:
    """The merge patch (with the uid as precondition) of ``pod``'s status."""
    stamp = rfc3339(now)
    ready = state.phase == RUNNING and all(c.ready for c in state.containers)
    done = state.phase in (SUCCEEDED, FAILED)
    not_ready_reason = "PodCompleted" if done else "ContainersNotReady"
    conditions = merge_conditions(
        (pod.get("status") or {}).get("conditions"),
        {
            "PodReadyToStartContainers": ("True" if state.sandbox_ready else "False", ""),
            "Initialized": (
                ("True", "") if state.initialized or done else ("False", "ContainersNotInitialized")
            ),
            "ContainersReady": ("True", "") if ready else ("False", not_ready_reason),
            "Ready": ("True", "") if ready else ("False", not_ready_reason),
        },
        stamp,
    )
    status: Obj = {
        "phase": state.phase,
        "conditions": conditions,
        "hostIP": state.host_ip,
        "hostIPs": [{"ip": state.host_ip}],
        "containerStatuses": [c.to_status() for c in state.containers],
    }
    if state.pod_ip:
        status["podIP"] = state.pod_ip
        status["podIPs"] = [{"ip": state.pod_ip}]
    if state.start_time is not None:
        status["startTime"] = (pod.get("status") or {}).get("startTime") or rfc3339(
            state.start_time
        )
    if state.init:
        status["initContainerStatuses"] = [c.to_status() for c in state.init]
    status["reason"] = state.reason or None
    status["message"] = state.message or None
    return {"metadata": {"uid": state.uid}, "status": status}
