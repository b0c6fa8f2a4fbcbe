"""The RayJob state machine, transition by transition, with a controllable clock and
the stand-in dashboard. The tests play the Job controller and the kubelet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightkube
import pytest

from lahar.kube import client as kclient
from lahar.kuberay.operator import kinds
from tests.kuberay.operator.conftest import NS, Clock, Harness, job_body, new_server
from tests.kuberay.operator.fakeray import FakeRayFleet
from tests.kuberay.operator.steps import head_ip, to_running

Obj = dict[str, Any]


async def test_new_writes_ids_before_any_child(harness: Harness, clock: Clock) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body())
    await harness.job()
    job = await harness.world.get(kinds.RAYJOBS, "job")
    status = job["status"]
    assert status["jobDeploymentStatus"] == "Initializing"
    assert status["jobId"].startswith("job-") and len(status["jobId"]) == 9
    assert status["rayClusterName"].startswith("job-")
    assert status["startTime"] == kinds.rfc3339(clock.now)
    assert "ray.io/rayjob-finalizer" in job["metadata"]["finalizers"]
    assert await harness.world.list(kinds.RAYCLUSTERS) == []


async def test_k8s_job_mode_happy_path(harness: Harness, clock: Clock, fleet: FakeRayFleet) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body())
    status = await to_running(harness)
    assert (
        status["dashboardURL"]
        == f"{status['rayClusterName']}-head-svc.default.svc.cluster.local:8265"
    )
    submitter = await world.get(kinds.JOBS, "job")
    assert submitter is not None
    assert submitter["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert await world.get(kinds.SERVICES, "job-head-svc") is None  # made by the Running branch
    # the submitter has not submitted yet: the Ray job is unknown -> stay Running, no write
    await harness.job()
    assert await world.get(kinds.SERVICES, "job-head-svc") is not None
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Running" and status["jobStatus"] == ""
    # play the submitter: submit through the dashboard, then Ray runs the job
    dash = fleet.at(await head_ip(harness))
    dash.handle(
        "POST",
        "/api/jobs/",
        f'{{"entrypoint": "python main.py", "submission_id": "{status["jobId"]}"}}'.encode(),
    )
    await harness.job()
    assert (await harness.live_status())["jobStatus"] == "PENDING"
    fleet.job(status["jobId"]).set("RUNNING")
    await harness.job()
    assert (await harness.live_status())["jobStatus"] == "RUNNING"
    fleet.job(status["jobId"]).set("SUCCEEDED")
    await harness.job()  # Ray is done but the submitter has not finished: still Running
    status = await harness.live_status()
    assert status["jobStatus"] == "SUCCEEDED" and status["jobDeploymentStatus"] == "Running"
    await world.finish_job("job", at=clock.now)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Complete" and not status.get("reason")
    assert status["succeeded"] == 1 and status["failed"] == 0
    assert status["endTime"] == kinds.rfc3339(clock.now)
    assert status["rayJobInfo"]["startTime"] and status["rayJobInfo"]["endTime"]
    assert fleet.submissions == 1
    writes = harness.op.jobs.status_writes
    result = await harness.job()  # terminal: no write, no requeue without a TTL policy
    assert result.requeue_after is None and harness.op.jobs.status_writes == writes
    reasons = {e["reason"] for e in await world.list(kinds.Resource("", "v1", "events", "Event"))}
    assert {
        "Initializing",
        "Running",
        "Complete",
        "CreatedRayCluster",
        "CreatedSubmitterJob",
    } <= reasons


async def test_http_mode_submits_lazily_once(harness: Harness, fleet: FakeRayFleet) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(submissionMode="HTTPMode", metadata={"a": "b"},
                                                       runtimeEnvYAML="env_vars:\n  X: '1'\n"))  # fmt: skip
    status = await to_running(harness)
    assert fleet.submissions == 0  # nothing at the transition
    await harness.job()  # 404 -> submit
    assert fleet.submissions == 1
    job = fleet.job(status["jobId"])
    assert job.body["metadata"] == {"a": "b"} and job.body["runtime_env"] == {
        "env_vars": {"X": "1"}
    }
    await harness.job()
    assert (await harness.live_status())["jobStatus"] == "PENDING"
    job.set("STOPPED")  # STOPPED counts as Complete
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Complete" and status["jobStatus"] == "STOPPED"
    assert status["succeeded"] == 0
    assert fleet.submissions == 1


async def test_interactive_mode_waits_for_job_id(harness: Harness, fleet: FakeRayFleet) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(submissionMode="InteractiveMode"))
    status = await to_running(harness)
    assert status["jobDeploymentStatus"] == "Waiting" and "jobId" not in status
    writes = harness.op.jobs.status_writes
    assert (await harness.job()).requeue_after == 3.0
    assert harness.op.jobs.status_writes == writes
    await harness.world.patch(kinds.RAYJOBS, "job", {"spec": {"jobId": "mine"}})
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Running" and status["jobId"] == "mine"
    fleet.at(await head_ip(harness)).handle(
        "POST", "/api/jobs/", b'{"entrypoint": "x", "submission_id": "mine"}'
    )
    fleet.job("mine").set("FAILED")
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["reason"] == "AppFailed"


async def test_sidecar_mode_fails_when_the_submitter_container_fails(harness: Harness) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body(submissionMode="SidecarMode"))
    status = await to_running(harness)
    cluster = await world.get(kinds.RAYCLUSTERS, status["rayClusterName"])
    containers = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    assert containers[-1]["name"] == "ray-job-submitter"
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    (head,) = await world.list(kinds.PODS, "ray.io/node-type=head")
    statuses = head["status"]["containerStatuses"]
    for cs in statuses:
        if cs["name"] == "ray-job-submitter":
            cs["state"] = {
                "terminated": {"exitCode": 1, "finishedAt": kinds.rfc3339(1_800_000_000)}
            }
    await world.patch(
        kinds.PODS, head["metadata"]["name"], {"status": {"containerStatuses": statuses}}, "status"
    )
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["reason"] == "SubmissionFailed"


async def test_active_deadline_is_never_retried(harness: Harness, clock: Clock) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(activeDeadlineSeconds=60, backoffLimit=2))
    await harness.job()
    await harness.job()
    clock.advance(59)
    await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Initializing"
    clock.advance(1)  # now >= start + deadline
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["reason"] == "DeadlineExceeded"
    assert status["failed"] == 1


async def test_pre_running_deadline_retries_with_fresh_cluster_and_id(
    harness: Harness, clock: Clock
) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body(preRunningDeadlineSeconds=30, backoffLimit=1))
    await harness.job()
    await harness.job()
    first = await harness.live_status()
    assert await world.get(kinds.RAYCLUSTERS, first["rayClusterName"]) is not None
    clock.advance(30)
    await harness.job()
    status = await harness.live_status()
    assert (
        status["jobDeploymentStatus"] == "Retrying"
        and status["reason"] == "PreRunningDeadlineExceeded"
    )
    assert status["failed"] == 1 and "endTime" not in status
    await harness.job()  # Retrying: delete the cluster and the submitter Job
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "" and "rayClusterName" not in status
    assert await world.get(kinds.RAYCLUSTERS, first["rayClusterName"]) is None
    await harness.job()  # New again
    second = await harness.live_status()
    assert second["jobDeploymentStatus"] == "Initializing"
    assert second["rayClusterName"] != first["rayClusterName"] and second["jobId"] != first["jobId"]
    assert second["startTime"] == kinds.rfc3339(clock.now)
    clock.advance(30)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["failed"] == 2


async def test_backoff_limit_retries_a_failed_ray_job(
    harness: Harness, fleet: FakeRayFleet
) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(submissionMode="HTTPMode", backoffLimit=1))
    first = await to_running(harness)
    await harness.job()
    fleet.job(first["jobId"]).set("FAILED")
    await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Retrying"
    for _ in range(3):
        await harness.job()
    second = await to_running(harness)
    assert second["jobId"] != first["jobId"]
    await harness.job()
    fleet.job(second["jobId"]).set("FAILED")
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["failed"] == 2
    assert fleet.submissions == 2


async def test_suspend_and_resume(harness: Harness) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body(shutdownAfterJobFinishes=True))
    first = await to_running(harness)
    await world.patch(kinds.RAYJOBS, "job", {"spec": {"suspend": True}})
    await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Suspending"
    await harness.job()
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Suspended"
    assert await world.get(kinds.RAYCLUSTERS, first["rayClusterName"]) is None
    assert await world.get(kinds.JOBS, "job") is None
    assert (await harness.job()).requeue_after is None
    await world.patch(kinds.RAYJOBS, "job", {"spec": {"suspend": False}})
    await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == ""
    await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Initializing"


async def test_created_suspended_creates_nothing(harness: Harness) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(shutdownAfterJobFinishes=True, suspend=True))
    for _ in range(3):
        await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Suspended"
    assert await harness.world.list(kinds.RAYCLUSTERS) == []


async def test_status_check_timeout(harness: Harness, clock: Clock, fleet: FakeRayFleet) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(submissionMode="HTTPMode", backoffLimit=3))
    await to_running(harness)
    fleet.down.add(await head_ip(harness))
    await harness.job()
    status = await harness.live_status()
    assert status["jobStatusCheckFailureStartTime"] == kinds.rfc3339(clock.now)
    clock.advance(300)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed"  # never retried
    assert status["reason"] == "JobStatusCheckTimeoutExceeded"


async def test_submitter_grace_forces_failure(harness: Harness, clock: Clock) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body())
    await to_running(harness)
    await world.finish_job("job", at=clock.now)
    await harness.job()  # the submitter finished, the Ray job is unknown: AppFailed
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["reason"] == "AppFailed"
    assert status["message"] == "Submitter completed but Ray job not found in RayCluster."


async def test_submitter_finished_but_ray_job_running(
    harness: Harness, clock: Clock, fleet: FakeRayFleet
) -> None:
    """30 s after the submitter Job finished the RayJob fails, whatever Ray says."""
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body())
    status = await to_running(harness)
    fleet.at(await head_ip(harness)).handle(
        "POST",
        "/api/jobs/",
        f'{{"entrypoint": "x", "submission_id": "{status["jobId"]}"}}'.encode(),
    )
    fleet.job(status["jobId"]).set("RUNNING")
    await world.finish_job("job", at=clock.now)
    await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Running"
    clock.advance(30)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["jobStatus"] == "FAILED"
    assert status["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"


async def test_ray_job_ended_but_submitter_still_running(
    harness: Harness, clock: Clock, fleet: FakeRayFleet
) -> None:
    """300 s after Ray's end time the RayJob completes even if the submitter hangs."""
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body())
    status = await to_running(harness)
    fleet.at(await head_ip(harness)).handle(
        "POST",
        "/api/jobs/",
        f'{{"entrypoint": "x", "submission_id": "{status["jobId"]}"}}'.encode(),
    )
    fleet.job(status["jobId"]).set("SUCCEEDED", end_ms=int(clock.now * 1000))
    await harness.job()
    assert (await harness.live_status())["jobStatus"] == "SUCCEEDED"
    clock.advance(299)
    await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Running"
    clock.advance(1)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Complete"
    assert status["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"


async def test_invalid_spec_turns_validation_failed(
    client: lightkube.AsyncClient, tmp_dir: Path, template_dir: Path, clock: Clock
) -> None:
    """Objects stored without the admission plugin are still validated by the reconciler."""
    srv = new_server(tmp_dir / "raw", template_dir, admission=False)
    raw = kclient.in_process(srv.app, token=srv.creds.token)
    h = Harness(raw, clock=clock)
    await h.start()
    try:
        await h.world.create(kinds.RAYJOBS, job_body(ttlSecondsAfterFinished=30))
        result = await h.job()
        status = await h.live_status()
        assert status["jobDeploymentStatus"] == "ValidationFailed"
        assert (
            status["reason"] == "ValidationFailed"
            and "ttlSecondsAfterFinished" in status["message"]
        )
        assert result.requeue_after is None
        assert await h.world.list(kinds.RAYCLUSTERS) == []
    finally:
        await h.stop()
        await raw.close()
        await srv.close()


async def test_deleting_a_running_job_stops_it(harness: Harness, fleet: FakeRayFleet) -> None:
    await harness.world.create(kinds.RAYJOBS, job_body(submissionMode="HTTPMode"))
    status = await to_running(harness)
    await harness.job()
    await kinds.delete(harness.client, kinds.RAYJOBS, NS, "job")
    await harness.job()
    assert fleet.job(status["jobId"]).status == "STOPPED"
    await harness.sync()
    assert await harness.world.get(kinds.RAYJOBS, "job") is None


async def test_waiting_pre_running_deadline(harness: Harness, clock: Clock) -> None:
    await harness.world.create(
        kinds.RAYJOBS, job_body(submissionMode="InteractiveMode", preRunningDeadlineSeconds=100)
    )
    await to_running(harness)
    clock.advance(100)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed"
    assert status["reason"] == "PreRunningDeadlineExceeded"


async def test_running_active_deadline(harness: Harness, clock: Clock) -> None:
    await harness.world.create(
        kinds.RAYJOBS, job_body(submissionMode="HTTPMode", activeDeadlineSeconds=600)
    )
    await to_running(harness)
    clock.advance(600)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["reason"] == "DeadlineExceeded"


@pytest.mark.parametrize(
    ("ray_status", "reason"), [("RUNNING", "SubmissionFailed"), ("FAILED", "AppFailed")]
)
async def test_failed_submitter_job(
    harness: Harness, clock: Clock, fleet: FakeRayFleet, ray_status: str, reason: str
) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body())
    status = await to_running(harness)
    fleet.at(await head_ip(harness)).handle(
        "POST",
        "/api/jobs/",
        f'{{"entrypoint": "x", "submission_id": "{status["jobId"]}"}}'.encode(),
    )
    fleet.job(status["jobId"]).set(ray_status)
    await harness.job()  # jobStatus is read first
    await world.finish_job("job", failed=True, at=clock.now)
    await harness.job()
    status = await harness.live_status()
    assert status["jobDeploymentStatus"] == "Failed" and status["reason"] == reason


