"""The vcjob lifecycle: phases, policies and actions, retries, counters."""

from __future__ import annotations

import pytest

from lahar.volcano.jobs import Request, plan
from lahar.volcano.jobs.policies import apply_policies, pod_events
from tests.volcano.helpers import task
from tests.volcano.jobfix import INQUEUE, NOW, podgroup, pods, step, vcjob, with_phase

# ps (1) + worker (2); minAvailable 3 unless a test says otherwise.


def test_pending_until_min_available_is_running() -> None:
    j = with_phase(vcjob(), "Pending")
    p = step(j, pods(j, "Running", "Running", "Pending"))
    assert p.phase == "Pending"
    assert (p.status["running"], p.status["pending"]) == (2, 1)
    p = step(j, pods(j, "Running", "Running", "Running"))
    assert p.phase == "Running"
    assert p.status["state"] == {"phase": "Running", "lastTransitionTime": "2026-11-29T12:00:00Z"}
    assert p.status["conditions"][-1] == {
        "status": "Running",
        "lastTransitionTime": "2026-11-29T12:00:00Z",
    }


def test_min_available_below_replicas() -> None:
    j = with_phase(vcjob(minAvailable=2), "Pending")
    assert step(j, pods(j, "Running", "Succeeded", "Pending")).phase == "Running"


def test_running_to_completed_when_all_succeed() -> None:
    j = with_phase(vcjob(), "Running")
    assert step(j, pods(j, "Succeeded", "Succeeded", "Running")).phase == "Running"
    p = step(j, pods(j, "Succeeded", "Succeeded", "Succeeded"))
    assert p.phase == "Completed"
    assert p.status["taskStatusCount"] == {
        "ps": {"phase": {"Succeeded": 1}},
        "worker": {"phase": {"Succeeded": 2}},
    }


def test_running_to_failed_when_too_few_succeed() -> None:
    j = with_phase(vcjob(minAvailable=2), "Running")
    # Tasks' minAvailable (1 + 2) exceed the job's, so only the job minimum is checked.
    assert step(j, pods(j, "Succeeded", "Succeeded", "Failed")).phase == "Completed"
    assert step(j, pods(j, "Succeeded", "Failed", "Failed")).phase == "Failed"


def test_task_min_available_must_succeed() -> None:
    j = with_phase(vcjob(task("ps", 1, 1), task("worker", 2, 2), minAvailable=3), "Running")
    assert step(j, pods(j, "Failed", "Succeeded", "Succeeded")).phase == "Failed"


def test_min_success() -> None:
    j = with_phase(vcjob(minSuccess=2, minAvailable=1), "Running")
    assert step(j, pods(j, "Succeeded", "Succeeded", "Running")).phase == "Completed"
    assert step(j, pods(j, "Succeeded", "Failed", "Failed")).phase == "Failed"


def evicted_policy() -> dict:
    return {"policies": [{"event": "PodEvicted", "action": "RestartJob"}]}


def test_restart_job_kills_everything_and_counts_a_retry() -> None:
    j = with_phase(vcjob(**evicted_policy()), "Running", retryCount=0, version=0)
    current = pods(j, "Succeeded", "Running", "Running")
    p = step(j, current, INQUEUE, Request(event="PodEvicted", task="worker", pod="j-worker-0"))
    assert p.action == "RestartJob"
    assert p.phase == "Restarting"
    assert p.status["state"]["reason"] == "RestartJob"
    assert p.status["retryCount"] == 1 and p.status["version"] == 1
    assert p.delete_pods == ["j-ps-0", "j-worker-0", "j-worker-1"]  # even the succeeded one
    assert p.status["terminating"] == 3


def test_restarting_waits_for_pods_then_goes_pending() -> None:
    j = with_phase(vcjob(), "Restarting", retryCount=1, version=1)
    assert step(j, pods(j, "Terminating", "Terminating", "Terminating")).phase == "Restarting"
    # The kill dropped the PodGroup: it is created again, Pending, and no pods yet.
    p = plan(j, [], None, NOW)
    assert p.phase == "Pending"
    assert p.create_podgroup is not None and p.create_pods == []
    p = step(with_phase(vcjob(), "Pending", retryCount=1, version=1), [])
    assert [
        pod["metadata"]["annotations"]["volcano.sh/job-retry-count"] for pod in p.create_pods
    ] == ["1"] * 3
    assert {pod["metadata"]["annotations"]["volcano.sh/job-version"] for pod in p.create_pods} == {
        "1"
    }


def test_max_retry_exhaustion_fails_the_job() -> None:
    j = with_phase(vcjob(maxRetry=2), "Restarting", retryCount=2)
    p = step(j, [])
    assert p.phase == "Failed" and p.create_pods == []
    j = with_phase(vcjob(maxRetry=2), "Restarting", retryCount=1)
    assert step(j, []).phase == "Pending"


def test_max_retry_reached_through_repeated_restarts() -> None:
    j = with_phase(vcjob(maxRetry=1, **evicted_policy()), "Running", retryCount=0)
    p = step(
        j, pods(j, "Running", "Running", "Running"), INQUEUE, Request(event="PodEvicted", task="ps")
    )
    assert (p.phase, p.status["retryCount"]) == ("Restarting", 1)
    j = with_phase(vcjob(maxRetry=1), "Restarting", retryCount=1)
    assert step(j, []).phase == "Failed"


