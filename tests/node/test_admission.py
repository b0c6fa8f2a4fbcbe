"""Node-side admission: the request of a pod, and pods that do not fit being failed the
way a kubelet fails them."""

from __future__ import annotations

import lightkube

from lahar.kube import rest
from lahar.node.admission import admit, pod_requests
from lahar.node.registration import PODS
from tests.node.conftest import FleetFactory, eventually, get_pod


def _c(name: str, cpu: str | None = None, mem: str | None = None, **extra: str) -> dict:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v}
    requests.update(extra)
    return {"name": name, "image": "x", "resources": {"requests": requests}}


def test_pod_requests_follow_the_kubernetes_rules() -> None:
    pod = {
        "spec": {
            "containers": [_c("a", "500m", "1Gi"), _c("b", "250m")],
            "initContainers": [
                _c("big-init", "2", "256Mi"),
                {**_c("sidecar", "100m", "64Mi"), "restartPolicy": "Always"},
                _c("late-init", "1"),
            ],
            "overhead": {"cpu": "10m"},
        }
    }
    req = pod_requests(pod)
    # containers 750m + sidecar 100m = 850m; max with big-init 2000m (before the
    # sidecar) and late-init 1000m + 100m sidecar: 2000m; plus 10m overhead
    assert req["cpu"] == 2010
    assert req["memory"] == (1024 + 64) * 2**20 * 1000
    assert req["pods"] == 1000
    limits_only = {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}}}]}}
    assert pod_requests(limits_only)["cpu"] == 1000
    pod_level = {"spec": {"resources": {"requests": {"cpu": "3"}}, "containers": [_c("a", "1")]}}
    assert pod_requests(pod_level)["cpu"] == 3000


def test_admit() -> None:
    alloc = {"cpu": 2000, "memory": 4000, "pods": 2000, "nvidia.com/gpu": 1000}
    assert admit({"cpu": 1500, "pods": 1000}, {}, alloc) is None
    reason, message = admit({"cpu": 1500, "pods": 1000}, {"cpu": 1000}, alloc)  # type: ignore[misc]
    assert reason == "OutOfcpu"
    assert "requested: 1500, used: 1000, capacity: 2000" in message
    assert admit({"nvidia.com/gpu": 2000}, {}, alloc)[0] == "OutOfnvidia.com/gpu"  # type: ignore[index]
    assert admit({"example.com/widget": 1000}, {}, alloc)[0] == "OutOfexample.com/widget"  # type: ignore[index]
    assert admit({"pods": 1000}, {"pods": 2000}, alloc)[0] == "OutOfpods"  # type: ignore[index]
    assert admit({"unchecked-thing": 5000}, {}, alloc) is None


async def _create(client: lightkube.AsyncClient, name: str, cpu: str) -> None:
    body = {
        "metadata": {"name": name},
        "spec": {"nodeName": "sim-0", "restartPolicy": "Never", "containers": [_c("main", cpu)]},
    }
    await rest.request(client, "POST", PODS.path("default"), body=body)


async def _phase(client: lightkube.AsyncClient, name: str) -> str | None:
    pod = await get_pod(client, name)
    return ((pod or {}).get("status") or {}).get("phase")


async def test_pod_that_does_not_fit_fails(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1, cpu="2", pods=3) as f:
        await _create(client, "first", "1500m")
        await eventually(lambda: _is(client, "first", "Running"))
        await _create(client, "second", "1")
        await eventually(lambda: _is(client, "second", "Failed"))
        pod = await get_pod(client, "second")
        assert pod is not None
        assert pod["status"]["reason"] == "OutOfcpu"
        assert pod["status"]["message"].startswith("Pod was rejected")
        assert f.pods.rejected == 1
        # the first one's resources come back when it is gone
        await rest.request(
            client, "DELETE", PODS.path("default", "first"), body={"gracePeriodSeconds": 0}
        )
        await eventually(lambda: _gone(client, "first"))
        await eventually(lambda: not f.nodes["sim-0"].requested)
        await _create(client, "third", "2")
        await eventually(lambda: _is(client, "third", "Running"))


async def _is(client: lightkube.AsyncClient, name: str, phase: str) -> bool:
    return await _phase(client, name) == phase


async def _gone(client: lightkube.AsyncClient, name: str) -> bool:
    return await get_pod(client, name) is None


async def test_admission_can_be_turned_off(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1, cpu="1", admission=False):
        await _create(client, "huge", "64")
        await eventually(lambda: _is(client, "huge", "Running"))
