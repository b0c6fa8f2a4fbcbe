"""Small hand-made clusters for the kernel tests: NodeTable and TaskInfo builders."""

from __future__ import annotations

from typing import Any

import numpy as np

from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.resources import ResourceSpace
from lahar.scheduler.api.task import TaskInfo, TaskStatus

GI = 1024**3


def node(
    name: str,
    cpu: str | int = 4,
    memory: str = "8Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    **scalars: Any,
) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": str(cpu), "memory": memory, "pods": str(pods)}
    alloc.update({k.replace("__", "/").replace("_", "."): str(v) for k, v in scalars.items()})
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": alloc},
    }


def pod(
    name: str,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    requests: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main"}
    if requests is not None:
        container["resources"] = {"requests": requests}
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "labels": labels or {},
        },
        "spec": {"containers": [container], **(spec or {})},
    }


def make_table(nodes: list[dict[str, Any]], extra: tuple[str, ...] = ()) -> NodeTable:
    names: set[str] = set(extra)
    for n in nodes:
        names.update(n["status"]["allocatable"])
    space = ResourceSpace(names)
    alloc = (
        np.stack([space.vector(n["status"]["allocatable"]) for n in nodes])
        if nodes
        else (np.zeros((0, space.size)))
    )
    return NodeTable(
        space=space,
        names=[n["metadata"]["name"] for n in nodes],
        allocatable=alloc,
        labels=[dict(n["metadata"].get("labels") or {}) for n in nodes],
        taints=[list(n["spec"].get("taints") or []) for n in nodes],
        unschedulable=np.array([bool(n["spec"].get("unschedulable")) for n in nodes], dtype=bool),
        ready=np.ones(len(nodes), dtype=bool),
        objects=nodes,
    )


def task_of(
    table: NodeTable, p: dict[str, Any], status: TaskStatus = TaskStatus.PENDING
) -> TaskInfo:
    """A TaskInfo for pod ``p`` (request = Σ container requests + pods: 1)."""
    req: dict[str, Any] = {}
    for c in p["spec"].get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            req[k] = v  # tests use one container
    vec = table.space.vector(req)
    vec[table.space.index["pods"]] = 1
    meta = p["metadata"]
    return TaskInfo(
        uid=meta["uid"],
        namespace=meta["namespace"],
        name=meta["name"],
        job=f"{meta['namespace']}/pg",
        resreq=vec,
        status=status,
        pod=p,
    )


def place(table: NodeTable, node_name: str, p: dict[str, Any]) -> TaskInfo:
    """Put a running pod on a node of the table (before the kernel state is built)."""
    t = task_of(table, p, TaskStatus.RUNNING)
    table.add_task(table.index[node_name], t)
    return t
