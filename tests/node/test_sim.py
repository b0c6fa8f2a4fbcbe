"""Simulated nodes against the in-process API server: registration, leases, the life
of a pod (start, finish, restart, graceful deletion), taking a node down, logs."""

from __future__ import annotations

import asyncio

import lightkube

from lahar.apiserver.server import APIServer
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.node.podstatus import parse_rfc3339
from lahar.node.registration import NODES, PODS
from lahar.node.sim import ANN_DOWN, ANN_DURATION, ANN_EXIT_CODE, KUBELET_VERSION
from tests.node.conftest import (
    FleetFactory,
    condition,
    create_pod,
    eventually,
    get_lease,
    get_node,
    get_pod,
)


async def test_nodes_registered_with_capacity_labels_and_conditions(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=3, cpu="16", memory="64Gi", gpu=2) as f:
        assert sorted(f.nodes) == ["sim-0", "sim-1", "sim-2"]
        node = await get_node(client, "sim-1")
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == "sim-1"
        assert labels["lahar.dev/node-type"] == "sim"
        assert labels["node.kubernetes.io/instance-type"] == "sim.16cpu-64Gi-2gpu"
        status = node["status"]
        for key in ("capacity", "allocatable"):
            assert status[key]["cpu"] == "16"
            assert status[key]["memory"] == "64Gi"
            assert status[key]["pods"] == "110"
            assert status[key]["nvidia.com/gpu"] == "2"
        assert condition(node, "Ready") == "True"
        for ctype in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            assert condition(node, ctype) == "False"
        types = {a["type"]: a["address"] for a in status["addresses"]}
        assert types["Hostname"] == "sim-1" and types["InternalIP"].startswith("10.")
        assert status["nodeInfo"]["kubeletVersion"] == KUBELET_VERSION
        assert node["spec"]["podCIDR"].endswith(".0/24")
        lease = await get_lease(client, "sim-1")
        assert lease["spec"]["holderIdentity"] == "sim-1"
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    # closing removed the nodes and their leases
    nodes = await rest.request(client, "GET", NODES.path())
    assert nodes["items"] == []


async def test_no_gpu_resource_without_gpus(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1):
        node = await get_node(client, "sim-0")
        assert "nvidia.com/gpu" not in node["status"]["capacity"]


async def test_leases_renewed_and_ready_heartbeats(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=2, heartbeat=0.2, status_period=0.5) as f:
        first = (await get_lease(client, "sim-0"))["spec"]["renewTime"]
        await eventually(lambda: _lease_moved(client, "sim-0", first), timeout=5, interval=0.1)
        await eventually(lambda: f.heartbeats.heartbeats >= 2, timeout=5)
        assert f.heartbeats.renewals >= 2


async def _lease_moved(client: lightkube.AsyncClient, name: str, before: str) -> bool:
    return (await get_lease(client, name))["spec"]["renewTime"] != before


async def test_keep_nodes_leaves_them(client: lightkube.AsyncClient, fleet: FleetFactory) -> None:
    async with fleet(count=1, keep_nodes=True):
        pass
    assert (await get_node(client, "sim-0"))["metadata"]["name"] == "sim-0"


async def test_bound_pod_runs_after_the_delay(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=2, ready_delay=0.3) as f:
        await create_pod(client, "web", init_containers=("setup",), containers=("a", "b"))
        await asyncio.sleep(0.1)
        assert (await get_pod(client, "web"))["status"]["phase"] == "Pending"  # not bound yet
        bound_at = asyncio.get_running_loop().time()
        await kclient.bind_pod(client, "default", "web", "sim-1")
        pod = await eventually(lambda: _phase(client, "web", "Running"))
        assert asyncio.get_running_loop().time() - bound_at >= 0.25
        status = pod["status"]
        for ctype in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
            assert condition(pod, ctype) == "True", ctype
        node = await get_node(client, "sim-1")
        node_ip = next(
            a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"
        )
        assert status["hostIP"] == node_ip
        prefix = node["spec"]["podCIDR"].rsplit(".", 1)[0] + "."
        assert status["podIP"].startswith(prefix) and status["podIPs"] == [{"ip": status["podIP"]}]
        assert parse_rfc3339(status["startTime"]) is not None
        cs = {c["name"]: c for c in status["containerStatuses"]}
        assert set(cs) == {"a", "b"}
        assert all(
            c["ready"] and "running" in c["state"] and c["restartCount"] == 0 for c in cs.values()
        )
        (init,) = status["initContainerStatuses"]
        assert init["state"]["terminated"]["exitCode"] == 0
        assert init["state"]["terminated"]["reason"] == "Completed"
        assert f.pods.started == 1


