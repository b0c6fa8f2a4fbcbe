"""Steps the RayJob tests share: drive a RayJob to Running, find the head's IP,
complete an HTTPMode job."""

from __future__ import annotations

from typing import Any

from lahar.kuberay.operator import kinds
from tests.kuberay.operator.conftest import Harness
from tests.kuberay.operator.fakeray import FakeRayFleet

Obj = dict[str, Any]


async def to_running(h: Harness, name: str = "job") -> Obj:
    """New -> Initializing -> (cluster ready) -> Running."""
    await h.job(name)
    status = await h.live_status(name)
    assert status["jobDeploymentStatus"] == "Initializing"
    await h.job(name)  # creates the cluster
    status = await h.live_status(name)
    await h.ready_cluster(status["rayClusterName"])
    await h.job(name)
    status = await h.live_status(name)
    assert status["jobDeploymentStatus"] in ("Running", "Waiting"), status
    return status


async def head_ip(h: Harness) -> str:
    heads = await h.world.list(kinds.PODS, "ray.io/node-type=head")
    return str(heads[-1]["status"]["podIP"])


async def complete_http(h: Harness, fleet: FakeRayFleet) -> Obj:
    status = await to_running(h)
    await h.job()
    fleet.job(status["jobId"]).set("SUCCEEDED")
    await h.job()
    status = await h.live_status()
    assert status["jobDeploymentStatus"] == "Complete"
    return status
