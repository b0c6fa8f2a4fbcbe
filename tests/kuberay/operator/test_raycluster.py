"""The RayCluster reconciler against the embedded API server, one pass at a time."""

from __future__ import annotations

from typing import Any

from lahar.kuberay.operator import kinds
from lahar.kuberay.render import render
from tests.kuberay.operator.conftest import NS, Harness, cluster_body

Obj = dict[str, Any]
IGNORED = {"name", "uid", "generateName", "resourceVersion", "creationTimestamp", "status"}


def subset(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where ``expected`` is not contained in ``actual`` (names and uids ignored)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: {actual!r} is not a map"]
        out: list[str] = []
        for key, value in expected.items():
            if key in IGNORED:
                continue
            if key not in actual:
                out.append(f"{path}.{key}: missing")
            else:
                out += subset(value, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            return [f"{path}: {expected!r} != {actual!r}"]
        return [e for i, v in enumerate(expected) for e in subset(v, actual[i], f"{path}[{i}]")]
    return [] if expected == actual else [f"{path}: {expected!r} != {actual!r}"]


async def test_first_pass_creates_what_render_defines(harness: Harness) -> None:
    world = harness.world
    body = cluster_body("two")
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    await world.create(kinds.RAYCLUSTERS, body)
    await harness.cluster("two")
    expected = render(await world.get(kinds.RAYCLUSTERS, "two"))
    svc = await world.get(kinds.SERVICES, "two-head-svc")
    assert svc is not None
    want_svc = next(o for o in expected.objects if o["kind"] == "Service")
    assert subset(want_svc, svc) == []
    pods = await world.list(kinds.PODS, "ray.io/cluster=two")
    heads = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    workers = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    assert len(heads) == 1 and len(workers) == 2
    want_pods = [o for o in expected.objects if o["kind"] == "Pod"]
    want_head = next(p for p in want_pods if p["metadata"]["labels"]["ray.io/node-type"] == "head")
    assert subset(want_head, heads[0]) == []
    want_workers = [p for p in want_pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    by_index = {w["metadata"]["labels"]["ray.io/worker-group-replica-index"]: w for w in workers}
    for want in want_workers:
        got = by_index[want["metadata"]["labels"]["ray.io/worker-group-replica-index"]]
        assert subset(want, got) == []
    assert heads[0]["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


async def test_status_follows_pods_and_is_written_only_on_change(harness: Harness) -> None:
    world = harness.world
    await world.create(kinds.RAYCLUSTERS, cluster_body())
    result = await harness.cluster()
    assert result.requeue_after == 2.0  # the status changed
    live = await harness.ready_cluster("demo")
    status = live["status"]
    assert status["state"] == "ready"
    assert status["availableWorkerReplicas"] == 1 and status["readyWorkerReplicas"] == 1
    assert status["desiredWorkerReplicas"] == 1
    assert status["desiredCPU"] == "2" and status["desiredMemory"] == "3Gi"
    (head,) = await world.list(kinds.PODS, "ray.io/node-type=head")
    assert status["head"]["podIP"] == head["status"]["podIP"]
    assert status["head"]["serviceIP"] == head["status"]["podIP"]  # headless head Service
    assert status["head"]["serviceName"] == "demo-head-svc"
    assert status["endpoints"]["dashboard"] == "8265"
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["HeadPodReady"]["status"] == "True"
    assert conds["RayClusterProvisioned"]["status"] == "True"
    assert status["observedGeneration"] == live["metadata"]["generation"]
    writes = harness.op.clusters.status_writes
    for _ in range(3):
        result = await harness.cluster()
        assert result.requeue_after == 300.0
    assert harness.op.clusters.status_writes == writes


async def test_scale_up_down_and_workers_to_delete(harness: Harness) -> None:
    world = harness.world
    await world.create(kinds.RAYCLUSTERS, cluster_body())
    await harness.ready_cluster("demo")

    async def workers() -> list[Obj]:
        return await world.list(kinds.PODS, "ray.io/node-type=worker")

    await world.patch(kinds.RAYCLUSTERS, "demo", {"spec": {"workerGroupSpecs": [
        dict(cluster_body()["spec"]["workerGroupSpecs"][0], replicas=3)]}})  # fmt: skip
    await harness.cluster()
    pods = await workers()
    assert len(pods) == 3
    indexes = sorted(p["metadata"]["labels"]["ray.io/worker-group-replica-index"] for p in pods)
    assert indexes == ["0", "1", "2"]
    await world.run_pods()
    victim = pods[0]["metadata"]["name"]
    group = dict(cluster_body()["spec"]["workerGroupSpecs"][0], replicas=3)
    group["scaleStrategy"] = {"workersToDelete": [victim]}
    await world.patch(kinds.RAYCLUSTERS, "demo", {"spec": {"workerGroupSpecs": [group]}})
    await harness.cluster()
    names = {p["metadata"]["name"] for p in await workers()}
    assert victim not in names and len(names) == 3  # replaced: replicas is still 3
    group = dict(cluster_body()["spec"]["workerGroupSpecs"][0], replicas=1)
    await world.patch(kinds.RAYCLUSTERS, "demo", {"spec": {"workerGroupSpecs": [group]}})
    await harness.cluster()
    assert len(await workers()) == 1
    events = await world.list(kinds.Resource("", "v1", "events", "Event"))
    reasons = {e["reason"] for e in events}
    assert {"CreatedHeadPod", "CreatedWorkerPod", "DeletedWorkerPod", "CreatedService"} <= reasons


async def test_stale_cache_never_creates_extra_pods(harness: Harness) -> None:
    world = harness.world
    group = dict(cluster_body()["spec"]["workerGroupSpecs"][0], replicas=3)
    await world.create(kinds.RAYCLUSTERS, cluster_body(workerGroupSpecs=[group]))
    await harness.sync()
    pod_informer = next(i for i in harness.op.manager.informers if i.resource == kinds.PODS)
    await pod_informer.stop()  # the cache freezes: it will not see the pods being created
    for _ in range(4):
        await harness.cluster()  # syncs every cache but the frozen one
    assert len(await world.list(kinds.PODS)) == 4  # 1 head + 3 workers, not 4 x 4
    assert harness.ctx.expectations.pending(NS, "demo") == 4
    pod_informer.start()
    await harness.cluster()
    assert len(await world.list(kinds.PODS)) == 4
    assert harness.ctx.expectations.pending(NS, "demo") == 0
    # and deletions: scale to 0 with a frozen cache deletes each pod once
    await harness.sync()
    await pod_informer.stop()
    group["replicas"] = 0
    await world.patch(kinds.RAYCLUSTERS, "demo", {"spec": {"workerGroupSpecs": [group]}})
    for _ in range(3):
        await harness.cluster()
    assert len(await world.list(kinds.PODS, "ray.io/node-type=worker")) == 0
    pod_informer.start()
    await harness.cluster()
    assert len(await world.list(kinds.PODS)) == 1


async def test_suspend_and_resume(harness: Harness) -> None:
    world = harness.world
    await world.create(kinds.RAYCLUSTERS, cluster_body())
    await harness.ready_cluster("demo")
    await world.patch(kinds.RAYCLUSTERS, "demo", {"spec": {"suspend": True}})
    await harness.cluster()  # Suspending=True is written first
    live = await world.get(kinds.RAYCLUSTERS, "demo")
    conds = {c["type"]: c["status"] for c in live["status"]["conditions"]}
    assert conds["RayClusterSuspending"] == "True"
    assert len(await world.list(kinds.PODS)) == 2
    await harness.cluster()  # deletes every pod
    from tests.kuberay.operator.conftest import eventually

    await eventually(lambda: _no_pods(world))
    await harness.cluster()
    live = await world.get(kinds.RAYCLUSTERS, "demo")
    conds = {c["type"]: c["status"] for c in live["status"]["conditions"]}
    assert conds["RayClusterSuspended"] == "True" and conds["RayClusterSuspending"] == "False"
    assert conds["RayClusterProvisioned"] == "False"
    assert live["status"]["state"] == "suspended"
    await world.patch(kinds.RAYCLUSTERS, "demo", {"spec": {"suspend": False}})
    live = await harness.ready_cluster("demo")
    conds = {c["type"]: c["status"] for c in live["status"]["conditions"]}
    assert conds["RayClusterSuspended"] == "False" and conds["RayClusterProvisioned"] == "True"


async def _no_pods(world: Any) -> bool:
    return not await world.list(kinds.PODS)


async def test_failed_head_is_replaced_pending_is_not(harness: Harness) -> None:
    world = harness.world
    await world.create(kinds.RAYCLUSTERS, cluster_body())
    await harness.cluster()
    for _ in range(2):
        await harness.cluster()  # Pending pods are never replaced
    (head,) = await world.list(kinds.PODS, "ray.io/node-type=head")
    await world.patch(
        kinds.PODS, head["metadata"]["name"], {"status": {"phase": "Failed"}}, "status"
    )
    try:
        await harness.cluster()
    except Exception as exc:
        assert "recreated" in str(exc)
    from tests.kuberay.operator.conftest import eventually

    async def replaced() -> bool:
        await harness.cluster()
        heads = await world.list(kinds.PODS, "ray.io/node-type=head")
        return len(heads) == 1 and heads[0]["metadata"]["name"] != head["metadata"]["name"]

    await eventually(replaced)


async def test_volcano_podgroup_before_pods(volcano_harness: Harness) -> None:
    world = volcano_harness.world
    labels = {"volcano.sh/queue-name": "q1"}
    body = cluster_body()
    body["metadata"]["labels"] = labels
    await world.create(kinds.RAYCLUSTERS, body)
    await volcano_harness.cluster()
    pg = await world.get(kinds.PODGROUPS, "ray-demo-pg")
    assert pg is not None
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["queue"] == "q1"
    assert pg["spec"]["minResources"] == {"cpu": "2", "memory": "3Gi"}
    for pod in await world.list(kinds.PODS):
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-demo-pg"
        assert pod["metadata"]["labels"]["volcano.sh/queue-name"] == "q1"
    # scaling re-sizes the PodGroup
    group = dict(cluster_body()["spec"]["workerGroupSpecs"][0], replicas=3)
    await world.patch(kinds.RAYCLUSTERS, "demo", {"spec": {"workerGroupSpecs": [group]}})
    await volcano_harness.cluster()
    pg = await world.get(kinds.PODGROUPS, "ray-demo-pg")
    assert pg["spec"]["minMember"] == 4


async def test_autoscaler_rbac_skipped_when_not_served(harness: Harness) -> None:
    assert "Role" not in harness.ctx.served_rbac  # lahar's embedded server has no RBAC kinds
    await harness.world.create(kinds.RAYCLUSTERS, cluster_body(enableInTreeAutoscaling=True))
    await harness.cluster()
    assert await harness.world.get(kinds.SERVICEACCOUNTS, "demo") is not None
    assert len(await harness.world.list(kinds.PODS, "ray.io/node-type=head")) == 1


async def test_metrics_use_kuberay_names(harness: Harness) -> None:
    await harness.world.create(kinds.RAYCLUSTERS, cluster_body())
    await harness.ready_cluster("demo")
    from prometheus_client import generate_latest

    text = generate_latest(harness.ctx.metrics.registry).decode()
    assert 'kuberay_cluster_info{name="demo",namespace="default",owner_kind="None"} 1.0' in text
    assert 'kuberay_cluster_condition_provisioned{condition="true",name="demo"' in text
    assert "kuberay_cluster_provisioned_duration_seconds{" in text


async def test_multi_host_replicas_are_made_and_broken_whole(harness: Harness) -> None:
    world = harness.world
    group = dict(cluster_body()["spec"]["workerGroupSpecs"][0], replicas=2, numOfHosts=2)
    await world.create(kinds.RAYCLUSTERS, cluster_body(workerGroupSpecs=[group]))
    await harness.cluster()
    assert await world.get(kinds.SERVICES, "demo-headless") is not None
    workers = await world.list(kinds.PODS, "ray.io/node-type=worker")
    assert len(workers) == 4
    replicas: dict[str, list[str]] = {}
    for pod in workers:
        labels = pod["metadata"]["labels"]
        replicas.setdefault(labels["ray.io/worker-group-replica-name"], []).append(
            labels["ray.io/replica-host-index"]
        )
    assert sorted(sorted(v) for v in replicas.values()) == [["0", "1"], ["0", "1"]]
    await harness.cluster()  # the cache has seen the creates: expectations met
    # one host of a replica is lost: the rest of that replica goes, then it is rebuilt
    await kinds.delete(harness.client, kinds.PODS, NS, workers[0]["metadata"]["name"])
    broken = workers[0]["metadata"]["labels"]["ray.io/worker-group-replica-name"]
    try:
        await harness.cluster()
    except Exception as exc:
        assert "incomplete" in str(exc)
    await harness.cluster()
    workers = await world.list(kinds.PODS, "ray.io/node-type=worker")
    names = {p["metadata"]["labels"]["ray.io/worker-group-replica-name"] for p in workers}
    assert len(workers) == 4 and broken not in names and len(names) == 2
