"""The Ray Jobs API client against the stand-in dashboard (Ray 2.60's payloads and
errors), the submit body built from a RayJob, URL resolution through the caches,
and the bound on concurrent calls."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from lahar.kube.cache import Cache
from lahar.kuberay.operator.dashboard import (
    DashboardClient,
    DashboardError,
    DashboardPool,
    DashboardUnavailable,
    JobAlreadyExists,
    JobNotFound,
    submit_request,
)
from lahar.kuberay.operator.resolver import ServiceResolver
from tests.kuberay.operator.conftest import job_body
from tests.kuberay.operator.fakeray import FakeRayFleet


@pytest.fixture
async def dash(fleet: FakeRayFleet) -> DashboardClient:
    client = DashboardClient("http://10.0.0.5:8265", transport=fleet.transport)
    yield client  # type: ignore[misc]
    await client.close()


async def test_submit_status_logs_stop_delete(dash: DashboardClient, fleet: FakeRayFleet) -> None:
    assert (await dash.version())["ray_version"] == "2.60.0"
    sid = await dash.submit_job({"entrypoint": "python x.py", "submission_id": "s-1"})
    assert sid == "s-1"
    info = await dash.get_job_info("s-1")
    assert info.status == "PENDING" and info.job_id is None and not info.terminal
    with pytest.raises(JobAlreadyExists) as exc:
        await dash.submit_job({"entrypoint": "python x.py", "submission_id": "s-1"})
    assert exc.value.submission_id == "s-1" and exc.value.status == 500
    with pytest.raises(DashboardError) as err:  # a running job cannot be deleted
        await dash.delete_job("s-1")
    assert err.value.status == 500 and "non-terminal" in str(err.value)
    assert "s-1" in await dash.get_job_logs("s-1")
    assert [j.submission_id for j in await dash.list_jobs()] == ["s-1"]
    assert await dash.stop_job("s-1") is True
    assert await dash.stop_job("s-1") is False
    info = await dash.get_job_info("s-1")
    assert info.status == "STOPPED" and info.terminal and info.end_time
    assert await dash.delete_job("s-1") is True
    assert await dash.submit_job({"entrypoint": "again", "submission_id": "s-1"}) == "s-1"
    generated = await dash.submit_job({"entrypoint": "no id"})
    assert generated.startswith("raysubmit_")
    assert fleet.submissions == 3


async def test_errors(dash: DashboardClient, fleet: FakeRayFleet) -> None:
    with pytest.raises(JobNotFound):
        await dash.get_job_info("nope")
    with pytest.raises(JobNotFound):
        await dash.get_job_logs("nope")
    with pytest.raises(DashboardError) as err:
        await dash.submit_job({"entrypoint": "x", "bogus": 1})
    assert err.value.status == 400 and "bogus" in str(err.value)
    with pytest.raises(DashboardError) as err:
        await dash.submit_job({"entrypoint": 5})
    assert err.value.status == 400
    fleet.down.add("10.0.0.5")
    with pytest.raises(DashboardError) as err:
        await dash.get_job_info("x")
    assert err.value.status is None


def test_submit_request_follows_kuberay() -> None:
    job = job_body(
        entrypoint="  python main.py ",
        metadata={"team": "a"},
        runtimeEnvYAML="pip:\n  - requests\nenv_vars:\n  A: '1'\n",
        entrypointNumCpus=1.5,
        entrypointNumGpus=0,
        entrypointResources='{"custom": 2}',
    )
    body = submit_request(job, "job-abcde")
    assert body == {
        "entrypoint": "  python main.py ",  # HTTPMode sends it untrimmed
        "submission_id": "job-abcde",
        "metadata": {"team": "a"},
        "runtime_env": {"pip": ["requests"], "env_vars": {"A": "1"}},
        "entrypoint_num_cpus": 1.5,
        "entrypoint_resources": {"custom": 2.0},
    }
    assert submit_request(job_body(), "") == {"entrypoint": "python main.py"}


def _svc(cluster_ip: str = "None", target: object = None) -> dict:
    port = {"name": "dashboard", "port": 8265}
    if target is not None:
        port["targetPort"] = target
    return {
        "metadata": {"name": "demo-head-svc", "namespace": "ns1"},
        "spec": {"clusterIP": cluster_ip, "selector": {"ray.io/cluster": "demo"}, "ports": [port]},
    }


def _pod(name: str, ip: str, ready: bool = True, phase: str = "Running") -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns1", "labels": {"ray.io/cluster": "demo"}},
        "spec": {"containers": [{"name": "ray", "ports": [{"name": "dash", "containerPort": 9999}]}]},
        "status": {"phase": phase, "podIP": ip,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }  # fmt: skip


async def test_resolver_uses_the_caches_not_dns() -> None:
    services, pods = Cache(), Cache()
    resolve = ServiceResolver(services, pods)
    url = "demo-head-svc.ns1.svc.cluster.local:8265"
    with pytest.raises(DashboardUnavailable):
        await resolve(url)  # no Service yet
    services.upsert(_svc())
    with pytest.raises(DashboardUnavailable):
        await resolve(url)  # no pod with an IP yet
    pods.upsert(_pod("a", "10.1.0.1", ready=False))
    pods.upsert(_pod("b", "10.1.0.2", ready=True))
    pods.upsert(_pod("c", "10.1.0.3", phase="Pending"))
    assert await resolve(url) == "http://10.1.0.2:8265"  # ready pods first
    services.upsert(_svc(target="dash"))
    assert await resolve(url) == "http://10.1.0.2:9999"  # a named targetPort
    services.upsert(_svc(cluster_ip="10.96.0.20"))
    assert await resolve(url) == "http://10.1.0.2:8265"  # pods by default (no kube-proxy)
    by_ip = ServiceResolver(services, pods, prefer_cluster_ip=True)
    assert await by_ip(url) == "http://10.96.0.20:8265"
    mapped = ServiceResolver(
        services, pods, pod_address=lambda pod, port: ("127.0.0.1", port + 20000)
    )
    assert await mapped(url) == "http://127.0.0.1:28265"
    with pytest.raises(DashboardUnavailable):
        await resolve("example.com:8265")


async def test_pool_bounds_concurrent_calls() -> None:
    active = peak = 0

    async def slow(request: httpx2.Request) -> httpx2.Response:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return httpx2.Response(200, json={"status": "RUNNING", "submission_id": "x"})

    async def resolve(url: str) -> str:
        return "http://10.0.0.9:8265"

    pool = DashboardPool(resolve, transport=httpx2.MockTransport(slow), max_concurrency=3)
    try:
        clients = [await pool.client("x.ns.svc.cluster.local:8265") for _ in range(12)]
        infos = await asyncio.gather(*(c.get_job_info("x") for c in clients))
    finally:
        await pool.close()
    assert all(i.status == "RUNNING" for i in infos)
    assert peak == 3
