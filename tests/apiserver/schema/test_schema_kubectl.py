"""kubectl 1.32 against our OpenAPI v3 documents: ``kubectl explain`` end to end.

A throw-away Starlette app on 127.0.0.1 serves just what ``explain`` needs:
``/version``, legacy discovery and the ``/openapi/v3`` index and documents.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from lahar.apiserver.resources import BUILTINS, ResourceType, from_crd
from lahar.apiserver.schema.builtin import inline_schema
from lahar.apiserver.schema.openapi import document_hash, openapi_v3_document, openapi_v3_index

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl not installed")

RAYJOB_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "rayjobs.ray.io"},
    "spec": {
        "group": "ray.io",
        "names": {"kind": "RayJob", "plural": "rayjobs", "singular": "rayjob"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "description": "RayJobSpec defines the desired state of RayJob",
                                "properties": {
                                    "entrypoint": {
                                        "type": "string",
                                        "description": "The command that starts the job.",
                                    },
                                    "shutdownAfterJobFinishes": {"type": "boolean"},
                                    "template": inline_schema("io.k8s.api.core.v1.PodTemplateSpec"),
                                },
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


seen_creates: list[tuple[str, dict[str, str]]] = []


def _resource_list(gv: str, resources: list[ResourceType]) -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": [
            {
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
                "shortNames": list(r.short_names),
            }
            for r in resources
        ],
    }


def _app() -> Starlette:
    pods = [r for r in BUILTINS if r.kind == "Pod"]
    rayjobs = from_crd(RAYJOB_CRD)
    jobs = [r for r in BUILTINS if r.group == "batch"]
    docs = {
        "api/v1": openapi_v3_document("v1", pods),
        "apis/ray.io/v1": openapi_v3_document("ray.io/v1", rayjobs),
        "apis/batch/v1": openapi_v3_document("batch/v1", jobs),
    }
    hashes = {path: document_hash(doc) for path, doc in docs.items()}
    index = openapi_v3_index(["v1", "ray.io/v1", "batch/v1"], hashes)

    async def version(_: Request) -> JSONResponse:
        return JSONResponse(
            {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"}
        )

    async def api(_: Request) -> JSONResponse:
        return JSONResponse(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}
                ],
            }
        )

    async def apis(_: Request) -> JSONResponse:
        groups = []
        for name in ("ray.io", "batch"):
            gv = {"groupVersion": f"{name}/v1", "version": "v1"}
            groups.append({"name": name, "versions": [gv], "preferredVersion": gv})
        return JSONResponse({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    async def core_v1(_: Request) -> JSONResponse:
        return JSONResponse(_resource_list("v1", pods))

    async def ray_v1(_: Request) -> JSONResponse:
        return JSONResponse(_resource_list("ray.io/v1", rayjobs))

    async def batch_v1(_: Request) -> JSONResponse:
        return JSONResponse(_resource_list("batch/v1", jobs))

    async def create(request: Request) -> JSONResponse:
        body = await request.json()
        seen_creates.append((request.url.path, dict(request.query_params)))
        body.setdefault("metadata", {})["namespace"] = request.path_params["namespace"]
        return JSONResponse(body, status_code=201)

    async def openapi_index(_: Request) -> JSONResponse:
        return JSONResponse(index)

    async def openapi_doc(request: Request) -> JSONResponse:
        doc = docs.get(request.path_params["path"])
        if doc is None:
            return JSONResponse({"kind": "Status", "code": 404}, status_code=404)
        return JSONResponse(doc)

    return Starlette(
        routes=[
            Route("/version", version),
            Route("/api", api),
            Route("/apis", apis),
            Route("/api/v1", core_v1),
            Route("/apis/ray.io/v1", ray_v1),
            Route("/apis/batch/v1", batch_v1),
            Route("/api/v1/namespaces/{namespace}/pods", create, methods=["POST"]),
            Route("/apis/ray.io/v1/namespaces/{namespace}/rayjobs", create, methods=["POST"]),
            Route("/openapi/v3", openapi_index),
            Route("/openapi/v3/{path:path}", openapi_doc),
        ]
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    config = uvicorn.Config(_app(), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not srv.started:
            if time.monotonic() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


def _kubectl(server: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, "--server", server, "--cache-dir", str(tmp_path / "cache"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")},
    )


def test_explain_pod_containers(server: str, tmp_path: Path) -> None:
    result = _kubectl(server, tmp_path, "explain", "pod.spec.containers")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "KIND:" in out and "Pod" in out
    assert "FIELD: containers <[]Container>" in out
    assert "A single application container" in out
    assert "image\t<string>" in out
    assert "name\t<string> -required-" in out


def test_explain_pod_resources_limits(server: str, tmp_path: Path) -> None:
    result = _kubectl(server, tmp_path, "explain", "pod.spec.containers.resources")
    assert result.returncode == 0, result.stderr
    assert "limits\t<map[string]Quantity>" in result.stdout


def test_explain_builtin_group_follows_refs_across_groups(server: str, tmp_path: Path) -> None:
    result = _kubectl(server, tmp_path, "explain", "job.spec.template.spec.containers.image")
    assert result.returncode == 0, result.stderr
    assert "GROUP:      batch" in result.stdout
    assert "FIELD: image <string>" in result.stdout
    assert "Container image name." in result.stdout


def test_explain_crd_spec(server: str, tmp_path: Path) -> None:
    result = _kubectl(server, tmp_path, "explain", "rayjob.spec")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GROUP:      ray.io" in out
    assert "RayJobSpec defines the desired state of RayJob" in out
    assert "entrypoint\t<string>" in out
    assert "The command that starts the job." in out


def test_explain_embedded_pod_template(server: str, tmp_path: Path) -> None:
    """The inlined PodTemplateSpec (what our CRD manifests embed) explains like a Pod's."""
    result = _kubectl(server, tmp_path, "explain", "rayjob.spec.template.spec.containers")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "FIELD: containers <[]Object>" in out
    assert "image\t<string>" in out
    assert "name\t<string> -required-" in out
    assert "List of containers belonging to the pod." in out


def test_explain_crd_metadata_is_object_meta(server: str, tmp_path: Path) -> None:
    result = _kubectl(server, tmp_path, "explain", "rayjob.metadata.labels")
    assert result.returncode == 0, result.stderr
    assert "FIELD: labels <map[string]string>" in result.stdout


@pytest.mark.parametrize(
    ("manifest", "path"),
    [
        (
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
            "/api/v1/namespaces/default/pods",
        ),
        (
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "metadata": {"name": "j"},
                "spec": {"entrypoint": "python x.py"},
            },
            "/apis/ray.io/v1/namespaces/default/rayjobs",
        ),
    ],
    ids=["pod", "rayjob"],
)
def test_create_sends_strict_field_validation(
    server: str, tmp_path: Path, manifest: dict[str, Any], path: str
) -> None:
    """kubectl's query-param verifier finds ``fieldValidation`` in our patch operations,
    so ``create`` leaves validation to the server (``fieldValidation=Strict``)."""
    seen_creates.clear()
    file = tmp_path / "obj.json"
    file.write_text(json.dumps(manifest))
    result = _kubectl(server, tmp_path, "create", "-n", "default", "-f", str(file))
    assert result.returncode == 0, result.stderr
    assert "created" in result.stdout
    assert seen_creates == [(path, {"fieldManager": "kubectl-create", "fieldValidation": "Strict"})]
