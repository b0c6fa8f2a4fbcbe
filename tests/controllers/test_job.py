"""The batch/v1 Job controller against the in-process API server, the test playing the
node agent (pods never run; their status is written by hand)."""

from __future__ import annotations

import asyncio
from typing import Any

import lightkube

from lahar.controllers.common import JOBS, MERGE_PATCH, PODS
from lahar.controllers.expectations import Expectations
from lahar.controllers.jobpods import TRACKING_FINALIZER, format_indexes, parse_indexes
from lahar.controllers.options import ControllerOptions
from lahar.controllers.run import build_manager
from lahar.kube import rest
from lahar.kube.reconcile import Request
from tests.controllers.conftest import (
    cond,
    controllers,
    create_job,
    events,
    eventually,
    get_job,
    job_pods,
    set_phase,
)

Obj = dict[str, Any]


async def test_one_pod_job_completes(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)) as mgr:
        job = await create_job(client, "j")
        pods = await eventually(lambda: job_pods(client, "j"))
        assert len(pods) == 1
        pod = pods[0]
        md = pod["metadata"]
        assert md["name"].startswith("j-") and len(md["name"]) == len("j-") + 5
        uid = job["metadata"]["uid"]
        for label, value in {
            "batch.kubernetes.io/controller-uid": uid,
            "controller-uid": uid,
            "batch.kubernetes.io/job-name": "j",
            "job-name": "j",
        }.items():
            assert md["labels"][label] == value
        (ref,) = md["ownerReferences"]
        assert ref["controller"] and ref["blockOwnerDeletion"] and ref["uid"] == uid
        assert TRACKING_FINALIZER in md["finalizers"]
        await eventually(lambda: _status(client, "j", "active", 1))
        assert (await get_job(client, "j"))["status"].get("startTime")
        await set_phase(client, pod, "Succeeded")
        done = await eventually(lambda: _cond(client, "j", "Complete"))
        st = done["status"]
        assert st["succeeded"] == 1 and st["active"] == 0 and st.get("failed", 0) == 0
        assert st["completionTime"] and st["uncountedTerminatedPods"] == {
            "succeeded": [],
            "failed": [],
        }
        met = cond(done, "SuccessCriteriaMet")
        assert met and met["status"] == "True" and met["reason"] == "CompletionsReached"
        complete = cond(done, "Complete")
        assert complete and complete["lastProbeTime"] and complete["lastTransitionTime"]
        # the counted pod lost its finalizer but stays (Jobs keep finished pods)
        (pod,) = await job_pods(client, "j")
        assert TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or [])
        await mgr.recorder("job-controller").flush()
        reasons = await eventually(lambda: _has(client, "j", {"SuccessfulCreate", "Completed"}))
        assert reasons


async def _status(client: lightkube.AsyncClient, name: str, field: str, value: int) -> bool:
    job = await get_job(client, name)
    return bool(job) and (job.get("status") or {}).get(field) == value


async def _cond(client: lightkube.AsyncClient, name: str, kind: str) -> Obj | None:
    job = await get_job(client, name)
    c = cond(job, kind)
    return job if c and c["status"] == "True" else None


async def _has(client: lightkube.AsyncClient, name: str, reasons: set[str]) -> bool:
    return reasons <= set(await events(client, name))


async def test_parallelism_and_completions(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)):
        await create_job(client, "p", completions=3, parallelism=2)
        pods = await eventually(lambda: _n_pods(client, "p", 2))
        await set_phase(client, pods[0], "Succeeded")
        pods = await eventually(lambda: _n_pods(client, "p", 3))
        await eventually(lambda: _status(client, "p", "succeeded", 1))
        for pod in pods:
            if pod["status"]["phase"] != "Succeeded":
                await set_phase(client, pod, "Succeeded")
        done = await eventually(lambda: _cond(client, "p", "Complete"))
        assert done["status"]["succeeded"] == 3
        assert len(await job_pods(client, "p")) == 3