def test_abort_keeps_finished_pods_then_aborted_and_resume() -> None:
    spec = {"policies": [{"exitCode": 3, "action": "AbortJob"}]}
    j = with_phase(vcjob(**spec), "Running")
    current = pods(j, "Succeeded", "Failed", "Running", exit_codes={1: 3})
    p = step(j, current, INQUEUE, Request(event="PodFailed", task="worker", exit_code=3))
    assert p.phase == "Aborting"
    assert p.delete_pods == ["j-worker-1"]
    j = with_phase(vcjob(**spec), "Aborting")
    assert step(j, pods(j, "Succeeded", "Failed", "Terminating")).phase == "Aborting"
    assert step(j, pods(j, "Succeeded", "Failed")).phase == "Aborted"
    aborted = with_phase(vcjob(**spec), "Aborted", retryCount=0)
    p = step(aborted, pods(aborted, "Succeeded"), INQUEUE, Request(action="ResumeJob"))
    assert (p.phase, p.status["retryCount"]) == ("Restarting", 1)


def test_task_completed_completes_the_job() -> None:
    ps = task("ps", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])
    j = with_phase(vcjob(ps, task("worker", 2), minAvailable=1), "Running")
    current = pods(j, "Succeeded", "Running", "Running")
    p = step(j, current, INQUEUE, Request(event="TaskCompleted", task="ps"))
    assert p.phase == "Completing"
    assert p.delete_pods == ["j-worker-0", "j-worker-1"]
    j = with_phase(vcjob(ps, task("worker", 2), minAvailable=1), "Completing")
    assert step(j, pods(j, "Succeeded")).phase == "Completed"


def test_terminate_command() -> None:
    j = with_phase(vcjob(), "Pending")
    p = step(j, pods(j, "Pending", "Pending", "Pending"), INQUEUE, Request(action="TerminateJob"))
    assert p.phase == "Terminating" and len(p.delete_pods) == 3
    j = with_phase(vcjob(), "Terminating")
    assert step(j, []).phase == "Terminated"


def test_job_unknown_from_podgroup_phase() -> None:
    j = with_phase(vcjob(policies=[{"event": "Unknown", "action": "RestartJob"}]), "Running")
    p = step(j, pods(j, "Running", "Running", "Running"), podgroup("Unknown"))
    assert p.action == "RestartJob" and p.phase == "Restarting"


def test_restart_task_deletes_only_that_task() -> None:
    worker = task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])
    j = with_phase(vcjob(task("ps", 1), worker), "Running", retryCount=0)
    current = pods(j, "Running", "Failed", "Running")
    p = step(j, current, INQUEUE, Request(event="PodFailed", task="worker", pod="j-worker-0"))
    assert (p.phase, p.status["retryCount"]) == ("Restarting", 1)
    assert p.delete_pods == ["j-worker-0", "j-worker-1"]
    assert p.delete_podgroup is False  # only a whole-job kill drops the gang
    assert p.create_pods == []  # recreated once the deletions are through


def test_restarting_recreates_targets_then_pending() -> None:
    j = with_phase(vcjob(), "Restarting", retryCount=1)
    p = step(j, pods(j, "Running", "Terminating", "Terminating"))
    assert p.phase == "Restarting" and p.delete_pods == [] and p.create_pods == []
    p = step(j, pods(j, "Running"))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["j-worker-0", "j-worker-1"]
    assert p.phase == "Pending"


def test_restart_pod_deletes_one_pod() -> None:
    j = with_phase(vcjob(policies=[{"event": "PodFailed", "action": "RestartPod"}]), "Running")
    p = step(
        j,
        pods(j, "Running", "Failed", "Running"),
        INQUEUE,
        Request(event="PodFailed", task="worker", pod="j-worker-0"),
    )
    assert p.delete_pods == ["j-worker-0"]
    assert p.phase == "Restarting"


def test_restart_partition_deletes_the_partition() -> None:
    t = task("w", 6, 6, partitionPolicy={"totalPartitions": 3, "partitionSize": 2})
    j = with_phase(
        vcjob(t, policies=[{"event": "PodFailed", "action": "RestartPartition"}]), "Running"
    )
    current = pods(j, *["Running"] * 6)
    p = step(j, current, INQUEUE, Request(event="PodFailed", task="w", pod="j-w-3"))
    assert p.delete_pods == ["j-w-2", "j-w-3"]


def test_whole_job_kill_drops_podgroup_and_svc_objects() -> None:
    j = with_phase(vcjob(plugins={"svc": []}), "Running", controlledResources={"plugin-svc": "svc"})
    p = step(j, pods(j, "Running", "Running", "Running"), INQUEUE, Request(action="AbortJob"))
    assert p.delete_podgroup is True
    assert [(o["kind"], o["metadata"]["name"]) for o in p.delete_objects] == [
        ("ConfigMap", "j-svc"),
        ("Service", "j"),
        ("NetworkPolicy", "j"),
    ]
    assert "controlledResources" not in p.status
    assert p.status["version"] == 1


