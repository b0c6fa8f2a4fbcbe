"""A throw-away HTTP server that real kubectl can talk to, recording its writes.

It answers just enough discovery (``/version``, ``/api``, ``/apis``, one
``APIResourceList`` per group version) for kubectl's generator commands to
find their resources, records every POST/PUT body with its content type, and
answers 201 with the object as JSON (decoded by lahar's decoder when the body
is protobuf, so kubectl can print ``configmap/c created``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lahar.apiserver.errors import APIError
from lahar.apiserver.protobuf import decode, is_protobuf

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

# group version -> [(plural, kind, namespaced)]
RESOURCES: dict[str, list[tuple[str, str, bool]]] = {
    "v1": [
        ("namespaces", "Namespace", False),
        ("configmaps", "ConfigMap", True),
        ("secrets", "Secret", True),
        ("serviceaccounts", "ServiceAccount", True),
        ("services", "Service", True),
        ("pods", "Pod", True),
        ("nodes", "Node", False),
    ],
    "batch/v1": [("jobs", "Job", True)],
    "scheduling.k8s.io/v1": [("priorityclasses", "PriorityClass", False)],
}


@dataclass
class Recorded:
    method: str
    path: str
    content_type: str
    body: bytes


@dataclass
class FakeAPIServer:
    """Discovery plus a write recorder on 127.0.0.1, for one test."""

    server: ThreadingHTTPServer
    thread: threading.Thread
    workdir: Path
    requests: list[Recorded] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this server with a private kubeconfig and cache."""
        env = {**os.environ, "KUBECONFIG": str(self.workdir / "kubeconfig")}
        env["HOME"] = str(self.workdir)
        cmd = [KUBECTL, "--server", self.url, "--cache-dir", str(self.workdir / "cache")]
        cmd += ["--validate=false", *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    def last_write(self) -> Recorded:
        writes = [r for r in self.requests if r.method in ("POST", "PUT")]
        assert writes, "kubectl sent no write"
        return writes[-1]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def _discovery(path: str, port: int) -> Any:
    if path == "/version":
        return {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"}
    if path == "/api":
        cidr = {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [cidr]}
    if path == "/apis":
        groups = []
        for gv in RESOURCES:
            if "/" in gv:
                group, version = gv.split("/")
                ver = {"groupVersion": gv, "version": version}
                groups.append({"name": group, "versions": [ver], "preferredVersion": ver})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    gv = path.removeprefix("/api/").removeprefix("/apis/")
    if gv in RESOURCES:
        resources = [
            {
                "name": plural,
                "singularName": kind.lower(),
                "namespaced": namespaced,
                "kind": kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            }
            for plural, kind, namespaced in RESOURCES[gv]
        ]
        return {"kind": "APIResourceList", "groupVersion": gv, "resources": resources}
    return None


def start(workdir: Path) -> FakeAPIServer:
    """Start the server on an ephemeral port; call ``stop()`` when done."""
    requests: list[Recorded] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            found = _discovery(self.path.split("?", 1)[0], server.server_port)
            if found is None:
                status = {"kind": "Status", "apiVersion": "v1", "status": "Failure"}
                self._send(404, {**status, "reason": "NotFound", "code": 404})
            else:
                self._send(200, found)

        def _write(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size)
            content_type = self.headers.get("Content-Type", "")
            requests.append(Recorded(self.command, self.path, content_type, body))
            try:
                obj = decode(body) if is_protobuf(content_type) else json.loads(body)
            except APIError as err:
                self._send(err.code, err.to_status())
                return
            self._send(201, obj)

        do_POST = _write
        do_PUT = _write

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return FakeAPIServer(server, thread, workdir, requests)