async def test_backoff_limit(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)) as mgr:
        await create_job(client, "b", backoffLimit=1)
        (pod,) = await eventually(lambda: _n_pods(client, "b", 1))
        await set_phase(client, pod, "Failed")
        (new,) = await eventually(lambda: _pods_except(client, "b", pod["metadata"]["uid"]))
        await eventually(lambda: _status(client, "b", "failed", 1))
        await set_phase(client, new, "Failed")
        job = await eventually(lambda: _cond(client, "b", "Failed"))
        failed = cond(job, "Failed")
        target = cond(job, "FailureTarget")
        assert failed and failed["reason"] == "BackoffLimitExceeded"
        assert failed["message"] == "Job has reached the specified backoff limit"
        assert target and target["status"] == "True"
        assert job["status"]["failed"] == 2 and job["status"]["active"] == 0
        assert "completionTime" not in job["status"]
        assert len(await job_pods(client, "b")) == 2
        await mgr.recorder("job-controller").flush()
        await eventually(lambda: _has(client, "b", {"BackoffLimitExceeded"}))


async def test_active_deadline(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)) as mgr:
        await create_job(client, "d", activeDeadlineSeconds=1, parallelism=2, completions=4)
        await eventually(lambda: _n_pods(client, "d", 2))
        job = await eventually(lambda: _cond(client, "d", "Failed"), timeout=15)
        failed = cond(job, "Failed")
        assert failed and failed["reason"] == "DeadlineExceeded"
        assert cond(job, "FailureTarget")
        assert job["status"]["active"] == 0 and job["status"]["failed"] == 2
        await eventually(lambda: _n_pods(client, "d", 0))  # the active ones were deleted
        await mgr.recorder("job-controller").flush()
        await eventually(lambda: _has(client, "d", {"DeadlineExceeded", "SuccessfulDelete"}))


async def test_ttl_after_finished(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)):
        await create_job(client, "t", ttlSecondsAfterFinished=1)
        (pod,) = await eventually(lambda: _n_pods(client, "t", 1))
        await set_phase(client, pod, "Succeeded")
        await eventually(lambda: _cond(client, "t", "Complete"))
        await eventually(lambda: _gone(client, "t"), timeout=15)
        await eventually(lambda: _n_pods(client, "t", 0))  # garbage-collected with it


async def test_suspend_and_resume(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)):
        await create_job(client, "s", suspend=True, parallelism=2, completions=2)
        job = await eventually(lambda: _cond(client, "s", "Suspended"))
        assert job["status"].get("active", 0) == 0 and "startTime" not in job["status"]
        assert await job_pods(client, "s") == []
        await rest.request(
            client,
            "PATCH",
            JOBS.path("default", "s"),
            body={"spec": {"suspend": False}},
            content_type=MERGE_PATCH,
        )
        await eventually(lambda: _n_pods(client, "s", 2))
        await eventually(lambda: _status(client, "s", "active", 2))
        job = await get_job(client, "s")
        suspended = cond(job, "Suspended")
        assert suspended and suspended["status"] == "False" and suspended["reason"] == "JobResumed"
        assert job["status"]["startTime"]
        # suspending again deletes the running pods
        await rest.request(
            client,
            "PATCH",
            JOBS.path("default", "s"),
            body={"spec": {"suspend": True}},
            content_type=MERGE_PATCH,
        )
        await eventually(lambda: _n_pods(client, "s", 0))
        await eventually(lambda: _cond(client, "s", "Suspended"))


async def test_indexed_job(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)):
        await create_job(client, "ix", completions=3, parallelism=3, completionMode="Indexed")
        pods = await eventually(lambda: _n_pods(client, "ix", 3))
        index = "batch.kubernetes.io/job-completion-index"
        seen = {}
        for pod in pods:
            md = pod["metadata"]
            i = md["annotations"][index]
            assert md["labels"][index] == i
            assert md["name"].startswith(f"ix-{i}-")
            assert pod["spec"]["hostname"] == f"ix-{i}"
            env = pod["spec"]["containers"][0]["env"]
            assert any(e["name"] == "JOB_COMPLETION_INDEX" for e in env)
            seen[int(i)] = pod
        assert sorted(seen) == [0, 1, 2]
        await set_phase(client, seen[1], "Succeeded")
        await eventually(lambda: _field(client, "ix", "completedIndexes", "1"))
        await set_phase(client, seen[0], "Failed")  # index 0 is retried by a new pod
        new = await eventually(lambda: _n_pods(client, "ix", 4))
        old = {p["metadata"]["uid"] for p in seen.values()}
        (retry,) = [p for p in new if p["metadata"]["uid"] not in old]
        assert retry["metadata"]["annotations"][index] == "0"
        await set_phase(client, retry, "Succeeded")
        await set_phase(client, seen[2], "Succeeded")
        done = await eventually(lambda: _cond(client, "ix", "Complete"))
        assert done["status"]["completedIndexes"] == "0-2"
        assert done["status"]["succeeded"] == 3 and done["status"]["failed"] == 1


