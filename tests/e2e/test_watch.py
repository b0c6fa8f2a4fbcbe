"""Watch semantics clients rely on: selectors that start/stop matching, bookmarks,
timeouts, and list pagination."""

from __future__ import annotations

import json
import ssl
import threading
import time

import httpx2

from tests.e2e.cluster import Cluster


def _http(cluster: Cluster) -> httpx2.Client:
    return httpx2.Client(
        base_url=cluster.server_url(),
        verify=ssl.create_default_context(cafile=str(cluster.ca_file())),
        headers={"Authorization": f"Bearer {cluster.token()}"},
        timeout=30,
    )


def _collect(
    cluster: Cluster, params: dict[str, str], out: list[dict], ready: threading.Event
) -> None:
    with (
        _http(cluster) as http,
        http.stream(
            "GET", "/api/v1/namespaces/default/pods", params={"watch": "true", **params}
        ) as resp,
    ):
        ready.set()
        for line in resp.iter_lines():
            if line:
                out.append(json.loads(line))


def test_field_selector_watch_reports_objects_entering_and_leaving(
    fresh_apiserver: Cluster,
) -> None:
    with _http(fresh_apiserver) as http:
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        http.post("/api/v1/namespaces/default/pods", json=pod).raise_for_status()
        rv = http.get("/api/v1/namespaces/default/pods").json()["metadata"]["resourceVersion"]
        on_node: list[dict] = []
        running: list[dict] = []
        ready_a, ready_b = threading.Event(), threading.Event()
        threads = [
            threading.Thread(
                target=_collect,
                args=(
                    fresh_apiserver,
                    {
                        "resourceVersion": rv,
                        "fieldSelector": "spec.nodeName=n1",
                        "timeoutSeconds": "4",
                    },
                    on_node,
                    ready_a,
                ),
            ),
            threading.Thread(
                target=_collect,
                args=(
                    fresh_apiserver,
                    {
                        "resourceVersion": rv,
                        "fieldSelector": "status.phase!=Succeeded,status.phase!=Failed",
                        "timeoutSeconds": "4",
                    },
                    running,
                    ready_b,
                ),
            ),
        ]
        for t in threads:
            t.start()
        ready_a.wait(5)
        ready_b.wait(5)
        time.sleep(0.3)
        http.post(
            "/api/v1/namespaces/default/pods/p/binding",
            json={"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}},
        ).raise_for_status()
        http.patch(
            "/api/v1/namespaces/default/pods/p/status",
            json={"status": {"phase": "Succeeded"}},
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
        for t in threads:
            t.join(10)
    assert [e["type"] for e in on_node] == ["ADDED", "MODIFIED"]
    assert on_node[0]["object"]["spec"]["nodeName"] == "n1"
    assert [e["type"] for e in running] == ["MODIFIED", "DELETED"]
    assert running[-1]["object"]["status"]["phase"] == "Succeeded"


def test_bookmarks_and_timeout(fresh_apiserver: Cluster) -> None:
    with _http(fresh_apiserver) as http:
        rv = http.get("/api/v1/namespaces").json()["metadata"]["resourceVersion"]
        started = time.monotonic()
        events = []
        with http.stream(
            "GET",
            "/api/v1/namespaces",
            params={
                "watch": "true",
                "resourceVersion": rv,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "7",
            },
        ) as resp:
            for line in resp.iter_lines():
                if line:
                    events.append(json.loads(line))
        elapsed = time.monotonic() - started
    assert 6 <= elapsed < 15
    assert events and all(e["type"] == "BOOKMARK" for e in events)
    assert int(events[-1]["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_list_pagination_with_continue(fresh_apiserver: Cluster) -> None:
    with _http(fresh_apiserver) as http:
        for i in range(25):
            http.post(
                "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": f"cm-{i:02d}"}}
            )
        names, token, pages = [], None, 0
        while True:
            params = {"limit": "10"} | ({"continue": token} if token else {})
            page = http.get("/api/v1/namespaces/default/configmaps", params=params).json()
            names += [i["metadata"]["name"] for i in page["items"]]
            pages += 1
            token = page["metadata"].get("continue")
            if not token:
                break
        assert pages == 3 and names == sorted(f"cm-{i:02d}" for i in range(25))
        bad = http.get(
            "/api/v1/namespaces/default/configmaps", params={"limit": "5", "continue": "garbage"}
        )
        assert bad.status_code == 400 and bad.json()["kind"] == "Status"
    out = fresh_apiserver.kubectl(
        "get", "configmaps", "--chunk-size=7", "-o", "name"
    ).stdout.split()
    assert len(out) == 25
