"""The vcjob controller against the embedded server: PodGroup, pods, svc objects, the
lifecycle driven by pod status (the test plays the scheduler and the node), restarts."""

from __future__ import annotations

from typing import Any

from lahar.kube.resource import Resource
from lahar.volcano import constants as c
from lahar.volcano.controllers.common import CONFIGMAPS, PODGROUPS, PODS, SERVICES, VCJOBS
from tests.volcano.controllers.conftest import VC, eventually

Obj = dict[str, Any]
EVENTS = Resource("", "v1", "events", "Event")


def vcjob(name: str, replicas: int = 2, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ],
                        }
                    },
                }
            ],
            **spec,
        },
    }


async def _pods(vc: VC, job: str) -> list[Obj]:
    return [
        p
        for p in await vc.list(PODS)
        if (p["metadata"].get("labels") or {}).get(c.JOB_NAME_KEY) == job
    ]


async def _pod_names(vc: VC, job: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in await _pods(vc, job))


async def _podgroup(vc: VC, job: Obj) -> Obj | None:
    return await vc.get(PODGROUPS, f"{job['metadata']['name']}-{job['metadata']['uid']}")


async def _enqueue(vc: VC, name: str) -> Obj:
    """Play the scheduler's enqueue: wait for the job's PodGroup, mark it Inqueue."""
    job = await vc.job(name)
    assert job is not None

    async def has_pg() -> bool:
        return await _podgroup(vc, job) is not None

    await eventually(has_pg)
    await vc.set_podgroup_phase(f"{name}-{job['metadata']['uid']}", "Inqueue")
    return job


async def _phase_is(vc: VC, name: str, phase: str) -> bool:
    return await vc.job_phase(name) == phase


async def test_job_becomes_podgroup_pods_and_svc_objects(vc: VC) -> None:
    await vc.create(VCJOBS, vcjob("train", plugins={"svc": [], "env": []}))
    job = await _enqueue(vc, "train")
    uid = job["metadata"]["uid"]
    pg = await _podgroup(vc, job)
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["queue"] == "default"
    assert pg["spec"]["minResources"] == {"cpu": "2"}
    assert pg["metadata"]["ownerReferences"][0]["uid"] == uid
    await eventually(lambda: _phase_is(vc, "train", "Pending"))

    async def two_pods() -> bool:
        return await _pod_names(vc, "train") == ["train-worker-0", "train-worker-1"]

    await eventually(two_pods)
    pod = await vc.get(PODS, "train-worker-1")
    labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels[c.JOB_NAME_KEY] == "train"
    assert labels[c.TASK_SPEC_KEY] == "worker"
    assert labels[c.TASK_INDEX_KEY] == "1"
    assert labels[c.QUEUE_NAME_KEY] == "default"
    assert annotations[c.GROUP_NAME_KEY] == f"train-{uid}"
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["spec"]["hostname"] == "train-worker-1"
    assert pod["spec"]["subdomain"] == "train"
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["VC_TASK_INDEX"]["value"] == "1"
    assert "VC_WORKER_HOSTS" in env
    svc = await vc.get(SERVICES, "train")
    assert svc["spec"]["clusterIP"] == "None"
    cm = await vc.get(CONFIGMAPS, "train-svc")
    assert cm["data"]["VC_WORKER_HOSTS"] == "train-worker-0.train,train-worker-1.train"

    for name in ("train-worker-0", "train-worker-1"):
        await vc.set_pod_phase(name, "Running")
    await eventually(lambda: _phase_is(vc, "train", "Running"))
    status = (await vc.job("train"))["status"]
    assert status["running"] == 2
    assert status["taskStatusCount"]["worker"]["phase"] == {"Running": 2}

    for name in ("train-worker-0", "train-worker-1"):
        await vc.set_pod_phase(name, "Succeeded")
    await eventually(lambda: _phase_is(vc, "train", "Completed"), timeout=15)
    # a finished job releases its PodGroup and the svc objects
    await eventually(lambda: _gone(vc, PODGROUPS, f"train-{uid}"))
    await eventually(lambda: _gone(vc, SERVICES, "train"))


async def _gone(vc: VC, res: Resource, name: str) -> bool:
    return await vc.get(res, name) is None


