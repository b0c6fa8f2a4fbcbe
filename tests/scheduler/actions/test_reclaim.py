"""reclaim: cross-queue reclaim from overused, reclaimable queues (§4.5)."""

from __future__ import annotations

from tests.scheduler.builders import conf, node, pod, podgroup, queue, schedule

RECLAIM = conf(
    "enqueue, allocate, reclaim", ["priority", "gang", "conformance"], ["drf", "proportion"]
)


def lender(q: str = "a", n: int = 4, *, phase: str = "Running", reclaimable: bool | None = None):
    return [
        queue(q, reclaimable=reclaimable),
        podgroup("ga", 1, phase="Running", queue=q),
        *[pod(f"ga-{i}", "ga", cpu="1", node_name="n1", phase=phase) for i in range(n)],
    ]


def borrower(q: str = "b"):
    return [queue(q), podgroup("gb", 1, phase="Inqueue", queue=q), pod("gb-0", "gb", cpu="1")]


def test_reclaims_from_overused_queue() -> None:
    result = schedule([node("n1", cpu="4"), *lender(), *borrower()], RECLAIM)
    assert len(result.evictions) == 1 and result.evictions[0].startswith("default/ga-")
    assert result.pipelined == {"default/gb-0": "n1"}


def test_not_from_unreclaimable_queue() -> None:
    result = schedule([node("n1", cpu="4"), *lender(reclaimable=False), *borrower()], RECLAIM)
    assert result.evictions == []


def test_bound_tasks_are_not_reclaimed() -> None:
    result = schedule([node("n1", cpu="4"), *lender(phase="Pending"), *borrower()], RECLAIM)
    assert result.evictions == []


def test_not_from_queue_within_its_deserved_share() -> None:
    # a uses 2 of 4 cpu, its deserved half: nothing to take back
    objs = [node("n1", cpu="4", memory="64Gi"), *lender(n=2), *borrower()]
    objs.append(pod("gb-1", "gb", cpu="3"))
    result = schedule(objs, RECLAIM)
    assert result.evictions == []


def test_without_starving_fn_nothing_happens() -> None:
    no_gang = conf("enqueue, allocate, reclaim", ["conformance"], ["drf", "proportion"])
    result = schedule([node("n1", cpu="4"), *lender(), *borrower()], no_gang)
    assert result.evictions == []


PROPORTION_CHOOSES = conf(
    "enqueue, allocate, reclaim",
    [
        "priority",
        {"name": "gang", "enableReclaimable": False},
        {"name": "conformance", "enableReclaimable": False},
    ],
    ["drf", "proportion"],
)


def test_proportion_protects_queue_at_its_deserved_share() -> None:
    objs = [
        node("n1", cpu="4", memory="64Gi"),
        pod("other", cpu="2", node_name="n1", scheduler="default-scheduler"),
        *lender(n=2),
        queue("b"),
        podgroup("gb", 1, phase="Inqueue", queue="b"),
        pod("gb-0", "gb", cpu="2"),
    ]
    assert schedule(objs, PROPORTION_CHOOSES).evictions == []


def test_proportion_takes_only_the_excess() -> None:
    objs = [node("n1", cpu="4", memory="64Gi"), *lender(n=4), *borrower()]
    result = schedule(objs, PROPORTION_CHOOSES)
    assert len(result.evictions) == 1