async def test_pods_on_other_nodes_are_left_alone(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1):
        await create_pod(client, "elsewhere", node="real-node")
        await create_pod(client, "here", node="sim-0")
        await eventually(lambda: _phase(client, "here", "Running"))
        assert (await get_pod(client, "elsewhere"))["status"]["phase"] == "Pending"


async def test_pod_ips_are_distinct_per_node(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=2):
        for i in range(6):
            await create_pod(client, f"p{i}", node=f"sim-{i % 2}")
        pods = [await eventually(lambda i=i: _phase(client, f"p{i}", "Running")) for i in range(6)]
        ips = [p["status"]["podIP"] for p in pods]
        assert len(set(ips)) == 6


async def test_duration_then_succeeded(client: lightkube.AsyncClient, fleet: FleetFactory) -> None:
    async with fleet(count=1):
        await create_pod(client, "job", node="sim-0", annotations={ANN_DURATION: "300ms"})
        await eventually(lambda: _phase(client, "job", "Running"))
        pod = await eventually(lambda: _phase(client, "job", "Succeeded"), timeout=5)
        (c,) = pod["status"]["containerStatuses"]
        term = c["state"]["terminated"]
        assert term["exitCode"] == 0 and term["reason"] == "Completed"
        assert not c["ready"]
        assert condition(pod, "Ready") == "False"


async def test_duration_with_exit_code_then_failed(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1):
        ann = {ANN_DURATION: "0.2", ANN_EXIT_CODE: "3"}
        await create_pod(client, "bad", node="sim-0", annotations=ann)
        pod = await eventually(lambda: _phase(client, "bad", "Failed"), timeout=5)
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert term["exitCode"] == 3 and term["reason"] == "Error"


async def test_restart_policy_always_restarts(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1) as f:
        ann = {ANN_DURATION: "150ms", ANN_EXIT_CODE: "1"}
        await create_pod(client, "svc", node="sim-0", annotations=ann, restart_policy="Always")
        pod = await eventually(lambda: _restarts(client, "svc", 2), timeout=5)
        assert pod["status"]["phase"] == "Running"
        c = pod["status"]["containerStatuses"][0]
        assert "running" in c["state"]
        assert c["lastState"]["terminated"]["exitCode"] == 1
        assert f.pods.restarted >= 2


async def test_on_failure_restarts_until_success(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1):
        ann = {ANN_DURATION: "150ms", ANN_EXIT_CODE: "2"}
        await create_pod(client, "retry", node="sim-0", annotations=ann, restart_policy="OnFailure")
        await eventually(lambda: _restarts(client, "retry", 1), timeout=5)
        # a fixed exit code: now it succeeds on its next run
        await rest.request(
            client,
            "PATCH",
            PODS.path("default", "retry"),
            body={"metadata": {"annotations": {ANN_EXIT_CODE: "0"}}},
            content_type="application/merge-patch+json",
        )
        pod = await eventually(lambda: _phase(client, "retry", "Succeeded"), timeout=5)
        assert pod["status"]["containerStatuses"][0]["restartCount"] >= 1


async def test_graceful_delete_is_confirmed(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1, stop_delay=0.2) as f:
        await create_pod(client, "gone", node="sim-0", grace=30)
        await eventually(lambda: _phase(client, "gone", "Running"))
        marked = await rest.request(client, "DELETE", PODS.path("default", "gone"))
        assert marked["metadata"]["deletionTimestamp"]  # graceful: the agent must confirm
        await eventually(lambda: _absent(client, "gone"), timeout=5)
        await eventually(lambda: f.pods.stopped == 1 and len(f.pods) == 0)


async def test_graceful_delete_of_pending_pod(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1, ready_delay=5.0):
        await create_pod(client, "early", node="sim-0", grace=30)
        await rest.request(client, "DELETE", PODS.path("default", "early"))
        await eventually(lambda: _absent(client, "early"), timeout=5)


async def test_stop_never_outlasts_the_grace_period(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1, stop_delay=20.0):
        await create_pod(client, "quick", node="sim-0", grace=1)
        await eventually(lambda: _phase(client, "quick", "Running"))
        started = asyncio.get_running_loop().time()
        await rest.request(client, "DELETE", PODS.path("default", "quick"))
        await eventually(lambda: _absent(client, "quick"), timeout=5)
        assert asyncio.get_running_loop().time() - started < 2.5


