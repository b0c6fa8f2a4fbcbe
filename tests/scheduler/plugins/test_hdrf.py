"""Hierarchical DRF: queue order along the tree and reclaim towards fairness (§6.3)."""

from __future__ import annotations

from typing import Any

from tests.scheduler.builders import conf, node, pod, podgroup, queue, schedule

HDRF = {"name": "drf", "enableHierarchy": True}
RECLAIM = conf(
    "reclaim",
    [
        "priority",
        {"name": "gang", "enableReclaimable": False},
        {"name": "conformance", "enableReclaimable": False},
    ],
    [HDRF],
)


def hqueue(name: str, path: str, weights: str) -> dict[str, Any]:
    q = queue(name)
    q["metadata"]["annotations"] = {
        "volcano.sh/hierarchy": path,
        "volcano.sh/hierarchy-weights": weights,
    }
    return q


def running(job: str, q: str, n: int) -> list[dict[str, Any]]:
    return [
        podgroup(job, 1, queue=q, phase="Running"),
        *[pod(f"{job}-{i}", job, cpu="1", memory=None, node_name="n1") for i in range(n)],
    ]


def waiting(job: str, q: str, n: int = 1) -> list[dict[str, Any]]:
    return [
        podgroup(job, 1, queue=q, phase="Inqueue"),
        *[pod(f"{job}-{i}", job, cpu="1", memory=None) for i in range(n)],
    ]


def test_weights_decide_queue_order() -> None:
    objs = [
        node("n1", cpu="5", memory="64Gi"),
        hqueue("eng", "root/eng", "1/1"),
        hqueue("sci", "root/sci", "1/3"),
        *running("e", "eng", 2),
        *running("s", "sci", 2),
        *waiting("e2", "eng"),
        *waiting("s2", "sci"),
    ]
    result = schedule(objs, conf("allocate", ["priority", "gang"], [HDRF]))
    assert result.binds == {"default/s2-0": "n1"}


def test_reclaim_until_fair() -> None:
    objs = [
        node("n1", cpu="3", memory="64Gi"),
        hqueue("a", "root/a", "1/1"),
        hqueue("b", "root/b", "1/1"),
        *running("ja", "a", 3),
        *waiting("jb", "b", 3),  # wants more than it gets: not saturated after the move
    ]
    result = schedule(objs, RECLAIM)
    assert len(result.evictions) == 1 and len(result.pipelined) == 1


def test_no_reclaim_when_already_fair() -> None:
    objs = [
        node("n1", cpu="2", memory="64Gi"),
        hqueue("a", "root/a", "1/1"),
        hqueue("b", "root/b", "1/1"),
        *running("ja", "a", 2),
        *waiting("jb", "b", 3),
    ]
    assert schedule(objs, RECLAIM).evictions == []


def test_drf_hierarchy_with_proportion_in_one_tier_is_rejected() -> None:
    import pytest

    from lahar.scheduler.framework.conf import ConfigError

    with pytest.raises(ConfigError):
        conf("allocate", [HDRF, "proportion"])
