"""A RayCluster's status, computed from its pods and head Service (pure).

:func:`compute_status` is KubeRay's ``calculateStatus`` (kuberay-semantics.md §1.2,
§3.6): replica counts, desired resources, head addresses, endpoints, the deprecated
``state`` (``ready`` is sticky, as in KubeRay: read the conditions and counts for
health) and the conditions ``HeadPodReady``, ``RayClusterProvisioned``,
``ReplicaFailure``, ``RayClusterSuspending`` and ``RayClusterSuspended``. A
condition's ``lastTransitionTime`` moves only when its status flips, so a
recomputation of an unchanged world yields an equal status and
:func:`status_changed` lets the reconciler skip the write. lahar writes whenever
any field but ``lastUpdateTime`` changes (KubeRay drops changes to a few fields,
quirk 12; see docs/kuberay-compat.md).
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.kuberay import constants as c
from lahar.kuberay import naming
from lahar.kuberay.operator.kinds import rfc3339
from lahar.kuberay.resources import (
    ResourceSum,
    clamped_replicas,
    max_replicas,
    min_replicas,
    num_of_hosts,
    pod_template_resources,
    raw_replicas,
)

Obj = dict[str, Any]

HEAD_POD_READY = "HeadPodReady"
PROVISIONED = "RayClusterProvisioned"
REPLICA_FAILURE = "ReplicaFailure"
SUSPENDING = "RayClusterSuspending"
SUSPENDED = "RayClusterSuspended"


class PassError(Exception):
    """A reconcile error; ``reason`` (e.g. ``FailedCreateWorkerPod``) sets ReplicaFailure."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


def condition(status: Obj, kind: str) -> Obj | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


def is_true(status: Obj, kind: str) -> bool:
    cond = condition(status, kind)
    return cond is not None and cond.get("status") == "True"


def set_condition(
    status: Obj, kind: str, value: str, reason: str, message: str, now: float
) -> None:
    """Set a condition; its transition time moves only when ``value`` changes."""
    conds = status.setdefault("conditions", [])
    new = {"type": kind, "status": value, "reason": reason, "message": message}
    for i, cond in enumerate(conds):
        if cond.get("type") == kind:
            same = cond.get("status") == value
            new["lastTransitionTime"] = cond.get("lastTransitionTime") if same else rfc3339(now)
            conds[i] = new
            return
    new["lastTransitionTime"] = rfc3339(now)
    conds.append(new)


def remove_condition(status: Obj, kind: str) -> None:
    status["conditions"] = [x for x in status.get("conditions") or () if x.get("type") != kind]


def pod_ready_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond  # type: ignore[no-any-return]
    return None


def running_and_ready(pod: Obj) -> bool:
    """Running with no Ready condition that is not True (no condition counts as ready)."""
    if (pod.get("status") or {}).get("phase") != "Running":
        return False
    cond = pod_ready_condition(pod)
    return cond is None or cond.get("status") == "True"


def _node_type(pod: Obj) -> str:
    return (pod["metadata"].get("labels") or {}).get(c.NODE_TYPE_LABEL, "")


def desired_resources(spec: Obj) -> dict[str, str]:
    """desiredCPU/Memory/GPU/TPU: the head plus groups x raw replicas x hosts (quirk 2)."""
    total = ResourceSum()
    total.add_sum(pod_template_resources(spec["headGroupSpec"].get("template") or {}))
    for group in spec.get("workerGroupSpecs") or ():
        if group.get("suspend"):
            continue
        factor = raw_replicas(group) * num_of_hosts(group)
        total.add_sum(pod_template_resources(group.get("template") or {}), factor)
    listed = total.to_list()
    gpu = ResourceSum()
    for name, qty in listed.items():
        if name.endswith("gpu"):
            gpu.add("gpu", qty)
    return {
        "desiredCPU": listed.get("cpu", "0"),
        "desiredMemory": listed.get("memory", "0"),
        "desiredGPU": gpu.to_list().get("gpu", "0"),
        "desiredTPU": listed.get("google.com/tpu", "0"),
    }


def _counts(spec: Obj) -> dict[str, int]:
    desired = lo = hi = 0
    for group in spec.get("workerGroupSpecs") or ():
        if group.get("suspend"):
            continue
        hosts = num_of_hosts(group)
        desired += clamped_replicas(group) * hosts
        lo += min_replicas(group) * hosts
        hi += max_replicas(group) * hosts
    return {
        "desiredWorkerReplicas": desired,
        "minWorkerReplicas": lo,
        "maxWorkerReplicas": min(hi, c.INT32_MAX),
    }


def _endpoints(old: dict[str, str], svc: Obj) -> dict[str, str]:
    out = dict(old)
    for port in (svc.get("spec") or {}).get("ports") or ():
        if not port.get("name"):
            continue
        value = port.get("nodePort") or port.get("targetPort") or port.get("port")
        out[port["name"]] = str(value)
    return out


