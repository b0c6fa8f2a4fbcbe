"""The pure half of the Job controller: pods from a Job's template, indexes, conditions.

Nothing here does I/O, so the rules that decide what a Job's pods look like, which of
them to delete first, how long to wait after failures and how conditions are written
can be tested (and read) on their own, apart from the reconciler in
:mod:`lahar.controllers.job` that applies them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from lahar.controllers.common import condition, format_time, is_ready, phase

Obj = dict[str, Any]

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"

# Conditions (batch/v1 JobConditionType) and the reasons this controller writes.
COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"
FAILURE_TARGET, SUCCESS_CRITERIA_MET = "FailureTarget", "SuccessCriteriaMet"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
DEADLINE_EXCEEDED = "DeadlineExceeded"
COMPLETIONS_REACHED = "CompletionsReached"
MSG_BACKOFF = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_COMPLETIONS = "Reached expected number of succeeded pods"


def is_indexed(job: Obj) -> bool:
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def finished_condition(job: Obj) -> Obj | None:
    """The job's true ``Complete`` or ``Failed`` condition: it is over."""
    for kind in (COMPLETE, FAILED):
        cond = condition(job, kind)
        if cond is not None and cond.get("status") == "True":
            return cond
    return None


def finishing_condition(job: Obj) -> Obj | None:
    """The true ``FailureTarget`` or ``SuccessCriteriaMet``: the outcome is decided, the
    pods are being wound down, the final condition comes once they are gone."""
    for kind in (FAILURE_TARGET, SUCCESS_CRITERIA_MET):
        cond = condition(job, kind)
        if cond is not None and cond.get("status") == "True":
            return cond
    return None


def new_condition(kind: str, reason: str, message: str, now: float, status: str = "True") -> Obj:
    stamp = format_time(now)
    return {
        "type": kind,
        "status": status,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def set_condition(status: Obj, new: Obj) -> bool:
    """Put ``new`` in ``status.conditions``; an unchanged condition keeps its times.
    True when something changed."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    for i, cond in enumerate(conditions):
        if cond.get("type") != new["type"]:
            continue
        if (cond.get("status"), cond.get("reason"), cond.get("message")) == (
            new["status"],
            new["reason"],
            new["message"],
        ):
            return False
        if cond.get("status") == new["status"]:
            new = {**new, "lastTransitionTime": cond.get("lastTransitionTime")}
        conditions[i] = new
        return True
    conditions.append(new)
    return True


def pod_index(pod: Obj) -> int | None:
    """The completion index of an Indexed job's pod (annotation, else label)."""
    md = pod["metadata"]
    value = (md.get("annotations") or {}).get(COMPLETION_INDEX) or (md.get("labels") or {}).get(
        COMPLETION_INDEX
    )
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def format_indexes(indexes: Iterable[int]) -> str:
    """``0-2,5``: the compressed interval list batch/v1 uses for ``completedIndexes``."""
    out: list[str] = []
    ordered = sorted(set(indexes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_indexes(text: str | None, limit: int) -> set[int]:
    """The indexes in a ``completedIndexes`` string (those below ``limit``)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            continue
        out.update(range(max(first, 0), min(last, limit - 1) + 1))
    return out


def build_pod(job: Obj, index: int | None) -> Obj:
    """A pod for ``job`` from its template: ``generateName`` ``<job>-`` (``<job>-<i>-``
    when indexed), the job's labels, the tracking finalizer and a controller reference."""
    md, spec = job["metadata"], job.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    annotations = dict(tmeta.get("annotations") or {})
    name, uid = md["name"], md["uid"]
    for key, value in (
        (CONTROLLER_UID, uid),
        (LEGACY_CONTROLLER_UID, uid),
        (JOB_NAME, name),
        (LEGACY_JOB_NAME, name),
    ):
        labels.setdefault(key, value)
    pod_spec: Obj = template.get("spec") or {}
    generate = f"{name}-"
    if index is not None:
        labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(index)
        generate = f"{name}-{index}-"
        if not pod_spec.get("hostname"):
            pod_spec["hostname"] = f"{name}-{index}"
        _add_index_env(pod_spec)
    pod_md: Obj = {
        "generateName": generate,
        "namespace": md["namespace"],
        "labels": labels,
        "finalizers": [*(tmeta.get("finalizers") or ()), TRACKING_FINALIZER],
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        pod_md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_md, "spec": pod_spec}


def _add_index_env(pod_spec: Obj) -> None:
    """Give every container ``JOB_COMPLETION_INDEX`` from the index annotation, through
    the downward API, as the upstream controller does."""
    env_var = {
        "name": COMPLETION_INDEX_ENV,
        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}},
    }
    for group in ("initContainers", "containers"):
        for container in pod_spec.get(group) or ():
            env = container.setdefault("env", [])
            if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                env.append(copy.deepcopy(env_var))


def deletion_order(pod: Obj) -> tuple[int, int, int, str]:
    """Sort key: the pods to delete first when there are too many (unscheduled, then
    pending, then not ready, then the youngest), as the ReplicaSet/Job rule goes."""
    md = pod["metadata"]
    scheduled = 1 if (pod.get("spec") or {}).get("nodeName") else 0
    running = 1 if phase(pod) == "Running" else 0
    ready = 1 if is_ready(pod) else 0
    created = md.get("creationTimestamp") or ""
    # younger first: invert the timestamp's order by negating its characters' codes
    return (scheduled, running, ready, "".join(chr(0x10FFFF - ord(c)) for c in created))


def backoff_delay(failures: int, base: float, cap: float) -> float:
    """How long to wait before replacing a pod after ``failures`` failures in a row."""
    if failures <= 0 or base <= 0:
        return 0.0
    return float(min(base * 2 ** (failures - 1), cap))
