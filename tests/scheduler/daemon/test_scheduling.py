"""The live scheduler against the in-process API server: gangs bound as units, pending
gangs explained in PodGroup conditions and events, failed binds retried, status and
events written, and the explanation the same words ``lahar schedule -o text`` gives."""

from __future__ import annotations

from pathlib import Path

import lightkube

from lahar.scheduler.daemon.cache import PODGROUPS, PODS, QUEUES
from lahar.scheduler.explain import explain_text
from lahar.scheduler.framework.conf import default_conf
from lahar.scheduler.run import run_session
from lahar.scheduler.snapshot import build_cluster
from tests.scheduler.daemon.conftest import (
    Switch,
    events,
    eventually,
    gang,
    get,
    node,
    pod,
    podgroup,
    pods_on_nodes,
    queue,
    running,
)


def condition(pg: dict, ctype: str) -> dict | None:
    for cond in (pg.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


async def test_gang_bound_as_a_unit_and_the_rest_explained(
    client: lightkube.AsyncClient, switch: Switch
) -> None:
    await node(client, "n1", cpu="4")
    await node(client, "n2", cpu="4")
    await gang(client, "big", 5)  # 5 x 1 cpu: fits on 8 cpus
    await gang(client, "late", 4)  # 4 more: only 3 left, must not be bound at all
    async with running(client) as daemon:

        async def big_bound() -> bool:
            placed = await pods_on_nodes(client)
            return all(placed[f"big-{i}"] for i in range(5))

        await eventually(big_bound)

        async def late_explained() -> dict | None:
            pg = await get(client, PODGROUPS.path("default", "late"))
            cond = condition(pg, "Unschedulable")
            return pg if cond and "gang short by 4 tasks" in cond.get("message", "") else None

        late = await eventually(late_explained)
        await eventually(lambda: daemon.scheduler.cycles >= 3)
        placed = await pods_on_nodes(client)
        assert not any(placed[f"late-{i}"] for i in range(4)), placed
        assert len(switch.binds()) == 5  # one call per pod of the gang that fits, no more

    # the condition carries the same words `lahar schedule -o text` prints
    cond = condition(late, "Unschedulable")
    assert cond is not None and cond["status"] == "True"
    assert late["status"]["phase"] == "Inqueue"
    objects = []
    for path, kind in (
        ("/api/v1/nodes", "Node"),
        (PODS.path("default"), "Pod"),
        (PODGROUPS.path("default"), "PodGroup"),
        (QUEUES.path(), "Queue"),
    ):
        objects += [{**o, "kind": kind} for o in (await get(client, path))["items"]]
    _ssn, result = run_session(build_cluster(objects), default_conf())
    text = explain_text(result.pod_groups, {})
    assert f"PodGroup default/late (Inqueue): {cond['reason']}: {cond['message']}" in text

    big = await get(client, PODGROUPS.path("default", "big"))
    assert big["status"]["phase"] == "Running"
    sched = condition(big, "Scheduled")
    assert sched and sched["reason"] == "tasks in gang are ready to be scheduled"
    assert condition(big, "Unschedulable") is None

    seen = await events(client)
    by = {(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"]): e for e in seen}
    for i in range(5):
        ev = by[("Pod", f"big-{i}", "Scheduled")]
        assert ev["type"] == "Normal"
        assert ev["message"].startswith(f"Successfully assigned default/big-{i} to n")
        assert ev["source"]["component"] == "volcano"
    assert by[("PodGroup", "big", "Scheduled")]["type"] == "Normal"
    warn = by[("PodGroup", "late", "Unschedulable")]
    assert warn["type"] == "Warning" and warn["message"] == cond["message"]
    for i in range(4):
        assert by[("Pod", f"late-{i}", "FailedScheduling")]["message"] == cond["message"]
    for i in range(4):
        late_pod = await get(client, PODS.path("default", f"late-{i}"))
        conds = {c["type"]: c for c in late_pod["status"].get("conditions") or []}
        assert conds["PodScheduled"]["status"] == "False"
        assert conds["PodScheduled"]["reason"] == "Unschedulable"
        assert conds["PodScheduled"]["message"] == cond["message"]
    bound_pod = await get(client, PODS.path("default", "big-0"))
    conds = {c["type"]: c for c in bound_pod["status"].get("conditions") or []}
    assert conds.get("PodScheduled", {}).get("status") in (None, "True")
    # events are not repeated every cycle: one Event each, count 1
    assert by[("PodGroup", "late", "Unschedulable")].get("count", 1) == 1


async def test_failed_bind_is_retried_and_the_rest_of_the_gang_stays(
    client: lightkube.AsyncClient, switch: Switch
) -> None:
    await node(client, "n1", cpu="8")
    failed: list[str] = []

    def fail_first_bind_of_g1(scope: dict) -> int | None:
        path = scope["path"]
        if scope["method"] == "POST" and path.endswith("/pods/g-1/binding") and not failed:
            failed.append(path)
            return 500
        return None

    switch.fail = fail_first_bind_of_g1
    await gang(client, "g", 3)
    async with running(client):

        async def all_bound() -> bool:
            return all((await pods_on_nodes(client)).values())

        await eventually(all_bound)
    assert failed, "the failure was not injected"
    binds = switch.binds()
    assert sum(p.endswith("/g-1/binding") for p in binds) == 2  # failed once, retried once
    assert sum(p.endswith("/g-0/binding") for p in binds) == 1
    assert sum(p.endswith("/g-2/binding") for p in binds) == 1
    seen = await events(client)
    fails = [
        e
        for e in seen
        if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "g-1"
    ]
    assert fails and "failed to bind to node n1" in fails[0]["message"]
    assert fails[0]["type"] == "Warning"


async def test_queue_status_allocated_and_counts(client: lightkube.AsyncClient) -> None:
    await node(client, "n1", cpu="8", memory="16Gi")
    await queue(client, "team")
    await podgroup(client, "a", 2, queue="team")
    for i in range(2):
        await pod(client, f"a-{i}", "a", cpu="1500m", memory="1Gi")
    await podgroup(client, "huge", 1, queue="team")
    await pod(client, "huge-0", "huge", cpu="64")
    async with running(client):

        async def allocated() -> dict | None:
            q = await get(client, QUEUES.path(None, "team"))
            status = q.get("status") or {}
            if (status.get("allocated") or {}).get("cpu") == "3" and status.get("running") == 1:
                return status
            return None

        status = await eventually(allocated)
    assert status["allocated"]["memory"] == "2Gi"
    assert status["allocated"]["pods"] == "2"
    assert status["inqueue"] == 1 and status["pending"] == 0
    assert status["unknown"] == 0 and status["completed"] == 0
    assert "state" not in status or status["state"] in ("Open", None)


RECLAIM_CONF = """\
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


async def test_reclaim_evicts_through_the_eviction_subresource(
    client: lightkube.AsyncClient, switch: Switch, tmp_path: Path
) -> None:
    from lahar.kube import rest
    from tests.scheduler.daemon.conftest import fast_options

    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(RECLAIM_CONF)
    await node(client, "n1", cpu="4", memory="8Gi")
    await queue(client, "q1")
    await queue(client, "q2")
    await podgroup(client, "a", 1, queue="q1")
    for i in range(4):
        await pod(client, f"a-{i}", "a")
    async with running(client, fast_options(scheduler_conf=str(conf))) as daemon:

        async def a_bound() -> bool:
            placed = await pods_on_nodes(client)
            return all(placed[f"a-{i}"] for i in range(4))

        await eventually(a_bound)
        for i in range(4):  # a node agent would report them running
            await rest.request(
                client,
                "PATCH",
                PODS.path("default", f"a-{i}", "status"),
                body={"status": {"phase": "Running"}},
                content_type="application/merge-patch+json",
            )
        await podgroup(client, "b", 2, queue="q2")
        for i in range(2):
            await pod(client, f"b-{i}", "b")

        def evictions() -> list[str]:
            return [p for m, p in switch.requests if m == "POST" and p.endswith("/eviction")]

        await eventually(lambda: len(evictions()) >= 2)

        async def evict_events() -> list[dict]:
            seen = await events(client)
            found = [e for e in seen if e["reason"] == "Evict"]
            return found if len(found) >= 3 else []

        found = await eventually(evict_events)

        async def nominated() -> bool:
            items = (await get(client, PODS.path("default")))["items"]
            return any((p.get("status") or {}).get("nominatedNodeName") == "n1" for p in items)

        await eventually(nominated)
        cycles = daemon.scheduler.cycles + 5
        await eventually(lambda: daemon.scheduler.cycles >= cycles)
        reg = daemon.metrics.registry
        assert (
            reg.get_sample_value("volcano_eviction_transactions_total", {"action": "reclaim"}) == 2
        )
    # exactly two victims (a gang keeps minMember 1; q2 deserves half the node), once each
    victims = [p.rsplit("/", 2)[-2] for p in evictions()]
    assert len(victims) == 2 and len(set(victims)) == 2
    assert all(v.startswith("a-") for v in victims)
    for name in victims:
        gone = await rest.request(client, "GET", PODS.path("default"))
        left = {p["metadata"]["name"]: p for p in gone["items"]}
        assert name not in left or left[name]["metadata"].get("deletionTimestamp")
    by_kind = {(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["type"]) for e in found}
    for name in victims:
        assert ("Pod", name, "Warning") in by_kind
    pg = [e for e in found if e["involvedObject"]["kind"] == "PodGroup"]
    assert pg and all(e["message"] == "reclaim" and e["type"] == "Normal" for e in pg)
    assert sum(e.get("count", 1) for e in pg) == 2


async def test_podgroup_in_a_missing_queue_is_explained(client: lightkube.AsyncClient) -> None:
    await node(client, "n1")
    await podgroup(client, "lost", 1, queue="nowhere")
    await pod(client, "lost-0", "lost")
    async with running(client):

        async def explained() -> dict | None:
            pg = await get(client, PODGROUPS.path("default", "lost"))
            return condition(pg, "Unschedulable")

        cond = await eventually(explained)
    assert cond["reason"] == "QueueNotFound"
    assert cond["message"] == "not scheduled: queue nowhere does not exist"
    assert not (await pods_on_nodes(client))["lost-0"]
