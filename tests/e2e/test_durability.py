"""Restart safety: kill -9 while writing, watches resuming across a restart, and 410."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import threading
import time

import httpx2

from tests.e2e.cluster import Cluster


def _http(cluster: Cluster) -> httpx2.Client:
    return httpx2.Client(
        base_url=cluster.server_url(),
        verify=ssl.create_default_context(cafile=str(cluster.ca_file())),
        headers={"Authorization": f"Bearer {cluster.token()}"},
        timeout=10,
    )


def test_kill9_keeps_every_acknowledged_write(tmp_path) -> None:
    cluster = Cluster(tmp_path / "data", "apiserver")
    acknowledged: list[str] = []
    stop = threading.Event()
    try:
        cluster.start()

        def writer() -> None:
            with _http(cluster) as http:
                i = 0
                while not stop.is_set():
                    name = f"cm-{i}"
                    try:
                        r = http.post(
                            "/api/v1/namespaces/default/configmaps",
                            json={"metadata": {"name": name}, "data": {"i": str(i)}},
                        )
                    except httpx2.HTTPError:
                        return
                    if r.status_code == 201:
                        acknowledged.append(name)
                    i += 1

        t = threading.Thread(target=writer)
        t.start()
        time.sleep(2.0)
        cluster.kill9()
        stop.set()
        t.join(15)
        assert len(acknowledged) > 20
        cluster.start()
        with _http(cluster) as http:
            items = http.get("/api/v1/namespaces/default/configmaps").json()["items"]
        stored = {i["metadata"]["name"] for i in items}
        missing = [n for n in acknowledged if n not in stored]
        assert not missing, f"{len(missing)} acknowledged writes lost: {missing[:5]}"
    finally:
        stop.set()
        cluster.cleanup()


def test_watch_resumes_across_restart_and_expires(tmp_path) -> None:
    cluster = Cluster(tmp_path / "data", "apiserver", ("--watch-window", "50"))
    try:
        cluster.start()
        with _http(cluster) as http:
            r = http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "a"}})
            rv = r.json()["metadata"]["resourceVersion"]
            http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "b"}})
        assert cluster.stop(signal.SIGTERM) == 0
        cluster.start()
        with _http(cluster) as http:
            http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}})
            lines = []
            with http.stream(
                "GET",
                "/api/v1/namespaces/default/configmaps",
                params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"},
            ) as resp:
                assert resp.status_code == 200
                for line in resp.iter_lines():
                    if line:
                        lines.append(json.loads(line))
            names = [(e["type"], e["object"]["metadata"]["name"]) for e in lines]
            assert names == [("ADDED", "b"), ("ADDED", "c")]
            for i in range(300):  # push the first writes out of the 50-event window
                http.post(
                    "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": f"f{i}"}}
                )
            r = http.get(
                "/api/v1/namespaces/default/configmaps",
                params={"watch": "true", "resourceVersion": "1"},
            )
            assert r.status_code == 410 and r.json()["reason"] == "Expired"
    finally:
        cluster.cleanup()


def test_sigterm_stops_cleanly_and_objects_survive(tmp_path) -> None:
    cluster = Cluster(tmp_path / "data", "up")
    try:
        cluster.start()
        cluster.kubectl("create", "configmap", "keep", "--from-literal=k=v")
        assert cluster.stop(signal.SIGTERM) == 0
        out = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
        assert out.stdout.strip() == ""
        cluster.start()
        assert cluster.get_json("configmap", "keep")["data"] == {"k": "v"}
        assert (
            cluster.kubectl("get", "crd", "-o", "name").stdout.count("customresourcedefinition")
            == 5
        )
    finally:
        cluster.cleanup()
