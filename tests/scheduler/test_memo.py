"""The parse memo (lahar.scheduler.memo) gives the same session input as no memo."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest

from lahar.scheduler.api.resources import ResourceSpace
from lahar.scheduler.memo import ParseMemo
from lahar.scheduler.snapshot import SnapshotError, build_cluster
from tests.scheduler.builders import node, pod, podgroup

CPUS = ("100m", "250m", "1", "2", "1500m", "0.5")
MEMS = ("128Mi", "1Gi", "512Mi", "2G", "3Gi")


def _versioned(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    md = obj["metadata"]
    md.setdefault("uid", f"uid-{obj['kind']}-{md['name']}")
    md["resourceVersion"] = str(rv)
    return obj


def _summary(objects: list[dict[str, Any]], memo: ParseMemo | None) -> dict[str, Any]:
    cluster = build_cluster(objects, memo=memo)
    tasks = {t.uid: t.resreq.tolist() for job in cluster.jobs.values() for t in job.tasks.values()}
    tasks.update({t.uid: t.resreq.tolist() for t in cluster.other_tasks})
    return {
        "names": list(cluster.space.names),
        "alloc": cluster.nodes.allocatable.tolist(),
        "used": cluster.nodes.used.tolist(),
        "tasks": tasks,
        "min": {
            k: None if j.min_resources is None else j.min_resources.tolist()
            for k, j in cluster.jobs.items()
        },
    }


def test_changed_pod_is_read_again() -> None:
    memo = ParseMemo()
    nodes = [_versioned(node("n1", cpu="8"), 1)]
    p = _versioned(pod("a", "g", cpu="1"), 2)
    pg = _versioned(podgroup("g"), 3)
    first = build_cluster([*nodes, pg, p], memo=memo)
    cpu = first.space.index["cpu"]
    assert first.jobs["default/g"].tasks[p["metadata"]["uid"]].resreq[cpu] == 1000
    changed = copy.deepcopy(p)
    changed["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    changed["metadata"]["resourceVersion"] = "4"
    second = build_cluster([*nodes, pg, changed], memo=memo)
    assert second.jobs["default/g"].tasks[p["metadata"]["uid"]].resreq[cpu] == 3000
    assert memo.misses >= 2


def test_same_version_is_not_read_again_and_copies_are_handed_out() -> None:
    memo = ParseMemo()
    objects = [_versioned(node("n1"), 1), _versioned(podgroup("g"), 2)]
    objects.append(_versioned(pod("a", "g"), 3))
    build_cluster(objects, memo=memo)
    misses = memo.misses
    c1 = build_cluster(objects, memo=memo)
    assert memo.misses == misses and memo.hits > 0
    task = next(iter(c1.jobs["default/g"].tasks.values()))
    task.resreq[:] = -1  # a session changing its own vector does not reach the memo
    c2 = build_cluster(objects, memo=memo)
    assert (next(iter(c2.jobs["default/g"].tasks.values())).resreq >= 0).all()


def test_new_resource_name_rebuilds_vectors() -> None:
    memo = ParseMemo()
    p = _versioned(pod("a", "g"), 3)
    pg = _versioned(podgroup("g"), 2)
    build_cluster([_versioned(node("n1"), 1), pg, p], memo=memo)
    gpu_node = _versioned(node("n2", extra={"nvidia.com/gpu": "4"}), 5)
    cluster = build_cluster([_versioned(node("n1"), 1), gpu_node, pg, p], memo=memo)
    assert "nvidia.com/gpu" in cluster.space.names
    task = next(iter(cluster.jobs["default/g"].tasks.values()))
    assert task.resreq.shape == (cluster.space.size,)


def test_unused_entries_are_dropped() -> None:
    memo = ParseMemo()
    pg = _versioned(podgroup("g"), 2)
    build_cluster([_versioned(node("n1"), 1), pg, _versioned(pod("a", "g"), 3)], memo=memo)
    full = len(memo)
    build_cluster([_versioned(node("n1"), 1), pg], memo=memo)
    build_cluster([_versioned(node("n1"), 1), pg], memo=memo)
    assert len(memo) < full


def test_objects_without_version_are_not_memoised() -> None:
    memo = ParseMemo()
    build_cluster([node("n1"), podgroup("g"), pod("a", "g")], memo=memo)
    assert len(memo) == 0


def test_bad_quantity_still_refused_with_memo() -> None:
    memo = ParseMemo()
    bad = _versioned(pod("a", "g", cpu="-1"), 3)
    with pytest.raises(SnapshotError, match="must not be negative"):
        build_cluster([_versioned(node("n1"), 1), _versioned(podgroup("g"), 2), bad], memo=memo)
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "x1"
    bad["metadata"]["resourceVersion"] = "9"
    with pytest.raises(SnapshotError):
        build_cluster([_versioned(node("n1"), 1), _versioned(podgroup("g"), 2), bad], memo=memo)


def test_vector_fast_path_matches_exact_reading() -> None:
    space = ResourceSpace(["nvidia.com/gpu"])
    lists = [{"cpu": c, "memory": m, "nvidia.com/gpu": "1"} for c in CPUS for m in MEMS]
    lists.append({"cpu": 2, "memory": 1.5, "ephemeral-storage": "1Ki"})
    for resources in lists:
        fast = space.vector(resources)
        again = space.vector(resources)
        assert np.array_equal(fast, again)
    assert space.vector({"cpu": "1500m"})[space.index["cpu"]] == 1500
    assert space.vector({"cpu": "0.0001"})[space.index["cpu"]] == 1  # rounded up


@pytest.mark.parametrize("seed", range(5))
def test_random_changes_match_uncached_build(seed: int) -> None:
    rng = random.Random(seed)
    rv = iter(range(1, 10**6))
    nodes = [
        _versioned(node(f"n{i}", cpu=str(rng.choice((4, 8, 16))), memory="32Gi"), next(rv))
        for i in range(6)
    ]
    groups = [_versioned(podgroup(f"g{i}", rng.randint(1, 3)), next(rv)) for i in range(4)]
    pods = [
        _versioned(
            pod(f"p{i}", f"g{rng.randrange(4)}", cpu=rng.choice(CPUS), memory=rng.choice(MEMS)),
            next(rv),
        )
        for i in range(20)
    ]
    memo = ParseMemo()
    for _round in range(8):
        objects = [*nodes, *groups, *pods]
        assert _summary(objects, memo) == _summary(copy.deepcopy(objects), None)
        for _change in range(rng.randint(1, 6)):
            what = rng.random()
            if what < 0.5:
                i = rng.randrange(len(pods))
                p = copy.deepcopy(pods[i])
                reqs = p["spec"]["containers"][0]["resources"]["requests"]
                reqs["cpu"], reqs["memory"] = rng.choice(CPUS), rng.choice(MEMS)
                if rng.random() < 0.3:
                    p["spec"]["nodeName"] = rng.choice(nodes)["metadata"]["name"]
                    p["status"]["phase"] = "Running"
                pods[i] = _versioned(p, next(rv))
            elif what < 0.7:
                i = rng.randrange(len(nodes))
                n = copy.deepcopy(nodes[i])
                extra = {"example.com/foo": str(rng.randint(1, 3))} if rng.random() < 0.5 else {}
                n["status"]["allocatable"] = {"cpu": str(rng.randint(2, 32)), "memory": "64Gi"}
                n["status"]["allocatable"].update(extra)
                nodes[i] = _versioned(n, next(rv))
            elif what < 0.85:
                i = rng.randrange(len(groups))
                g = copy.deepcopy(groups[i])
                g["spec"]["minResources"] = {"cpu": rng.choice(CPUS)}
                groups[i] = _versioned(g, next(rv))
            elif pods:
                pods.pop(rng.randrange(len(pods)))
