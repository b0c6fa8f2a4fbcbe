"""Finished RayJobs: shutdown after the TTL, deletion rules and the legacy policy,
the Volcano PodGroup (re-sized, never deleted; no PodGroup for a clusterSelector
RayJob, which is not left stuck in Initializing), and the job metrics."""

from __future__ import annotations

from typing import Any

import pytest

from lahar.kuberay.operator import kinds
from tests.kuberay.operator.conftest import Clock, Harness, job_body
from tests.kuberay.operator.fakeray import FakeRayFleet
from tests.kuberay.operator.steps import complete_http

Obj = dict[str, Any]


async def test_shutdown_after_ttl(harness: Harness, clock: Clock, fleet: FakeRayFleet) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body(submissionMode="HTTPMode", shutdownAfterJobFinishes=True,
                                               ttlSecondsAfterFinished=60))  # fmt: skip
    status = await complete_http(harness, fleet)
    result = await harness.job()
    assert result.requeue_after == pytest.approx(62)
    assert await world.get(kinds.RAYCLUSTERS, status["rayClusterName"]) is not None
    clock.advance(60)
    await harness.job()
    assert await world.get(kinds.RAYCLUSTERS, status["rayClusterName"]) is None
    assert await world.get(kinds.RAYJOBS, "job") is not None


async def test_deletion_rules(harness: Harness, clock: Clock, fleet: FakeRayFleet) -> None:
    world = harness.world
    rules = [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 10}},
    ]
    await world.create(kinds.RAYJOBS, job_body(submissionMode="HTTPMode",
                                               deletionStrategy={"deletionRules": rules}))  # fmt: skip
    status = await complete_http(harness, fleet)
    result = await harness.job()
    assert result.requeue_after == pytest.approx(12)
    cluster = await world.get(kinds.RAYCLUSTERS, status["rayClusterName"])
    assert all(g.get("suspend") for g in cluster["spec"]["workerGroupSpecs"])
    clock.advance(10)
    await harness.job()
    assert await world.get(kinds.RAYCLUSTERS, status["rayClusterName"]) is None


async def test_volcano_podgroup_lifecycle(volcano_harness: Harness, fleet: FakeRayFleet) -> None:
    h, world = volcano_harness, volcano_harness.world
    await world.create(
        kinds.RAYJOBS, job_body(submissionMode="HTTPMode", shutdownAfterJobFinishes=True)
    )
    await h.job()
    await h.job()
    pg = await world.get(kinds.PODGROUPS, "ray-job-pg")
    assert pg["spec"]["minMember"] == 2
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    status = await h.live_status()
    assert await world.get(kinds.PODGROUPS, f"ray-{status['rayClusterName']}-pg") is None
    await complete_http(h, fleet)
    await h.job()  # terminal: TTL 0 deletes the cluster; the PodGroup is re-sized, not deleted
    await h.sync()
    await h.job()
    pg = await world.get(kinds.PODGROUPS, "ray-job-pg")
    assert pg is not None and pg["spec"]["minMember"] == 0


async def test_volcano_cluster_selector_is_not_stuck(volcano_harness: Harness) -> None:
    h, world = volcano_harness, volcano_harness.world
    from tests.kuberay.operator.conftest import cluster_body

    await world.create(kinds.RAYCLUSTERS, cluster_body("shared"))
    await h.ready_cluster("shared")
    body = job_body(submissionMode="HTTPMode", clusterSelector={"ray.io/cluster": "shared"})
    del body["spec"]["rayClusterSpec"]
    await world.create(kinds.RAYJOBS, body)
    await h.job()
    await h.job()
    status = await h.live_status()
    assert status["jobDeploymentStatus"] == "Running" and status["rayClusterName"] == "shared"
    assert await world.get(kinds.PODGROUPS, "ray-job-pg") is None
    assert await world.get(kinds.PODGROUPS, "ray-shared-pg") is not None


async def test_legacy_deletion_policy(harness: Harness, clock: Clock, fleet: FakeRayFleet) -> None:
    strategy = {"onSuccess": {"policy": "DeleteSelf"}, "onFailure": {"policy": "DeleteNone"}}
    await harness.world.create(
        kinds.RAYJOBS, job_body(submissionMode="HTTPMode", deletionStrategy=strategy)
    )
    await complete_http(harness, fleet)
    await harness.job()  # DeleteSelf: the RayJob gets a deletionTimestamp
    await harness.job()  # ... and the next pass drops the finalizer
    await harness.sync()
    assert await harness.world.get(kinds.RAYJOBS, "job") is None


async def test_job_metrics(harness: Harness, fleet: FakeRayFleet) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(submissionMode="HTTPMode"))
    await complete_http(harness, fleet)
    from prometheus_client import generate_latest

    text = generate_latest(harness.ctx.metrics.registry).decode()
    assert 'kuberay_job_info{name="job",namespace="default"} 1.0' in text
    assert (
        'kuberay_job_deployment_status{deployment_status="Complete",name="job",namespace="default"} 1.0'
        in text
    )
    assert 'kuberay_job_execution_duration_seconds{job_deployment_status="Complete"' in text
    assert "lahar_operator_job_submissions_total 1.0" in text


async def test_volcano_cluster_selector_submitter_joins_the_cluster_gang(
    volcano_harness: Harness,
) -> None:
    h, world = volcano_harness, volcano_harness.world
    from tests.kuberay.operator.conftest import cluster_body

    await world.create(kinds.RAYCLUSTERS, cluster_body("shared"))
    await h.ready_cluster("shared")
    body = job_body(clusterSelector={"ray.io/cluster": "shared"})
    del body["spec"]["rayClusterSpec"]
    await world.create(kinds.RAYJOBS, body)
    await h.job()
    await h.job()
    assert (await h.live_status())["jobDeploymentStatus"] == "Running"
    template = (await world.get(kinds.JOBS, "job"))["spec"]["template"]
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-shared-pg"
    assert template["metadata"]["annotations"]["volcano.sh/task-spec"] == "submittergroup"