def test_last_retry_keeps_finished_pods() -> None:
    j = with_phase(vcjob(maxRetry=3, **evicted_policy()), "Running", retryCount=2)
    current = pods(j, "Succeeded", "Failed", "Running")
    p = step(j, current, INQUEUE, Request(event="PodEvicted", task="worker"))
    assert p.delete_pods == ["j-worker-1"]
    assert p.status["retryCount"] == 3


def test_version_moves_only_when_a_kill_deletes_something() -> None:
    j = with_phase(vcjob(), "Completed", version=4)
    assert (
        step(j, pods(j, "Succeeded", "Succeeded", "Succeeded"), podgroup_gone()).status["version"]
        == 4
    )
    assert step(j, pods(j, "Succeeded", "Running"), podgroup_gone()).status["version"] == 5


def podgroup_gone() -> None:
    return None


def test_running_falls_back_to_pending_when_gang_breaks() -> None:
    j = with_phase(vcjob(), "Running")
    p = step(j, pods(j, "Running", "Running", "Pending"))
    assert p.phase == "Pending"
    j = with_phase(vcjob(minAvailable=2), "Running")
    assert step(j, pods(j, "Running", "Running", "Pending")).phase == "Running"


def test_depends_on_waits_for_the_dependency() -> None:
    j = with_phase(vcjob(task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]})), "Pending")
    p = step(j, [])
    assert [x["metadata"]["name"] for x in p.create_pods] == ["j-ps-0"]
    p = step(j, pods(j, "Pending"))
    assert p.create_pods == []
    p = step(j, pods(j, "Running"))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["j-worker-0", "j-worker-1"]


def test_ttl_after_finished() -> None:
    j = with_phase(vcjob(ttlSecondsAfterFinished=60), "Completed")
    j["status"]["state"]["lastTransitionTime"] = "2026-11-29T11:59:30Z"
    p = step(j, [], podgroup_gone())
    assert (p.delete_job, p.requeue_after) == (False, 30.0)
    j["status"]["state"]["lastTransitionTime"] = "2026-11-29T11:58:00Z"
    assert step(j, [], podgroup_gone()).delete_job is True
    assert step(with_phase(vcjob(), "Completed"), [], podgroup_gone()).delete_job is False


def test_task_policy_wins_over_job_policy() -> None:
    worker = task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])
    j = vcjob(task("ps", 1), worker, policies=[{"event": "*", "action": "AbortJob"}])
    assert apply_policies(j, Request(event="PodFailed", task="worker")) == "RestartTask"
    assert apply_policies(j, Request(event="PodFailed", task="ps")) == "AbortJob"
    assert apply_policies(j, Request(event="OutOfSync", task="ps")) == "SyncJob"
    assert apply_policies(j, Request(action="CompleteJob")) == "CompleteJob"
    assert apply_policies(vcjob(), Request(event="PodFailed")) == "SyncJob"


def test_finished_job_removes_stray_running_pods() -> None:
    j = with_phase(vcjob(), "Completed")
    p = step(j, pods(j, "Succeeded", "Running", "Succeeded"))
    assert p.phase == "Completed" and p.delete_pods == ["j-worker-0"]
    assert p.create_pods == [] and p.create_podgroup is None


def test_scale_down_deletes_extra_pods() -> None:
    j = with_phase(vcjob(), "Running")
    current = pods(j, "Running", "Running", "Running")
    j["spec"]["tasks"][1].update(replicas=1, minAvailable=1)
    j["spec"]["minAvailable"] = 2
    p = step(j, current)
    assert p.delete_pods == ["j-worker-1"]
    assert p.update_podgroup is not None and p.update_podgroup["spec"]["minMember"] == 2


@pytest.mark.parametrize(
    ("old", "new", "events"),
    [
        ("Running", "Failed", ["PodFailed"]),
        ("Running", "Succeeded", []),
        ("Running", None, ["PodEvicted"]),
        ("Running", "Running", []),
    ],
)
def test_pod_events(old: str, new: str | None, events: list[str]) -> None:
    j = vcjob()
    before = pods(j, "Running", "Running", old)[2]
    after = None
    if new is not None:
        after = {**before, "status": {"phase": new}}
    current = pods(j, "Running", "Running") + ([after] if after else [])
    assert [r.event for r in pod_events(j, before, after, current)] == events


def test_task_completed_and_failed_events() -> None:
    j = vcjob()
    before = pods(j, "Succeeded", "Succeeded", "Running")
    after = {**before[2], "status": {"phase": "Succeeded"}}
    reqs = pod_events(j, before[2], after, [*before[:2], after])
    assert [(r.event, r.task) for r in reqs] == [("TaskCompleted", "worker")]
    failed = {
        **before[2],
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"state": {"terminated": {"exitCode": 2}}}],
        },
    }
    reqs = pod_events(j, before[2], failed, [*before[:2], failed])
    assert [(r.event, r.exit_code) for r in reqs] == [("PodFailed", 2), ("TaskFailed", None)]
