"""Builders shared by the Volcano tests: queues, jobs, pods and a lookup over them."""

from __future__ import annotations

import copy
from typing import Any

from lahar.volcano.lookup import MemoryLookup

Obj = dict[str, Any]


def queue(name: str, state: str = "Open", parent: str = "", **spec: Any) -> Obj:
    s: Obj = dict(spec)
    if parent:
        s["parent"] = parent
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": s,
        "status": {"state": state} if state else {},
    }


def container(name: str = "main", **resources: Any) -> Obj:
    out: Obj = {"name": name, "image": "busybox"}
    if resources:
        out["resources"] = resources
    return out


def task(name: str, replicas: int, min_available: int | None = None, **extra: Any) -> Obj:
    out: Obj = {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [container()], "restartPolicy": "Never"}},
    }
    if min_available is not None:
        out["minAvailable"] = min_available
    out.update(extra)
    return out


def job(name: str = "job", *tasks: Obj, namespace: str = "ns", **spec: Any) -> Obj:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": "u1"},
        "spec": {"tasks": [copy.deepcopy(t) for t in tasks] or [task("worker", 2)], **spec},
    }


def lookup(
    *queues: Obj, podgroups: list[Obj] | None = None, namespaces: list[Obj] | None = None
) -> MemoryLookup:
    qs = list(queues) or [queue("default")]
    return MemoryLookup(queues=qs, podgroups=podgroups or [], namespaces=namespaces or [])
