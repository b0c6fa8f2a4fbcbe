"""allocate (and its companions enqueue/backfill in the default pipeline), from §4.2."""

from __future__ import annotations

from tests.scheduler.builders import conf, gang, node, pod, podgroup, queue, schedule

TIER1 = ["priority", "gang", "conformance"]
TIER2 = ["drf", "proportion"]
ALLOC = conf("enqueue, allocate, backfill", TIER1, TIER2)


def test_gang_all_or_nothing_when_cluster_too_small() -> None:
    result = schedule([node("n1", cpu="2"), node("n2", cpu="2"), *gang("g", 5)], ALLOC)
    assert result.binds == {}
    assert result.pipelined == {}
    info = result.pod_groups["default/g"]
    assert info["phase"] == "Inqueue"
    assert info["reason"] == "Unschedulable"
    assert "gang short by 5 tasks" in info["message"]


def test_gang_fits_exactly_binds_every_member() -> None:
    result = schedule([node("n1", cpu="2"), node("n2", cpu="2"), *gang("g", 4)], ALLOC)
    assert sorted(result.binds) == [f"default/g-{i}" for i in range(4)]
    for n in ("n1", "n2"):
        assert list(result.binds.values()).count(n) == 2


def test_elastic_tasks_beyond_min_member_are_added() -> None:
    result = schedule([node("n1", cpu="8"), *gang("g", 4, min_member=2)], ALLOC)
    assert len(result.binds) == 4


def test_partial_gang_not_bound_but_other_gang_is() -> None:
    objs = [node("n1", cpu="3"), *gang("big", 4), *gang("small", 2, created="2026-01-02T00:00:00Z")]
    result = schedule(objs, ALLOC)
    assert sorted(result.binds) == ["default/small-0", "default/small-1"]
    assert result.pod_groups["default/big"]["reason"] == "Unschedulable"


def test_pipelining_onto_releasing_resources() -> None:
    objs = [
        node("n1", cpu="2"),
        podgroup("old", 1, phase="Running"),
        pod("old-0", "old", cpu="2", node_name="n1", deleting=True),
        *gang("new", 1, cpu="2", phase="Inqueue"),
    ]
    result = schedule(objs, ALLOC)
    assert result.binds == {}
    assert result.pipelined == {"default/new-0": "n1"}
    assert result.pod_groups["default/new"]["reason"] == "Pipelined"


def test_fit_errors_summarised_like_kube_scheduler() -> None:
    objs = [node("n1", cpu="1"), node("n2", cpu="1", memory="100Mi"), *gang("g", 1, cpu="2")]
    result = schedule(objs, conf("enqueue, allocate", TIER1, ["drf"]))
    message = result.pod_groups["default/g"]["message"]
    assert "0/2 nodes are available: 2 Insufficient cpu, 1 Insufficient memory." in message


def test_node_without_pods_allocatable_never_fits() -> None:
    n = node("n1", cpu="8")
    del n["status"]["allocatable"]["pods"]
    result = schedule([n, *gang("g", 1)], conf("enqueue, allocate", TIER1, ["drf"]))
    assert result.binds == {}
    assert "Insufficient pods" in result.pod_groups["default/g"]["message"]


def test_enqueue_absent_allocate_promotes_pending_jobs() -> None:
    result = schedule([node("n1"), *gang("g", 1)], conf("allocate", TIER1, TIER2))
    assert result.binds == {"default/g-0": "n1"}


def test_pending_job_not_allocated_when_enqueue_configured_but_rejects() -> None:
    objs = [
        node("n1", cpu="2"),
        queue("q", capability={"cpu": "1"}),
        podgroup("g", 1, queue="q", min_resources={"cpu": "2"}),
        pod("g-0", "g", cpu="2"),
    ]
    result = schedule(objs, ALLOC)
    assert result.binds == {}
    info = result.pod_groups["default/g"]
    assert info["phase"] == "Pending" and info["reason"] == "NotEnqueued"
    assert "queue q resource quota insufficient" in info["message"]


def test_best_effort_tasks_placed_by_backfill() -> None:
    objs = [node("n1", cpu="1", pods="3"), *gang("be", 3, cpu=None, memory=None, phase="Inqueue")]
    result = schedule(objs, conf("enqueue, allocate, backfill", TIER1, ["drf"]))
    assert len(result.binds) == 3


def test_best_effort_respects_pod_count() -> None:
    objs = [node("n1", pods="2"), *gang("be", 3, min_member=1, cpu=None, memory=None)]
    result = schedule(objs, conf("enqueue, allocate, backfill", TIER1, ["drf"]))
    assert len(result.binds) == 2


def test_proportion_caps_queue_at_deserved_while_other_queue_waits() -> None:
    objs = [
        node("n1", cpu="4", memory="64Gi"),
        queue("a"),
        queue("b"),
        *gang("ga", 4, min_member=1, queue="a"),
        *gang("gb", 4, min_member=1, queue="b"),
    ]
    result = schedule(objs, ALLOC)
    placed = [k.split("/")[1][:2] for k in result.binds]
    assert placed.count("ga") == 2 and placed.count("gb") == 2


def test_closed_queue_admits_job_without_min_resources_but_allocates_nothing() -> None:
    objs = [node("n1"), queue("q", state="Closed"), *gang("g", 1, queue="q")]
    result = schedule(objs, ALLOC)
    assert result.pod_groups["default/g"]["phase"] == "Inqueue"  # enqueue admits it
    assert result.binds == {}  # proportion's Allocatable requires Open
    assert "queue q is Closed" in result.pod_groups["default/g"]["message"]


def test_seed_changes_only_tie_breaks_and_same_seed_is_stable() -> None:
    objs = [node(f"n{i}") for i in range(6)] + gang("g", 3)
    first = schedule(objs, ALLOC, seed=3)
    assert schedule(objs, ALLOC, seed=3).binds == first.binds
    assert len(first.binds) == 3
