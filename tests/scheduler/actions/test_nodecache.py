"""The per-template node cache gives exactly the binds of the direct path.

Random small clusters with what the cache keys on (shared request shapes, node
selectors, preferred node affinity, NoSchedule and PreferNoSchedule taints and
tolerations, GPU requests, running and terminating pods, cordoned nodes, a pod with
anti-affinity now and then) are scheduled twice, cache on and off, and the whole printed result must match.
The cache's refresh strategies (row by row, NumPy over the changed rows, everything) are
each forced in turn by patching its thresholds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.bench.scheduler import synthetic_cluster
from lahar.scheduler.actions import nodecache
from lahar.scheduler.framework.conf import SchedulerConfiguration, default_conf, load_conf
from lahar.scheduler.run import run_session
from lahar.scheduler.snapshot import build_cluster
from tests.scheduler.builders import conf, node, pod, podgroup, priority_class, queue

SHAPES = [("1", "1Gi", None), ("2", "2Gi", None), ("500m", "3Gi", None), ("1", "1Gi", "1")]
ZONES = ["a", "b"]
MOST = conf(
    "enqueue, allocate, backfill",
    ["priority", "gang", "conformance"],
    [
        "overcommit",
        "drf",
        "predicates",
        "proportion",
        {"name": "nodeorder", "arguments": {"mostrequested.weight": 2, "nodeaffinity.weight": 1}},
    ],
)
HELM = load_conf(str(Path(__file__).parents[1] / "fixtures" / "volcano-scheduler-helm.conf"))
BINPACK_ONLY = conf(
    "enqueue, allocate, backfill",
    ["priority", "gang"],
    [
        "predicates",
        {
            "name": "binpack",
            "arguments": {
                "binpack.weight": 3,
                "binpack.cpu": 2,
                "binpack.memory": 0,
                "binpack.resources": "nvidia.com/gpu",
                "binpack.resources.nvidia.com/gpu": 5,
            },
        },
    ],
)
NO_NODEORDER = conf(
    "enqueue, allocate, backfill",
    ["priority", "gang", "conformance"],
    ["drf", {"name": "predicates", "arguments": {"predicate.TaintTolerationEnable": False}}],
)


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [priority_class("lo", 1), priority_class("hi", 100)]
    n_nodes = draw(st.integers(1, 12))
    names = [f"n{i}" for i in range(n_nodes)]
    for i, name in enumerate(names):
        taints = []
        if draw(st.integers(0, 4)) == 0:
            taints.append({"key": "dedicated", "value": "x", "effect": "NoSchedule"})
        if draw(st.integers(0, 3)) == 0:
            taints.append({"key": "spot", "value": "y", "effect": "PreferNoSchedule"})
        objs.append(
            node(
                name,
                cpu=str(draw(st.integers(1, 8))),
                memory=f"{draw(st.integers(2, 16))}Gi",
                pods=str(draw(st.integers(1, 6))),
                labels={"zone": ZONES[i % 2], "disk": draw(st.sampled_from(["ssd", "hdd"]))},
                taints=taints,
                unschedulable=draw(st.integers(0, 9)) == 0,
                extra={"nvidia.com/gpu": "2"} if draw(st.booleans()) else None,
            )
        )
    objs += [queue("q1", 1), queue("q2", 3)]
    for j in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 5))
        cpu, mem, gpu = draw(st.sampled_from(SHAPES))
        group = f"g{j}"
        running = draw(st.integers(0, 2)) == 0
        objs.append(
            podgroup(
                group,
                draw(st.integers(1, size)),
                queue=draw(st.sampled_from(["q1", "q2"])),
                phase="Running" if running else "Pending",
                priority_class=draw(st.sampled_from(["lo", "hi"])),
            )
        )
        selector = {"zone": draw(st.sampled_from(ZONES))} if draw(st.booleans()) else None
        tolerate = draw(st.booleans())
        prefer = draw(st.integers(0, 2))
        anti = draw(st.integers(0, 9)) == 0
        for t in range(size):
            p = pod(
                f"{group}-{t}",
                group,
                cpu=cpu,
                memory=mem,
                extra={"nvidia.com/gpu": gpu} if gpu else None,
                node_name=draw(st.sampled_from(names)) if running else None,
                deleting=running and draw(st.booleans()),
                node_selector=selector,
                labels={"app": group},
            )
            if tolerate:
                p["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
            if prefer:
                term = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                p["spec"]["affinity"] = {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10 * prefer, "preference": term}
                        ]
                    }
                }
            if anti and t == 0:
                p["spec"].setdefault("affinity", {})["podAntiAffinity"] = {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": group}}, "topologyKey": "zone"}
                    ]
                }
            objs.append(p)
    return objs


def _both(
    objs: list[dict[str, Any]], configuration: SchedulerConfiguration, seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    out = []
    for cached in (True, False):
        _ssn, result = run_session(build_cluster(objs), configuration, seed=seed, node_cache=cached)
        out.append(result.to_dict())
    return out[0], out[1]


STRATEGIES = [
    pytest.param({"SCALAR_ROWS": 16, "FULL_REFRESH": 4}, id="default"),
    pytest.param({"SCALAR_ROWS": 0, "FULL_REFRESH": 0}, id="numpy-rows"),
    pytest.param({"SCALAR_ROWS": 10**9, "FULL_REFRESH": 0}, id="row-by-row"),
    pytest.param({"SCALAR_ROWS": 0, "FULL_REFRESH": 10**9}, id="full"),
]


@pytest.mark.parametrize("thresholds", STRATEGIES)
@settings(max_examples=100, deadline=None)
@given(objs=clusters(), seed=st.integers(0, 3))
def test_cache_gives_the_direct_binds(
    thresholds: dict[str, int], objs: list[dict[str, Any]], seed: int
) -> None:
    with patch.multiple(nodecache, **thresholds):
        for configuration in (default_conf(), MOST, NO_NODEORDER, HELM, BINPACK_ONLY):
            cached, direct = _both(objs, configuration, seed)
            assert cached == direct


@pytest.mark.parametrize(
    ("nodes", "pods", "seed"), [(300, 2000, 0), (300, 2000, 1), (120, 3000, 2)]
)
def test_cache_gives_the_direct_binds_on_the_bench_cluster(
    nodes: int, pods: int, seed: int
) -> None:
    """Beyond 100 nodes (the feasible-node search stops early and rotates), and once with
    more pods than fit (fit errors, unready gangs)."""
    objs = synthetic_cluster(nodes, pods, seed)
    for configuration in (default_conf(), HELM):
        cached, direct = _both(objs, configuration, seed)
        assert cached["binds"]
        assert cached == direct