async def test_deleted_pod_counts_as_failed_and_is_replaced(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)):
        await create_job(client, "r")
        (pod,) = await eventually(lambda: _n_pods(client, "r", 1))
        await rest.request(client, "DELETE", PODS.path("default", pod["metadata"]["name"]))
        await eventually(lambda: _status(client, "r", "failed", 1))
        (new,) = await eventually(
            lambda: _pods_except(client, "r", pod["metadata"]["uid"]), timeout=10
        )
        assert new["metadata"]["uid"] != pod["metadata"]["uid"]


async def test_deleting_the_job_releases_its_pods(client: lightkube.AsyncClient) -> None:
    async with controllers(client, controllers=("job",)):
        await create_job(client, "g", parallelism=2, completions=2)
        await eventually(lambda: _n_pods(client, "g", 2))
        await rest.request(
            client,
            "DELETE",
            JOBS.path("default", "g"),
            body={"propagationPolicy": "Background"},
        )
        await eventually(lambda: _gone(client, "g"))
        await eventually(lambda: _n_pods(client, "g", 0))


async def test_expectations_stop_a_stale_cache_from_creating_twice(
    client: lightkube.AsyncClient,
) -> None:
    mgr = build_manager(client, options=ControllerOptions.fast(controllers=("job",)))
    ctrl = next(c for c in mgr.controllers if c.name == "job-controller")
    job_ctrl = ctrl.reconciler.__self__  # type: ignore[attr-defined]
    mgr.informers.start()
    try:
        assert await mgr.informers.wait_for_sync(10)
        await create_job(client, "e", parallelism=3, completions=3)
        await eventually(lambda: job_ctrl.jobs.get("e", "default"))
        await mgr.informers.informer(PODS).stop()  # the pod cache now lags forever
        await job_ctrl.reconcile(Request("default", "e"))
        await job_ctrl.reconcile(Request("default", "e"))
        await job_ctrl.reconcile(Request("default", "e"))
        assert len(await job_pods(client, "e")) == 3
    finally:
        await mgr.informers.stop()


def test_expectations_unit() -> None:
    now = [0.0]
    exp = Expectations(timeout=10, clock=lambda: now[0])
    assert exp.satisfied("k")
    exp.expect_creations("k", 2)
    exp.expect_deletions("k", ["a"])
    assert not exp.satisfied("k")
    exp.creation_observed("k")
    exp.creation_observed("k")
    assert not exp.satisfied("k")
    exp.deletion_observed("k", "a")
    assert exp.satisfied("k")
    exp.expect_creations("k", 1)
    now[0] = 11
    assert exp.satisfied("k")  # expired


def test_indexes_format() -> None:
    assert format_indexes([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert parse_indexes("0-2,5,7-8", 8) == {0, 1, 2, 5, 7}
    assert format_indexes([]) == ""


async def _n_pods(client: lightkube.AsyncClient, name: str, n: int) -> list[Obj] | bool:
    pods = [p for p in await job_pods(client, name) if not p["metadata"].get("deletionTimestamp")]
    if len(pods) != n:
        return False
    return pods or True


async def _pods_except(client: lightkube.AsyncClient, name: str, uid: str) -> list[Obj]:
    return [p for p in await job_pods(client, name) if p["metadata"]["uid"] != uid]


async def _gone(client: lightkube.AsyncClient, name: str) -> bool:
    return await get_job(client, name) is None


async def _field(client: lightkube.AsyncClient, name: str, field: str, value: object) -> bool:
    job = await get_job(client, name)
    return bool(job) and (job.get("status") or {}).get(field) == value


async def test_job_managed_by_another_controller_is_left_alone(
    client: lightkube.AsyncClient,
) -> None:
    async with controllers(client, controllers=("job",)):
        await create_job(client, "other", managedBy="example.com/multikueue")
        await create_job(client, "mine", managedBy="kubernetes.io/job-controller")
        await eventually(lambda: _n_pods(client, "mine", 1))
        await asyncio.sleep(0.3)
        assert await job_pods(client, "other") == []
        assert not (await get_job(client, "other") or {}).get("status")
