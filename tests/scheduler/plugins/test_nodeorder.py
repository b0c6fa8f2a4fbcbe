"""The nodeorder plugin inside a real session, and its weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from lahar.scheduler.framework.conf import SchedulerConfiguration
from lahar.scheduler.framework.session import open_session
from lahar.scheduler.kernels import NodeOrderWeights
from lahar.scheduler.snapshot import build_cluster
from tests.scheduler.builders import conf, gang, node, pod, schedule


def plugins(**args: Any) -> SchedulerConfiguration:
    entry: dict[str, Any] = {"name": "nodeorder"}
    if args:
        entry["arguments"] = args
    return conf("enqueue, allocate", ["gang"], ["predicates", entry])


def busy_cluster() -> list[dict[str, Any]]:
    return [
        node("n1", cpu="8", memory="16Gi"),
        node("n2", cpu="8", memory="16Gi"),
        pod("running", cpu="4", memory="8Gi", node_name="n2", phase="Running"),
    ]


def test_defaults_follow_volcano() -> None:
    w = NodeOrderWeights.from_arguments({})
    assert (w.least_requested, w.most_requested, w.balanced_resource) == (1, 0, 1)
    assert (w.node_affinity, w.pod_affinity, w.taint_toleration) == (2, 2, 3)
    assert (w.image_locality, w.pod_topology_spread) == (1, 2)
    w = NodeOrderWeights.from_arguments(
        {"mostrequested.weight": "2", "leastrequested.weight": 0, "podaffinity.weight": "x"}
    )
    assert (w.least_requested, w.most_requested, w.pod_affinity) == (0, 2, 2)


def test_least_requested_spreads_most_requested_packs() -> None:
    objs = [*busy_cluster(), *gang("g", 1)]
    assert schedule(objs, plugins()).binds == {"default/g-0": "n1"}
    packing = plugins(**{"leastrequested.weight": 0, "mostrequested.weight": 1})
    assert schedule(objs, packing).binds == {"default/g-0": "n2"}


def test_preferred_node_affinity_and_prefer_no_schedule() -> None:
    pref = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]},
                }
            ]
        }
    }
    objs = [*busy_cluster(), *gang("g", 1)]
    objs[1]["metadata"]["labels"]["ssd"] = "1"  # n2, the busier node
    objs[-1]["spec"]["affinity"] = pref
    assert schedule(objs, plugins()).binds == {"default/g-0": "n2"}
    objs = [
        node("n1", taints=[{"key": "meh", "effect": "PreferNoSchedule"}]),
        node("n2"),
        *gang("g", 1),
    ]
    assert schedule(objs, plugins()).binds == {"default/g-0": "n2"}


def test_registered_score_sums_weighted_components_by_hand() -> None:
    objs = [*busy_cluster(), *gang("g", 1, cpu="2", memory="4Gi")]
    ssn = open_session(build_cluster(objs), plugins())
    task = next(iter(ssn.jobs["default/g"].tasks.values()))
    scores = ssn.node_order.score(task, ssn.nodes, np.array([0, 1]))
    # n1: least cpu (8-2)/8 -> 75, mem (16-4)/16 -> 75 => 75; balanced .25/.25 -> 100;
    #     tainttoleration 100 (weight 3) => 75 + 100 + 300 = 475
    # n2: least cpu (8-6)/8 -> 25, mem 25 => 25; balanced .75/.75 -> 100 => 425
    assert scores.tolist() == [475.0, 425.0]
