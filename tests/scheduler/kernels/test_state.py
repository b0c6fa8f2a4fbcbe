"""Incremental kernel state: updates on allocate/deallocate equal a fresh rebuild."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.api.fit import FitErrors
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.kernels import (
    NODE_AFFINITY_MISMATCH,
    TOO_MANY_PODS,
    UNSCHEDULABLE,
    KernelState,
    PredicateSwitches,
    feasible,
    nodeorder_components,
    untolerated_reason,
)
from tests.scheduler.kernels.kernel_builders import make_table, node, place, pod, task_of

REQ = "requiredDuringSchedulingIgnoredDuringExecution"


def probe_specs() -> list[tuple[dict[str, str], dict[str, Any]]]:
    anti = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
    pref = [
        {
            "weight": 7,
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "b"}},
                "topologyKey": "rack",
            },
        }
    ]
    spread = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "a"}},
    }
    soft = {**spread, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway"}
    return [
        ({"app": "a"}, {"affinity": {"podAntiAffinity": {REQ: [anti]}}}),
        (
            {"app": "b"},
            {
                "affinity": {
                    "podAffinity": {
                        REQ: [anti],
                        "preferredDuringSchedulingIgnoredDuringExecution": pref,
                    }
                }
            },
        ),
        ({"app": "a"}, {"topologySpreadConstraints": [spread, soft]}),
    ]


def fingerprint(state: KernelState, table: Any) -> list[Any]:
    out: list[Any] = []
    cand = np.arange(table.size)
    for i, (labels, spec) in enumerate(probe_specs()):
        task = task_of(
            table,
            pod(f"probe{i}", labels=labels, requests={"cpu": "1", "memory": "1Gi"}, spec=spec),
        )
        result = feasible(state, task)
        out.append(result.passed.tolist())
        out.append(sorted((t, m.tolist()) for t, m in result.reasons))
        out.append({k: v.tolist() for k, v in nodeorder_components(state, task, cand).items()})
    out.append(state.pod_count.tolist())
    out.append(np.round(state.requested, 6).tolist())
    out.append(np.round(state.nonzero, 6).tolist())
    return out


OPS = ["add", "add", "remove", "evict", "unevict", "touch"]


@given(
    zones=st.lists(
        st.tuples(st.sampled_from(["z1", "z2"]), st.sampled_from(["r1", "r2", "r3"])),
        min_size=1,
        max_size=5,
    ),
    ops=st.lists(
        st.tuples(st.sampled_from(OPS), st.integers(0, 4), st.integers(0, 2), st.booleans()),
        max_size=14,
    ),
    eager=st.booleans(),
)
def test_incremental_equals_rebuild(
    zones: list[tuple[str, str]], ops: list[tuple[str, int, int, bool]], eager: bool
) -> None:
    """Allocate, unallocate, evict (task stays on the table, leaves the kernel's pod
    lists as in Volcano), undo an eviction, and force the lazy parts to build at random
    points; the state must equal one built fresh from the surviving placements."""
    nodes = [node(f"n{i}", labels={"zone": z, "rack": r}) for i, (z, r) in enumerate(zones)]
    table = make_table(nodes)
    seed = place(table, "n0", pod("seed", labels={"app": "a"}, requests={"cpu": "500m"}))
    state = KernelState(table)
    if eager:
        _ = state.pods, state.requested
    live: list[Any] = [seed]
    evicted: list[Any] = []
    for j, (op, n, which, with_spec) in enumerate(ops):
        if op == "add" or (op == "remove" and not live):
            labels, spec = probe_specs()[which]
            p = pod(f"t{j}", labels=labels, requests={"cpu": "1"}, spec=spec if with_spec else {})
            task = task_of(table, p, TaskStatus.ALLOCATED)
            table.add_task(n % table.size, task)
            state.update_on_allocate(n % table.size, task)
            live.append(task)
        elif op == "remove":
            task = live.pop(n % len(live))
            table.remove_task(task.node_index, task)
            state.update_on_deallocate(task)
        elif op == "evict" and live:
            task = live.pop(n % len(live))
            old, task.status = task.status, TaskStatus.RELEASING
            table.update_task(task.node_index, task, old)
            state.update_on_deallocate(task)
            evicted.append(task)
        elif op == "unevict" and evicted:
            task = evicted.pop(n % len(evicted))
            task.status = TaskStatus.RUNNING
            table.update_task(task.node_index, task, TaskStatus.RELEASING)
            state.update_on_allocate(task.node_index, task)
            live.append(task)
        elif op == "touch":
            _ = state.pods, state.requested
    fresh_table = make_table(nodes)
    for task in live:
        twin = task_of(fresh_table, task.pod, TaskStatus.RUNNING)
        fresh_table.add_task(task.node_index, twin)
    assert fingerprint(state, table) == fingerprint(KernelState(fresh_table), fresh_table)


def test_reason_breakdown_and_summary() -> None:
    nodes = [
        node("n0", labels={"disk": "ssd"}),
        node("n1", labels={"disk": "hdd"}),
        node(
            "n2",
            labels={"disk": "ssd"},
            taints=[{"key": "team", "value": "ml", "effect": "NoSchedule"}],
        ),
        node("n3", labels={"disk": "ssd"}, unschedulable=True),
        node("n4", labels={"disk": "ssd"}, pods=1),
        node("n5", labels={"disk": "ssd"}, cpu=1),
    ]
    table = make_table(nodes)
    place(table, "n4", pod("full"))
    state = KernelState(table)
    task = task_of(table, pod("new", requests={"cpu": "2"}, spec={"nodeSelector": {"disk": "ssd"}}))
    result = feasible(state, task, PredicateSwitches(resources=True))
    assert result.passed.tolist() == [True, False, False, False, False, False]
    got = {t: np.flatnonzero(m).tolist() for t, m in result.reasons}
    assert got == {
        "Insufficient cpu": [5],
        TOO_MANY_PODS: [4],
        UNSCHEDULABLE: [3],
        NODE_AFFINITY_MISMATCH: [1],
        untolerated_reason(state.taints.taints[0]): [2],
    }
    assert untolerated_reason(state.taints.taints[0]) == "node(s) had untolerated taint {team: ml}"
    assert result.unresolvable is not None
    assert np.flatnonzero(result.unresolvable).tolist() == [1, 2, 3]
    summary = FitErrors.from_filter(result).summary()
    assert summary == (
        "0/6 nodes are available: 1 Insufficient cpu, 1 Too many pods, "
        "1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {team: ml}, 1 node(s) were unschedulable."
    )


def test_empty_cluster_and_empty_candidate_list() -> None:
    spec = {
        "affinity": {"podAntiAffinity": {REQ: [{"labelSelector": {}, "topologyKey": "zone"}]}},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {},
            }
        ],
    }
    empty = make_table([])
    state = KernelState(empty)
    task = task_of(empty, pod("new", spec=spec))
    assert feasible(state, task, PredicateSwitches(resources=True)).passed.shape == (0,)
    one = make_table([node("n0", labels={"zone": "a"})])
    state = KernelState(one)
    task = task_of(one, pod("new", spec=spec))
    scores = nodeorder_components(state, task, np.zeros(0, dtype=np.int64))
    assert all(v.shape == (0,) for v in scores.values())
    assert feasible(state, task).passed.tolist() == [True]
