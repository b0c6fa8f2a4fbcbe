"""Volcano objects for the live scheduling tests, as plain dicts kubectl can apply.

Queues, Volcano Jobs (one task ``w`` whose pods run for ten minutes on a simulated
node), bare PodGroups with their pods, two PriorityClasses, and a scheduler
configuration with preempt and reclaim switched on (Volcano's default plugins).
"""

from __future__ import annotations

from typing import Any

PREEMPT_RECLAIM_CONF = """\
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
PRIORITY_CLASSES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
     "value": v}
    for n, v in (("low", 100), ("high", 10000))
]  # fmt: skip


def queue(name: str, weight: int = 1, reclaimable: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, "reclaimable": reclaimable},
    }


def vcjob(
    name: str,
    queue_name: str,
    replicas: int,
    min_available: int,
    cpu: str,
    priority: str | None = None,
) -> dict[str, Any]:
    annotations = {"lahar.dev/sim-duration": "600s", "volcano.sh/preemptable": "true"}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "example/main:1",
                "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}},
            }
        ],
    }
    spec: dict[str, Any] = {"schedulerName": "volcano", "queue": queue_name,
                            "minAvailable": min_available}  # fmt: skip
    if priority:
        spec["priorityClassName"] = priority
        pod_spec["priorityClassName"] = priority
    spec["tasks"] = [
        {
            "name": "w",
            "replicas": replicas,
            "template": {"metadata": {"annotations": annotations}, "spec": pod_spec},
        }
    ]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def podgroup(name: str, queue_name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "queue": queue_name},
    }


def gang_pod(group: str, name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": "volcano",
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "example/main:1",
                 "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}}}
            ],
        },
    }  # fmt: skip