async def test_deletion_on_a_down_node_waits_for_it(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1, heartbeat=0.2):
        await create_pod(client, "held", node="sim-0", grace=30)
        await eventually(lambda: _phase(client, "held", "Running"))
        await _annotate_node(client, "sim-0", "true")
        await eventually(lambda: _node_ready(client, "sim-0", "Unknown"), timeout=5)
        await rest.request(client, "DELETE", PODS.path("default", "held"))
        await asyncio.sleep(0.5)
        assert await get_pod(client, "held") is not None  # a dead agent confirms nothing
        await _annotate_node(client, "sim-0", None)
        await eventually(lambda: _absent(client, "held"), timeout=5)


async def test_node_down_and_back(client: lightkube.AsyncClient, fleet: FleetFactory) -> None:
    async with fleet(count=2, heartbeat=0.2) as f:
        await _annotate_node(client, "sim-1", "true")
        node = await eventually(lambda: _node_ready(client, "sim-1", "Unknown"), timeout=5)
        assert condition(node, "MemoryPressure") == "Unknown"
        assert f.heartbeats.is_down("sim-1")
        stopped = (await get_lease(client, "sim-1"))["spec"]["renewTime"]
        # a pod bound to the down node does not start; the other node still works
        await create_pod(client, "stuck", node="sim-1")
        await create_pod(client, "fine", node="sim-0")
        await eventually(lambda: _phase(client, "fine", "Running"))
        await asyncio.sleep(0.6)
        assert (await get_lease(client, "sim-1"))["spec"]["renewTime"] == stopped
        assert (await get_pod(client, "stuck"))["status"]["phase"] == "Pending"
        assert condition(await get_node(client, "sim-0"), "Ready") == "True"
        # back up: Ready, lease renewed, the waiting pod starts
        await _annotate_node(client, "sim-1", None)
        await eventually(lambda: _node_ready(client, "sim-1", "True"), timeout=5)
        await eventually(lambda: _lease_moved(client, "sim-1", stopped), timeout=5)
        await eventually(lambda: _phase(client, "stuck", "Running"), timeout=5)


async def test_logs_in_process(client: lightkube.AsyncClient, fleet: FleetFactory) -> None:
    async with fleet(count=1):
        await create_pod(client, "talk", node="sim-0", containers=("main", "side"))
        await eventually(lambda: _phase(client, "talk", "Running"))
        text = await _logs(client, "talk", "side")
        assert text == "simulated container side of default/talk\n"


async def test_logs_over_loopback_endpoint(
    client: lightkube.AsyncClient, fleet: FleetFactory, server: APIServer
) -> None:
    async with fleet(count=1, logs=None) as f:
        assert f.log_server is not None
        node = await get_node(client, "sim-0")
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == f.log_server.port
        await create_pod(client, "remote", node="sim-0")
        await eventually(lambda: _phase(client, "remote", "Running"))
        text = await _logs(client, "remote", "main")
        assert text == "simulated container main of default/remote\n"


async def test_restarted_simulator_resumes_running_pods(
    client: lightkube.AsyncClient, fleet: FleetFactory
) -> None:
    async with fleet(count=1, keep_nodes=True):
        await create_pod(client, "long", node="sim-0", annotations={ANN_DURATION: "1.5s"})
        before = await eventually(lambda: _phase(client, "long", "Running"))
    async with fleet(count=1) as f:
        pod = await eventually(lambda: _phase(client, "long", "Succeeded"), timeout=5)
        assert pod["status"]["podIP"] == before["status"]["podIP"]
        assert f.pods.started == 0  # resumed, not started again


# -- helpers -------------------------------------------------------------------------------


async def _phase(client: lightkube.AsyncClient, name: str, phase: str) -> dict | None:
    pod = await get_pod(client, name)
    return pod if pod is not None and (pod.get("status") or {}).get("phase") == phase else None


async def _restarts(client: lightkube.AsyncClient, name: str, n: int) -> dict | None:
    pod = await get_pod(client, name)
    statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
    return pod if statuses and statuses[0].get("restartCount", 0) >= n else None


async def _absent(client: lightkube.AsyncClient, name: str) -> bool:
    return await get_pod(client, name) is None


async def _node_ready(client: lightkube.AsyncClient, name: str, status: str) -> dict | None:
    node = await get_node(client, name)
    return node if condition(node, "Ready") == status else None


async def _annotate_node(client: lightkube.AsyncClient, name: str, value: str | None) -> None:
    await rest.request(
        client,
        "PATCH",
        NODES.path(name=name),
        body={"metadata": {"annotations": {ANN_DOWN: value}}},
        content_type="application/merge-patch+json",
    )


async def _logs(client: lightkube.AsyncClient, pod: str, container: str) -> str:
    http = rest.http_client(client)
    resp = await http.get(PODS.path("default", pod, "log"), params={"container": container})
    assert resp.status_code == 200, resp.text
    return resp.text
