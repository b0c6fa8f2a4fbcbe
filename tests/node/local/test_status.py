"""The pod status the local node reports, from its per-container records."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lahar.node.local.status import (
    FAILED,
    RUNNING,
    SUCCEEDED,
    ContainerState,
    PodState,
    pod_status,
)


def _pod(conditions: list[dict] | None = None) -> dict:
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"conditions": conditions or [{"type": "PodScheduled", "status": "True"}]},
    }


def _conds(body: dict) -> dict[str, str]:
    return {c["type"]: c["status"] for c in body["status"]["conditions"]}


def test_waiting_container_reports_its_reason_and_pod_is_not_ready() -> None:
    cs = ContainerState("a", "img")
    cs.wait("UnsupportedVolume", 'volume "v": not supported')
    body = pod_status(_pod(), PodState("u1", "10.0.0.1", containers=[cs]))
    status = body["status"]
    assert body["metadata"]["uid"] == "u1"
    assert status["phase"] == "Pending"
    waiting = status["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {"reason": "UnsupportedVolume", "message": 'volume "v": not supported'}
    assert _conds(body)["Ready"] == "False"
    assert _conds(body)["PodScheduled"] == "True"  # kept from the pod


def test_running_and_ready_container_makes_the_pod_ready() -> None:
    cs = ContainerState("a")
    cs.run(1000.0, "lahar://x-a-0")
    cs.ready = True
    state = PodState("u1", "10.0.0.1", pod_ip="10.244.0.2", phase=RUNNING, containers=[cs])
    state.initialized = state.sandbox_ready = True
    body = pod_status(_pod(), state)
    assert body["status"]["podIP"] == "10.244.0.2"
    assert body["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    assert _conds(body) == {
        "PodScheduled": "True",
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }


def test_restart_moves_the_ended_run_to_last_state() -> None:
    cs = ContainerState("a")
    cs.run(1000.0, "lahar://x-a-0")
    cs.terminate(2, 1005.0)
    cs.wait("CrashLoopBackOff", "back-off 10s")
    cs.restart_count = 1
    out = cs.to_status()
    assert out["lastState"]["terminated"]["exitCode"] == 2
    assert out["lastState"]["terminated"]["reason"] == "Error"
    assert out["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert out["restartCount"] == 1


def test_start_error_keeps_reason_and_message() -> None:
    cs = ContainerState("a")
    cs.terminate(128, 1.0, "StartError", 'exec: "nope": executable file not found in $PATH')
    term = cs.to_status()["state"]["terminated"]
    assert term["reason"] == "StartError" and "nope" in term["message"]


def test_finished_pod_says_pod_completed() -> None:
    cs = ContainerState("a")
    cs.run(1.0, "id")
    cs.terminate(0, 2.0)
    body = pod_status(_pod(), PodState("u1", "h", phase=SUCCEEDED, containers=[cs]))
    ready = next(c for c in body["status"]["conditions"] if c["type"] == "Ready")
    assert ready == {**ready, "status": "False", "reason": "PodCompleted"}


@given(
    st.lists(st.booleans(), min_size=1, max_size=5),
    st.sampled_from(["Pending", RUNNING, SUCCEEDED, FAILED]),
)
def test_pod_is_ready_only_when_running_and_every_container_is(readies, phase) -> None:
    containers = []
    for i, ready in enumerate(readies):
        cs = ContainerState(f"c{i}")
        cs.run(1.0, f"id{i}")
        cs.ready = ready
        containers.append(cs)
    body = pod_status(_pod(), PodState("u1", "h", phase=phase, containers=containers))
    expected = "True" if phase == RUNNING and all(readies) else "False"
    assert _conds(body)["Ready"] == expected == _conds(body)["ContainersReady"]