async def test_no_pods_before_the_podgroup_is_enqueued(vc: VC) -> None:
    await vc.create(VCJOBS, vcjob("waiting", replicas=1))
    await eventually(lambda: _phase_is(vc, "waiting", "Pending"))
    job = await vc.job("waiting")
    await eventually(lambda: _has(vc, job))
    assert await _pods(vc, "waiting") == []


async def _has(vc: VC, job: Obj) -> bool:
    return await _podgroup(vc, job) is not None


async def test_failed_pod_restarts_the_job_until_max_retry(vc: VC) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    await vc.create(VCJOBS, vcjob("flaky", replicas=2, policies=policies, maxRetry=2))
    for attempt in (1, 2):
        await _enqueue(vc, "flaky")

        async def fresh_pods() -> bool:
            pods = await _pods(vc, "flaky")
            return len(pods) == 2 and all(
                not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase", "Pending") == "Pending"
                for p in pods
            )

        await eventually(fresh_pods, timeout=15)
        for name in ("flaky-worker-0", "flaky-worker-1"):
            await vc.set_pod_phase(name, "Running")
        await eventually(lambda: _phase_is(vc, "flaky", "Running"))
        await vc.set_pod_phase("flaky-worker-0", "Failed", exit_code=1)

        async def retried(n: int = attempt) -> bool:
            job = await vc.job("flaky")
            return (job.get("status") or {}).get("retryCount") == n

        await eventually(retried, timeout=15)
    await eventually(lambda: _phase_is(vc, "flaky", "Failed"), timeout=15)
    events = await vc.list(EVENTS)
    reasons = {
        (e["reason"], e.get("message", ""))
        for e in events
        if e["involvedObject"].get("name") == "flaky"
    }
    assert ("ExecuteAction", "Start to execute action RestartJob") in reasons


async def test_failed_pod_without_policy_fails_the_job(vc: VC) -> None:
    await vc.create(VCJOBS, vcjob("once", replicas=1))
    await _enqueue(vc, "once")

    async def one_pod() -> bool:
        return await _pod_names(vc, "once") == ["once-worker-0"]

    await eventually(one_pod)
    await vc.set_pod_phase("once-worker-0", "Running")
    await eventually(lambda: _phase_is(vc, "once", "Running"))
    await vc.set_pod_phase("once-worker-0", "Failed", exit_code=2)
    await eventually(lambda: _phase_is(vc, "once", "Failed"), timeout=15)
    job = await vc.job("once")
    assert job["status"]["retryCount"] == 0


async def test_finished_job_is_deleted_after_its_ttl(vc: VC) -> None:
    await vc.create(VCJOBS, vcjob("brief", replicas=1, ttlSecondsAfterFinished=0))
    await _enqueue(vc, "brief")

    async def one_pod() -> bool:
        return await _pod_names(vc, "brief") == ["brief-worker-0"]

    await eventually(one_pod)
    await vc.set_pod_phase("brief-worker-0", "Running")
    await eventually(lambda: _phase_is(vc, "brief", "Running"))
    await vc.set_pod_phase("brief-worker-0", "Succeeded")

    async def deleted() -> bool:
        return await vc.job("brief") is None

    await eventually(deleted, timeout=15)


async def test_a_restarted_controller_picks_up_where_it_left(vc: VC) -> None:
    await vc.create(VCJOBS, vcjob("resume", plugins={"svc": []}))
    await _enqueue(vc, "resume")

    async def two_pods() -> bool:
        return await _pod_names(vc, "resume") == ["resume-worker-0", "resume-worker-1"]

    await eventually(two_pods)
    await vc.stop()
    await vc.patch(CONFIGMAPS, "resume-svc", {"data": {"VC_WORKER_NUM": "7", "stray": "x"}})
    await vc.set_pod_phase("resume-worker-0", "Running")
    await vc.set_pod_phase("resume-worker-1", "Running")
    vc.start()

    async def repaired() -> bool:
        cm = await vc.get(CONFIGMAPS, "resume-svc")
        return cm["data"].get("VC_WORKER_NUM") == "2" and "stray" not in cm["data"]

    await eventually(repaired)
    await eventually(lambda: _phase_is(vc, "resume", "Running"))
    assert await _pod_names(vc, "resume") == ["resume-worker-0", "resume-worker-1"]
