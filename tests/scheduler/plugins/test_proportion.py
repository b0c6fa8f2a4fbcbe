"""proportion: water-filling of deserved shares by weight, capability and guarantee."""

from __future__ import annotations

from tests.scheduler.builders import conf, node, pod, podgroup, queue, schedule

OPEN_ONLY = conf("enqueue", ["priority", "gang"], ["proportion"])


def demand(q: str, tasks: int, cpu: str = "1") -> list:
    name = f"j{q}"
    return [
        podgroup(name, 1, queue=q),
        *[pod(f"{name}-{i}", name, cpu=cpu, memory="1Mi") for i in range(tasks)],
    ]


def deserved_cpu(objs: list, cfg=OPEN_ONLY) -> dict[str, str]:
    result = schedule(objs, cfg)
    return {q: v["deserved"].get("cpu", "0") for q, v in result.queues.items() if v["deserved"]}


CLUSTER = [node("n1", cpu="12", memory="64Gi", pods="1000")]


def test_split_by_weight() -> None:
    objs = [*CLUSTER, queue("a", 1), queue("b", 2), *demand("a", 20), *demand("b", 20)]
    assert deserved_cpu(objs) == {"a": "4", "b": "8"}


def test_request_caps_and_surplus_flows_to_others() -> None:
    objs = [*CLUSTER, queue("a", 1), queue("b", 1), *demand("a", 2), *demand("b", 20)]
    assert deserved_cpu(objs) == {"a": "2", "b": "10"}


def test_capability_caps_deserved() -> None:
    objs = [
        *CLUSTER,
        queue("a", 1, capability={"cpu": "3"}),
        queue("b", 1),
        *demand("a", 20),
        *demand("b", 20),
    ]
    assert deserved_cpu(objs) == {"a": "3", "b": "9"}


def test_guarantee_is_a_floor_even_with_weight_zero() -> None:
    objs = [
        *CLUSTER,
        queue("a", 0, guarantee={"cpu": "5"}),
        queue("b", 1),
        *demand("a", 20),
        *demand("b", 20),
    ]
    assert deserved_cpu(objs) == {"a": "5", "b": "7"}


def test_queue_order_serves_lower_share_first() -> None:
    objs = [
        node("n1", cpu="2", memory="64Gi"),
        queue("a"),
        queue("b"),
        podgroup("old", 1, phase="Running", queue="a"),
        pod("old-0", "old", cpu="1", node_name="n1"),
        podgroup("ja", 1, phase="Inqueue", queue="a"),
        pod("ja-0", "ja", cpu="1"),
        podgroup("jb", 1, phase="Inqueue", queue="b", created="2027-01-01T00:00:00Z"),
        pod("jb-0", "jb", cpu="1"),
    ]
    result = schedule(objs, conf("allocate", ["priority", "gang"], ["proportion"]))
    assert result.binds == {"default/jb-0": "n1"}


def test_overused_queue_is_skipped_by_allocate() -> None:
    objs = [
        node("n1", cpu="4", memory="64Gi"),
        # overused means deserved <= allocated in every dimension, pods included
        queue("a", capability={"cpu": "1", "memory": "1Gi", "pods": "1"}),
        podgroup("old", 1, phase="Running", queue="a"),
        pod("old-0", "old", cpu="1", node_name="n1"),
        podgroup("ja", 1, phase="Inqueue", queue="a"),
        pod("ja-0", "ja", cpu="1"),
    ]
    result = schedule(objs, conf("allocate", ["priority", "gang"], ["proportion"]))
    assert result.binds == {}
    assert "queue a is overused" in result.pod_groups["default/ja"]["message"]


def test_not_overused_while_under_deserved_in_any_dimension() -> None:
    objs = [
        node("n1", cpu="4", memory="64Gi"),
        queue("a", capability={"cpu": "1"}),
        podgroup("old", 1, phase="Running", queue="a"),
        pod("old-0", "old", cpu="1", node_name="n1"),
        podgroup("ja", 1, phase="Inqueue", queue="a"),
        pod("ja-0", "ja", cpu="1"),
    ]
    result = schedule(objs, conf("allocate", ["priority", "gang"], ["proportion"]))
    assert result.binds == {}  # Allocatable still refuses: cpu would exceed deserved
    assert "queue a has no room" in result.pod_groups["default/ja"]["message"]
