"""Two independent clients against a real server process: lightkube (lahar's own seam)
and the official kubernetes client; and the 409 race between two updaters."""

from __future__ import annotations

import asyncio
import ssl
import threading

import kubernetes
import lightkube
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Pod

from lahar.kube import client as kclient
from tests.e2e.cluster import Cluster


def test_lightkube_crud_watch_and_binding(fresh_apiserver: Cluster) -> None:
    async def scenario() -> None:
        c = kclient.from_kubeconfig(fresh_apiserver.kubeconfig)
        try:
            cm = await c.create(
                ConfigMap(metadata=ObjectMeta(name="one"), data={"a": "1"}), namespace="default"
            )
            assert cm.metadata.resourceVersion
            got = await c.get(ConfigMap, "one", namespace="default")
            assert got.data == {"a": "1"}
            names = [x.metadata.name async for x in c.list(ConfigMap, namespace="default")]
            assert "one" in names
            await c.patch(ConfigMap, "one", {"data": {"b": "2"}}, namespace="default")
            events: list[tuple[str, str]] = []

            async def watch() -> None:
                async for typ, obj in c.watch(
                    ConfigMap, namespace="default", resource_version=cm.metadata.resourceVersion
                ):
                    events.append((typ, obj.metadata.name))
                    if typ == "DELETED":
                        return

            task = asyncio.create_task(watch())
            await asyncio.sleep(0.3)
            await c.delete(ConfigMap, "one", namespace="default")
            await asyncio.wait_for(task, 10)
            assert ("MODIFIED", "one") in events and events[-1] == ("DELETED", "one")
            pod = Pod.from_dict(
                {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
            )
            await c.create(pod, namespace="default")
            await kclient.bind_pod(c, "default", "p", "node-1")
            bound = await c.get(Pod, "p", namespace="default")
            assert bound.spec.nodeName == "node-1"
            with pytest.raises(ApiError) as err:
                await kclient.bind_pod(c, "default", "p", "node-2")
            assert err.value.status.code == 409
        finally:
            await c.close()

    asyncio.run(scenario())


def _official(cluster: Cluster) -> kubernetes.client.CoreV1Api:
    cfg = kubernetes.client.Configuration()
    cfg.host = cluster.server_url()
    cfg.ssl_ca_cert = str(cluster.ca_file())
    cfg.api_key = {"authorization": cluster.token()}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(cfg))


def test_official_client_and_update_race(fresh_apiserver: Cluster) -> None:
    api = _official(fresh_apiserver)
    api.create_namespaced_config_map("default", {"metadata": {"name": "race"}, "data": {"n": "0"}})
    base = api.read_namespaced_config_map("race", "default")
    results: list[int] = []
    barrier = threading.Barrier(2)

    def updater(value: str) -> None:
        body = {
            "metadata": {"name": "race", "resourceVersion": base.metadata.resource_version},
            "data": {"n": value},
        }
        barrier.wait()
        try:
            _official(fresh_apiserver).replace_namespaced_config_map("race", "default", body)
            results.append(200)
        except kubernetes.client.exceptions.ApiException as exc:
            results.append(exc.status)

    threads = [threading.Thread(target=updater, args=(str(i),)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == [200, 409]
    listed = api.list_namespaced_config_map("default", label_selector="")
    assert any(i.metadata.name == "race" for i in listed.items)


def test_unauthorized_without_token(fresh_apiserver: Cluster) -> None:
    import httpx2

    url = fresh_apiserver.server_url()
    with httpx2.Client(
        verify=ssl.create_default_context(cafile=str(fresh_apiserver.ca_file()))
    ) as http:
        r = http.get(f"{url}/api/v1/namespaces")
        assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
        r = http.get(f"{url}/api/v1/namespaces", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401
        assert http.get(f"{url}/readyz").text == "ok"
        ok = http.get(
            f"{url}/api/v1/namespaces",
            headers={"Authorization": f"Bearer {fresh_apiserver.token()}"},
        )
        assert ok.status_code == 200
    # the server listens on loopback only
    assert url.startswith("https://127.0.0.1:")


def test_lightkube_in_process_transport_streams_watches(tmp_path) -> None:
    from lahar.apiserver.server import APIServer

    async def scenario() -> None:
        server = APIServer(tmp_path / "d", port=0)
        c = kclient.in_process(server.app, token=server.creds.token)
        try:
            seen: list[str] = []

            async def watch() -> None:
                async for typ, obj in c.watch(ConfigMap, namespace="default"):
                    seen.append(f"{typ}:{obj.metadata.name}")
                    if len(seen) >= 2:
                        return

            task = asyncio.create_task(watch())
            await asyncio.sleep(0.2)
            await c.create(ConfigMap(metadata=ObjectMeta(name="a")), namespace="default")
            await c.create(ConfigMap(metadata=ObjectMeta(name="b")), namespace="default")
            await asyncio.wait_for(task, 5)
            assert seen == ["ADDED:a", "ADDED:b"]
        finally:
            await c.close()
            await server.close()

    asyncio.run(scenario())
    _ = lightkube
