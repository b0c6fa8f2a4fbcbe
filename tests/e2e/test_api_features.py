"""More of the API surface through kubectl and plain HTTP: CRD lifecycle and discovery
refresh, scale and categories, dry-run, deletecollection, eviction, the logs seam, metrics."""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time

import httpx2
import yaml

from tests.e2e.cluster import Cluster

WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wdg"],
            "categories": ["gadgets"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                                    "color": {
                                        "type": "string",
                                        "enum": ["red", "blue"],
                                        "default": "red",
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"replicas": {"type": "integer"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


def _http(cluster: Cluster) -> httpx2.Client:
    return httpx2.Client(
        base_url=cluster.server_url(),
        verify=ssl.create_default_context(cafile=str(cluster.ca_file())),
        headers={"Authorization": f"Bearer {cluster.token()}"},
        timeout=30,
    )


def test_crd_lifecycle_discovery_scale_categories(fresh_apiserver: Cluster) -> None:
    c = fresh_apiserver
    c.apply_yaml(WIDGETS)
    c.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    c.apply_yaml(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"color": "blue"},
        }
    )
    table = c.kubectl("get", "wdg").stdout.splitlines()
    # Custom columns replace the default AGE column, as on a real server.
    assert table[0].split() == ["NAME", "REPLICAS", "COLOR"]
    assert table[1].split()[:3] == ["w1", "1", "blue"]  # replicas defaulted by the schema
    assert "widget.example.com/w1" in c.kubectl("get", "gadgets", "-o", "name").stdout
    c.kubectl("scale", "widget", "w1", "--replicas=3")
    assert c.get_json("widget", "w1")["spec"]["replicas"] == 3
    c.kubectl("label", "widget", "w1", "team=a")
    c.kubectl("annotate", "widget", "w1", "note=x")
    assert "team=a" in c.kubectl("describe", "widget", "w1").stdout
    c.kubectl(
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"replicas":3}}',
    )
    c.kubectl("wait", "--for=jsonpath={.status.replicas}=3", "widget/w1", "--timeout=10s")
    bad = c.kubectl(
        "patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"color":"green"}}', check=False
    )
    assert bad.returncode != 0 and "spec.color" in bad.stderr and "Unsupported value" in bad.stderr
    c.kubectl("delete", "crd", "widgets.example.com")
    deadline = time.monotonic() + 10
    while "widgets" in c.kubectl("api-resources").stdout and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "widgets" not in c.kubectl("api-resources").stdout
    assert c.kubectl("get", "widgets", check=False).returncode != 0


def test_dry_run_deletecollection_and_eviction(fresh_apiserver: Cluster) -> None:
    c = fresh_apiserver
    c.kubectl("create", "configmap", "dry", "--dry-run=server")
    assert c.kubectl("get", "configmap", "dry", check=False).returncode != 0
    for i in range(3):
        c.kubectl("create", "configmap", f"batch-{i}")
        c.kubectl("label", "configmap", f"batch-{i}", "group=b")
    with _http(c) as http:
        r = http.delete(
            "/api/v1/namespaces/default/configmaps", params={"labelSelector": "group=b"}
        )
        assert r.status_code == 200 and len(r.json()["items"]) == 3
        assert (
            http.get(
                "/api/v1/namespaces/default/configmaps", params={"labelSelector": "group=b"}
            ).json()["items"]
            == []
        )
        pod = {"metadata": {"name": "ev"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        http.post("/api/v1/namespaces/default/pods", json=pod).raise_for_status()
        r = http.post(
            "/api/v1/namespaces/default/pods/ev/eviction",
            json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "ev"}},
        )
        assert r.status_code == 201 and r.json()["status"] == "Success"
        assert http.get("/api/v1/namespaces/default/pods/ev").status_code == 404


class _LogHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/containerLogs/default/logged/main"):
            body = b"hello from the node agent\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


def test_logs_come_from_the_node_agent_endpoint(fresh_apiserver: Cluster) -> None:
    c = fresh_apiserver
    agent = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _LogHandler)
    thread = threading.Thread(target=agent.serve_forever, daemon=True)
    thread.start()
    try:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": agent.server_address[1]}}},
        }
        c.kubectl("create", "-f", "-", input=yaml.safe_dump(node))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "logged"},
            "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "x"}]},
        }
        c.kubectl("create", "-f", "-", input=yaml.safe_dump(pod))
        assert c.kubectl("logs", "logged").stdout == "hello from the node agent\n"
        bad = c.kubectl("logs", "logged", "-c", "nope", check=False)
        assert bad.returncode != 0 and "container nope is not valid" in bad.stderr
    finally:
        agent.shutdown()
        agent.server_close()


def test_metrics_endpoint(fresh_apiserver: Cluster) -> None:
    c = fresh_apiserver
    c.kubectl("get", "pods")
    text = c.kubectl("get", "--raw", "/metrics").stdout
    assert "apiserver_request_total{" in text and 'resource="pods"' in text
    assert "apiserver_storage_objects" in text
    version = json.loads(c.kubectl("get", "--raw", "/version").stdout)
    assert version["major"] == "1"
