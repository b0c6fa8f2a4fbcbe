"""Builds with a long-lived memo (lahar.scheduler.memo / facts) equal builds without one.

Random sequences of object sets, as the live scheduler's cache hands them over: pods
added, removed and changed (resourceVersion bumped), overlay copies (same uid and
resourceVersion, another ``spec.nodeName`` or a ``deletionTimestamp``), PriorityClasses
and queues coming and going, resource names appearing and disappearing.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.scheduler.api.cluster import ClusterInfo
from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.resources import ResourceSpace
from lahar.scheduler.api.task import TaskInfo, TaskStatus, new_task
from lahar.scheduler.memo import ParseMemo
from lahar.scheduler.snapshot import SnapshotError, build_cluster
from tests.scheduler.builders import node, pod, podgroup, priority_class, queue

S = TaskStatus
TASK_FIELDS = [f.name for f in dataclasses.fields(TaskInfo)]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tolist())
    return value


def _task(task: TaskInfo) -> tuple[Any, ...]:
    return tuple(_plain(getattr(task, f)) for f in TASK_FIELDS)


def summary(cluster: ClusterInfo) -> dict[str, Any]:
    """Everything a session reads from a build, in order."""
    n = cluster.nodes
    return {
        "space": list(cluster.space.names),
        "nodes": [
            n.names,
            *(_plain(a) for a in (n.allocatable, n.used, n.idle, n.releasing, n.pipelined)),
            _plain(n.future),
            n.labels,
            n.taints,
            _plain(n.unschedulable),
            _plain(n.ready),
            n.objects,
            n.changed,
            [[(uid, _task(t)) for uid, t in on.items()] for on in n.tasks],
        ],
        "jobs": [
            (
                uid,
                [
                    _plain(getattr(job, f.name))
                    for f in dataclasses.fields(job)
                    if f.name not in ("space", "tasks", "by_status")
                ],
                [(k, _task(t)) for k, t in job.tasks.items()],
                [(s, list(ts)) for s, ts in job.by_status.items()],
                job.ready_task_num(),
                job.pending_best_effort_num(),
            )
            for uid, job in cluster.jobs.items()
        ],
        "queues": [
            (k, [_plain(getattr(q, f.name)) for f in dataclasses.fields(q)])
            for k, q in cluster.queues.items()
        ],
        "others": [_task(t) for t in cluster.other_tasks],
        "skipped_pods": list(cluster.skipped_pods.items()),
        "skipped_jobs": list(cluster.skipped_jobs.items()),
        "default_priority": cluster.default_priority,
    }


class World:
    """Objects as an informer cache holds them; every write bumps the version."""

    def __init__(self) -> None:
        self.rv = itertools.count(1)
        self.nodes = {f"n{i}": self._v(node(f"n{i}", cpu="8", memory="16Gi")) for i in range(3)}
        self.groups = {f"g{i}": self._v(podgroup(f"g{i}", 1 + i % 2)) for i in range(3)}
        self.queues: dict[str, dict[str, Any]] = {}
        self.classes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.serial = itertools.count()

    def _v(self, obj: dict[str, Any], *, new_uid: bool = True) -> dict[str, Any]:
        md = obj["metadata"]
        if new_uid or "uid" not in md:
            md["uid"] = f"uid-{obj['kind']}-{md['name']}-{next(self.rv)}"
        md["resourceVersion"] = str(next(self.rv))
        return obj

    def bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._v(obj, new_uid=False)

    def apply(self, op: str, a: int, b: int) -> None:
        pick = sorted(self.pods)
        if op == "add_pod" or (not pick and op.endswith("_pod")):
            name = f"p{next(self.serial)}"
            group = f"g{a % 4}" if b % 5 else None  # g3 has no PodGroup
            p = pod(name, group, cpu=("100m", "1", "2", "0")[a % 4], memory="1Gi")
            if b % 7 == 0:
                p["spec"]["schedulerName"] = "default-scheduler"
                p["spec"]["nodeName"] = f"n{a % 4}"  # n3 does not exist
                p["status"]["phase"] = "Running"
            self.pods[name] = self._v(p)
            return
        name = pick[a % len(pick)] if pick else ""
        if op == "remove_pod":
            del self.pods[name]
        elif op == "change_pod":
            p = copy.deepcopy(self.pods[name])
            spec, md, status = p["spec"], p["metadata"], p["status"]
            what = b % 9
            if what == 0:
                spec["containers"][0]["resources"]["requests"]["cpu"] = ("3", "250m")[a % 2]
            elif what == 1:  # a resource name appears (or goes)
                reqs = spec["containers"][0]["resources"]["requests"]
                if reqs.pop("example.com/gpu", None) is None:
                    reqs["example.com/gpu"] = "1"
            elif what == 2:
                spec["nodeName"] = f"n{a % 4}"
                status["phase"] = ("Running", "Pending", "Succeeded", "Failed")[a % 4]
            elif what == 3:
                spec["priorityClassName"] = f"pc{a % 3}"
            elif what == 4:
                spec["priority"] = a % 50 - 10
            elif what == 5:
                md.setdefault("annotations", {})["volcano.sh/task-priority"] = str(a % 9)
            elif what == 6:
                md.setdefault("annotations", {})["volcano.sh/preemptable"] = ("false", "true")[
                    a % 2
                ]
                md.setdefault("labels", {})["volcano.sh/task-spec"] = f"r{a % 2}"
            elif what == 7:
                spec["schedulingGates"] = [{"name": "x"}] if a % 2 else []
                status["nominatedNodeName"] = f"n{a % 3}"
            else:
                md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            self.pods[name] = self.bump(p)
        elif op == "node":
            n = copy.deepcopy(self.nodes[f"n{a % 3}"])
            alloc = n["status"]["allocatable"]
            if b % 2:
                alloc["example.com/fpga"] = str(a % 4)
            else:
                alloc.pop("example.com/fpga", None)
                alloc["cpu"] = str(4 + a % 8)
            n["metadata"]["labels"] = {"zone": f"z{b % 2}"}
            self.nodes[f"n{a % 3}"] = self.bump(n)
        elif op == "group":
            g = copy.deepcopy(self.groups[f"g{a % 3}"])
            what = b % 4
            if what == 0:
                g["spec"]["queue"] = ("default", "q1", "missing")[a % 3]
            elif what == 1:
                g["spec"]["minResources"] = {"cpu": str(1 + a % 3), "example.com/disk": "1"}
            elif what == 2:
                g["spec"]["priorityClassName"] = f"pc{a % 3}"
            else:
                g["spec"]["minMember"] = a % 4
            self.groups[f"g{a % 3}"] = self.bump(g)
        elif op == "classes":
            pc = f"pc{a % 3}"
            if pc in self.classes and b % 3 == 0:
                del self.classes[pc]
            else:
                self.classes[pc] = self._v(priority_class(pc, b % 100, default=b % 5 == 0))
        elif op == "queue":
            if "q1" in self.queues and b % 2:
                del self.queues["q1"]
            else:
                cap = {"cpu": "100", "example.com/q": "1"} if a % 2 else None
                self.queues["q1"] = self._v(queue("q1", 1 + a % 3, capability=cap))

    def objects(self, overlays: list[tuple[int, int]]) -> list[dict[str, Any]]:
        """The cache's snapshot: some pods replaced by overlay copies (same uid and
        version): an assumed bind or an eviction."""
        pods = dict(self.pods)
        names = sorted(pods)
        for a, b in overlays:
            if not names:
                break
            name = names[a % len(names)]
            p = pods[name]
            if b % 2:
                pods[name] = {**p, "spec": {**p["spec"], "nodeName": f"n{b % 4}"}}
            else:
                stamp = "2026-02-02T00:00:00Z"
                pods[name] = {**p, "metadata": {**p["metadata"], "deletionTimestamp": stamp}}
        return [
            *self.nodes.values(),
            *self.groups.values(),
            *self.queues.values(),
            *self.classes.values(),
            *pods.values(),
        ]


OPS = ("add_pod", "add_pod", "remove_pod", "change_pod", "change_pod", "node", "group")
OPS += ("classes", "queue")
step = st.tuples(st.sampled_from(OPS), st.integers(0, 99), st.integers(0, 99))
rounds = st.lists(
    st.tuples(
        st.lists(step, max_size=6),
        st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=3),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(rounds)
def test_memoised_builds_equal_fresh_builds(plan: list[Any]) -> None:
    world = World()
    memo = ParseMemo()
    previous = 0
    for steps, overlays in plan:
        for op, a, b in steps:
            world.apply(op, a, b)
        objects = world.objects(overlays)
        try:
            fresh = summary(build_cluster(copy.deepcopy(objects)))
        except SnapshotError as exc:
            with pytest.raises(SnapshotError, match=str(exc)):
                build_cluster(objects, memo=memo)
            continue
        cluster = build_cluster(objects, memo=memo)
        assert summary(cluster) == fresh
        given_pods = {id(o) for o in objects if o["kind"] == "Pod"}
        tasks = [
            *cluster.other_tasks,
            *(t for j in cluster.jobs.values() for t in j.tasks.values()),
        ]
        assert all(id(t.pod) in given_pods for t in tasks)  # the objects given, not the memo's
        assert len(memo) <= len(objects) + previous  # this build's and the last one's
        previous = len(objects)


def test_new_task_is_task_info() -> None:
    space = ResourceSpace()
    args: dict[str, Any] = {
        "uid": "u",
        "namespace": "ns",
        "name": "job-worker-3",
        "job": "ns/job",
        "resreq": space.zeros(),
        "status": 1,
        "role": "worker",
        "priority": 5,
        "pod_priority": 5,
        "preemptable": False,
        "priority_class_name": "high",
        "preemption_policy": "Never",
        "nominated_node": "n",
        "creation": "t",
        "gated": True,
        "pod": {"a": 1},
    }
    made = TaskInfo(**args)
    fast = new_task(**args, best_effort=made.best_effort, ordinal=made.ordinal)
    assert made.ordinal == 3 and made.best_effort
    assert _task(fast) == _task(made)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.sampled_from([S.RUNNING, S.BOUND, S.RELEASING, S.PIPELINED, S.ALLOCATED]),
            st.lists(st.floats(0, 1e6, allow_nan=False), min_size=3, max_size=3),
        ),
        max_size=30,
    )
)
def test_add_tasks_is_add_task_in_order(placements: list[Any]) -> None:
    space = ResourceSpace()

    def table() -> NodeTable:
        alloc = np.full((4, space.size), 1e6 / 3)
        return NodeTable(space, ["a", "b", "c", "d"], alloc, [{}] * 4, [[]] * 4,
                         np.zeros(4, bool), np.ones(4, bool), [{}] * 4)  # fmt: skip

    def tasks() -> list[TaskInfo]:
        return [
            TaskInfo(f"u{k}", "ns", f"t{k}", "", np.array(req), status)
            for k, (_, status, req) in enumerate(placements)
        ]

    one, bulk = table(), table()
    for (row, _, _), task in zip(placements, tasks(), strict=True):
        one.add_task(row, task)
    bulk.add_tasks([row for row, _, _ in placements], tasks())
    for name in ("used", "idle", "releasing", "pipelined", "future"):
        assert getattr(one, name).tobytes() == getattr(bulk, name).tobytes(), name
    assert one.changed == bulk.changed
    assert [[(u, t.node, t.node_index) for u, t in on.items()] for on in one.tasks] == [
        [(u, t.node, t.node_index) for u, t in on.items()] for on in bulk.tasks
    ]