async def test_deleted_cluster_and_submitter_are_recreated_while_running(harness: Harness) -> None:
    world = harness.world
    await world.create(kinds.RAYJOBS, job_body())
    status = await to_running(harness)
    first = await world.get(kinds.RAYCLUSTERS, status["rayClusterName"])
    await kinds.delete(harness.client, kinds.RAYCLUSTERS, NS, status["rayClusterName"])
    await kinds.delete(harness.client, kinds.JOBS, NS, "job", propagation="Background")
    await harness.job()
    again = await world.get(kinds.RAYCLUSTERS, status["rayClusterName"])
    assert again is not None and again["metadata"]["uid"] != first["metadata"]["uid"]
    submitter = await world.get(kinds.JOBS, "job")
    assert submitter is not None  # lahar's fix of quirk 13: the submitter Job comes back
    assert (await harness.live_status())["jobDeploymentStatus"] == "Running"


async def test_missing_selected_cluster_is_an_error(harness: Harness) -> None:
    body = job_body(submissionMode="HTTPMode", clusterSelector={"ray.io/cluster": "absent"})
    del body["spec"]["rayClusterSpec"]
    await harness.world.create(kinds.RAYJOBS, body)
    await harness.job()
    with pytest.raises(RuntimeError, match="does not exist"):
        await harness.job()
    assert (await harness.live_status())["jobDeploymentStatus"] == "Initializing"
