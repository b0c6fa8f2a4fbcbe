"""The binpack plugin inside a real session, and its arguments."""

from __future__ import annotations

from typing import Any

import numpy as np

from lahar.scheduler.framework.conf import SchedulerConfiguration
from lahar.scheduler.framework.session import open_session
from lahar.scheduler.snapshot import build_cluster
from tests.scheduler.builders import conf, gang, node, pod, schedule


def plugins(**args: Any) -> SchedulerConfiguration:
    entry: dict[str, Any] = {"name": "binpack"}
    if args:
        entry["arguments"] = args
    return conf("enqueue, allocate", ["gang"], ["predicates", entry])


def cluster(**gang_kw: Any) -> list[dict[str, Any]]:
    return [
        node("n1", cpu="8", memory="16Gi", extra={"nvidia.com/gpu": "4"}),
        node("n2", cpu="8", memory="16Gi", extra={"nvidia.com/gpu": "4"}),
        pod(
            "running",
            cpu="4",
            memory="8Gi",
            node_name="n2",
            phase="Running",
            extra={"nvidia.com/gpu": "1"},
        ),
        *gang("g", 1, **gang_kw),
    ]


def test_packs_onto_the_used_node() -> None:
    assert schedule(cluster(), plugins()).binds == {"default/g-0": "n2"}


def test_zero_weight_registers_nothing() -> None:
    ssn = open_session(build_cluster(cluster()), plugins(**{"binpack.weight": 0}))
    assert not ssn.node_order


def test_score_by_hand_with_gpu_weight() -> None:
    args = {
        "binpack.weight": 2,
        "binpack.cpu": 1,
        "binpack.memory": 1,
        "binpack.resources": "nvidia.com/gpu",
        "binpack.resources.nvidia.com/gpu": 3,
    }
    objs = cluster(extra={"nvidia.com/gpu": "1"})
    ssn = open_session(build_cluster(objs), plugins(**args))
    task = next(iter(ssn.jobs["default/g"].tasks.values()))
    got = ssn.node_order.score(task, ssn.nodes, np.array([0, 1]))
    # n1: cpu 1/8, mem 1/16, gpu 1/4*3 -> (.125 + .0625 + .75) / 5 * 100 * 2 = 37.5
    # n2: cpu 5/8, mem 9/16, gpu 2/4*3 -> (.625 + .5625 + 1.5) / 5 * 200 = 107.5
    assert np.allclose(got, [37.5, 107.5])


def test_overflowing_node_scores_zero() -> None:
    objs = cluster(cpu="6")
    ssn = open_session(build_cluster(objs), plugins())
    task = next(iter(ssn.jobs["default/g"].tasks.values()))
    got = ssn.node_order.score(task, ssn.nodes, np.array([0, 1]))
    # n1: cpu 6/8 = .75, mem 1/16 -> (.75 + .0625) / 2 * 100; n2: 4 + 6 > 8 -> 0
    assert np.allclose(got, [40.625, 0.0])