def _head_pod_ready(status: Obj, head: Obj | None, now: float) -> None:
    if head is None:
        set_condition(status, HEAD_POD_READY, "False", "HeadPodNotFound", "", now)
        return
    cond = pod_ready_condition(head)
    if cond is None:
        set_condition(status, HEAD_POD_READY, "False", "Unknown", "", now)
        return
    value = cond.get("status", "Unknown")
    reason = cond.get("reason") or ("HeadPodRunningAndReady" if value == "True" else "")
    if reason == "ContainersNotReady":
        for cs in ((head.get("status") or {}).get("containerStatuses") or [])[:1]:
            state = cs.get("state") or {}
            reason = (
                (state.get("waiting") or state.get("terminated") or {}).get("reason")
            ) or reason
            break
    set_condition(status, HEAD_POD_READY, value, reason, cond.get("message") or "", now)


def compute_status(
    cluster: Obj, pods: list[Obj], head_service: Obj | None, *, now: float,
    error: BaseException | None = None,
) -> Obj:  # fmt: skip
    """The status the cluster should have now (a new dict; ``cluster`` is not changed)."""
    spec = cluster["spec"]
    old = cluster.get("status") or {}
    status = copy.deepcopy(old)
    workers = [p for p in pods if _node_type(p) == "worker"]
    heads = [p for p in pods if _node_type(p) == "head"]
    head = heads[0] if heads else None
    status["readyWorkerReplicas"] = sum(
        1 for p in workers if running_and_ready(p) and pod_ready_condition(p) is not None
    )
    status["availableWorkerReplicas"] = sum(
        1 for p in workers if (p.get("status") or {}).get("phase") == "Running"
    )
    status.update(_counts(spec))
    status.update(desired_resources(spec))
    head_info: Obj = {}
    if head is not None:
        head_info["podName"] = head["metadata"]["name"]
        if (head.get("status") or {}).get("podIP"):
            head_info["podIP"] = head["status"]["podIP"]
    if head_service is not None:
        head_info["serviceName"] = head_service["metadata"]["name"]
        ip = (head_service.get("spec") or {}).get("clusterIP")
        if ip == "None":
            ip = head_info.get("podIP")
        if ip:
            head_info["serviceIP"] = ip
        status["endpoints"] = _endpoints(old.get("endpoints") or {}, head_service)
    status["head"] = head_info
    # conditions
    _head_pod_ready(status, head, now)
    if error is None:
        remove_condition(status, REPLICA_FAILURE)
    elif isinstance(error, PassError) and error.reason:
        set_condition(status, REPLICA_FAILURE, "True", error.reason, str(error), now)
    suspended = is_true(status, SUSPENDED)
    if spec.get("suspend") and not suspended and not is_true(status, SUSPENDING):
        set_condition(status, SUSPENDING, "True", SUSPENDING, "", now)
    elif is_true(status, SUSPENDING) and not pods:
        set_condition(status, SUSPENDING, "False", SUSPENDING, "", now)
        set_condition(status, SUSPENDED, "True", SUSPENDED, "", now)
        set_condition(status, PROVISIONED, "False", "RayClusterPodsProvisioning", "", now)
        suspended = True
    elif suspended and not spec.get("suspend"):
        set_condition(status, SUSPENDED, "False", SUSPENDED, "", now)
        suspended = False
    if not is_true(status, PROVISIONED) and not suspended:
        if pods and all(running_and_ready(p) for p in pods):
            set_condition(status, PROVISIONED, "True", "AllPodRunningAndReadyFirstTime", "", now)
        else:
            set_condition(status, PROVISIONED, "False", "RayClusterPodsProvisioning", "", now)
    # state (deprecated, sticky)
    state = status.get("state")
    if (
        error is None
        and pods
        and len(pods) == status["desiredWorkerReplicas"] + 1
        and all(running_and_ready(p) for p in pods)
        and not spec.get("suspend")
    ):
        state = "ready"
        status.pop("reason", None)
    elif spec.get("suspend") and not pods and suspended:
        state = "suspended"
    if state and state != old.get("state"):
        status["state"] = state
        times = dict(status.get("stateTransitionTimes") or {})
        times[state] = rfc3339(now)
        status["stateTransitionTimes"] = times
    status["observedGeneration"] = cluster["metadata"].get("generation", 0)
    return status


def status_changed(old: Obj, new: Obj) -> bool:
    """Anything but ``lastUpdateTime`` differs."""
    a = {k: v for k, v in (old or {}).items() if k != "lastUpdateTime"}
    b = {k: v for k, v in (new or {}).items() if k != "lastUpdateTime"}
    return a != b


def head_service_name(cluster: Obj) -> str:
    return naming.head_service_name(cluster["metadata"]["name"], cluster["spec"])
