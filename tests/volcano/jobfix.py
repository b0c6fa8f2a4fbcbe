"""Fixtures for the vcjob controller tests: a defaulted job and pods in given phases."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from lahar.volcano.admission import mutate_job
from lahar.volcano.jobs import Plan, Request, plan
from lahar.volcano.jobs.pods import build_pod, desired_pod_names
from tests.volcano.helpers import job, task

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
Obj = dict[str, Any]


def vcjob(*tasks: Obj, **spec: Any) -> Obj:
    return mutate_job(job("j", *(tasks or (task("ps", 1), task("worker", 2))), **spec))


def with_phase(j: Obj, phase: str, **status: Any) -> Obj:
    out = copy.deepcopy(j)
    out["status"] = {
        "state": {"phase": phase},
        "minAvailable": out["spec"]["minAvailable"],
        **status,
    }
    return out


def podgroup(phase: str = "Inqueue") -> Obj:
    return {"metadata": {"name": "j-u1", "namespace": "ns"}, "spec": {}, "status": {"phase": phase}}


def pods(j: Obj, *phases: str, exit_codes: dict[int, int] | None = None) -> list[Obj]:
    """The job's pods in creation order, given phases (``"Terminating"`` marks deletion)."""
    out = []
    for i, (_, (t, index)) in enumerate(sorted(desired_pod_names(j).items(), key=lambda kv: kv[1])):
        if i >= len(phases):
            break
        pod = build_pod(j, t, index)
        phase = phases[i]
        if phase == "Terminating":
            pod["metadata"]["deletionTimestamp"] = "2026-11-29T11:59:00Z"
            phase = "Running"
        pod["status"] = {"phase": phase}
        code = (exit_codes or {}).get(i)
        if code is not None:
            pod["status"]["containerStatuses"] = [
                {"name": "main", "state": {"terminated": {"exitCode": code}}}
            ]
        out.append(pod)
    return out


INQUEUE: Obj = {"inqueue": True}  # step()'s default: an Inqueue PodGroup


def step(j: Obj, current: list[Obj], pg: Obj | None = INQUEUE, *requests: Request) -> Plan:
    """One plan() call; ``pg`` None means the PodGroup does not exist."""
    return plan(j, current, podgroup() if pg is INQUEUE else pg, NOW, requests)
