"""The predicates plugin inside a real session (allocate action)."""

from __future__ import annotations

from typing import Any

from lahar.scheduler.framework.conf import SchedulerConfiguration
from tests.scheduler.builders import conf, gang, node, pod, podgroup, schedule

REQ = "requiredDuringSchedulingIgnoredDuringExecution"


def plugins(**args: Any) -> SchedulerConfiguration:
    entry: dict[str, Any] = {"name": "predicates"}
    if args:
        entry["arguments"] = args
    return conf("enqueue, allocate", ["gang"], [entry])


def test_node_selector_taints_and_cordon_steer_placement() -> None:
    objs = [
        node("n1", labels={"disk": "hdd"}),
        node(
            "n2",
            labels={"disk": "ssd"},
            taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        ),
        node("n3", labels={"disk": "ssd"}, unschedulable=True),
        node("n4", labels={"disk": "ssd"}),
        *gang("g", 1, node_selector={"disk": "ssd"}),
    ]
    assert schedule(objs, plugins()).binds == {"default/g-0": "n4"}


def test_explains_why_no_node_fits() -> None:
    objs = [
        node("n1", labels={"disk": "hdd"}),
        node(
            "n2", labels={"disk": "ssd"}, taints=[{"key": "k", "value": "v", "effect": "NoExecute"}]
        ),
        *gang("g", 1, node_selector={"disk": "ssd"}),
    ]
    result = schedule(objs, plugins())
    assert result.binds == {}
    message = result.pod_groups["default/g"]["message"]
    assert "0/2 nodes are available: " in message
    assert "1 node(s) didn't match Pod's node affinity/selector" in message
    assert "1 node(s) had untolerated taint {k: v}" in message


def test_taint_check_can_be_switched_off() -> None:
    objs = [node("n1", taints=[{"key": "k", "effect": "NoSchedule"}]), *gang("g", 1)]
    assert schedule(objs, plugins()).binds == {}
    off = plugins(**{"predicate.TaintTolerationEnable": False})
    assert schedule(objs, off).binds == {"default/g-0": "n1"}


def test_anti_affinity_between_members_placed_in_the_same_session() -> None:
    """Each placement is seen by the next task's predicate (incremental state)."""
    anti = {
        "podAntiAffinity": {
            REQ: [
                {
                    "labelSelector": {"matchLabels": {"app": "ray"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    objs: list[dict[str, Any]] = [
        node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}) for i in range(3)
    ]
    objs.append(podgroup("g", 3))
    for i in range(3):
        p = pod(f"g-{i}", "g", labels={"app": "ray"})
        p["spec"]["affinity"] = anti
        objs.append(p)
    binds = schedule(objs, plugins()).binds
    assert sorted(binds.values()) == ["n0", "n1", "n2"]
    # a fourth member cannot fit anywhere, so the gang of 4 is not placed at all
    extra = pod("g-3", "g", labels={"app": "ray"})
    extra["spec"]["affinity"] = anti
    objs[3] = podgroup("g", 4)
    assert schedule([*objs, extra], plugins()).binds == {}


def test_pod_number_limit() -> None:
    objs = [
        node("n1", pods="1"),
        pod("busy", cpu="100m", node_name="n1", phase="Running"),
        *gang("g", 1),
    ]
    result = schedule(objs, plugins())
    assert result.binds == {}
    assert "Too many pods" in result.pod_groups["default/g"]["message"]
