"""Shape of the /openapi/v3 index and documents."""

from __future__ import annotations

from typing import Any

from lahar.apiserver.resources import BUILTINS, ResourceType, from_crd
from lahar.apiserver.schema.openapi import (
    document_hash,
    openapi_v3_document,
    openapi_v3_index,
)

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
CRD: dict[str, Any] = {
    "spec": {
        "group": "ray.io",
        "names": {"kind": "RayCluster", "plural": "rayclusters", "shortNames": ["rc"]},
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
                            "metadata": {"type": "object"},
                            "spec": {
                                "type": "object",
                                "properties": {"suspend": {"type": "boolean"}},
                            },
                        },
                    }
                },
            }
        ],
    }
}


def _resolve(doc: dict[str, Any], ref: str) -> dict[str, Any]:
    schemas: dict[str, Any] = doc["components"]["schemas"]
    return schemas[ref.removeprefix("#/components/schemas/")]


def _all_refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [r for v in value.values() for r in _all_refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _all_refs(v)]
    return []


def _core(*kinds: str) -> list[ResourceType]:
    return [r for r in BUILTINS if r.group == "" and r.kind in kinds]


def test_index() -> None:
    index = openapi_v3_index(["v1", "ray.io/v1"], {"v1": "AB", "ray.io/v1": "CD"})
    assert index == {
        "paths": {
            "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=AB"},
            "apis/ray.io/v1": {"serverRelativeURL": "/openapi/v3/apis/ray.io/v1?hash=CD"},
        }
    }


def test_builtin_document_paths_and_patch_operation() -> None:
    doc = openapi_v3_document("v1", _core("Pod", "Namespace"))
    assert doc["openapi"] == "3.0.0"
    assert "title" in doc["info"]
    paths = doc["paths"]
    for path in (
        "/api/v1/namespaces/{namespace}/pods",
        "/api/v1/namespaces/{namespace}/pods/{name}",
        "/api/v1/namespaces/{namespace}/pods/{name}/status",
        "/api/v1/namespaces/{namespace}/pods/{name}/binding",
        "/api/v1/pods",
        "/api/v1/namespaces",
        "/api/v1/namespaces/{name}",
    ):
        assert path in paths, path
    item = paths["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert set(item) >= {"get", "put", "patch", "delete", "parameters"}
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert patch["x-kubernetes-action"] == "patch"
    assert "application/apply-patch+yaml" in patch["requestBody"]["content"]


def test_every_ref_resolves_and_standard_types_are_present() -> None:
    doc = openapi_v3_document("v1", _core("Pod", "ConfigMap", "Event", "Binding"))
    schemas = doc["components"]["schemas"]
    for ref in _all_refs(doc):
        assert ref.removeprefix("#/components/schemas/") in schemas, ref
    for name in ("ObjectMeta", "ListMeta", "Status", "Time", "Patch", "DeleteOptions"):
        assert f"{META}.{name}" in schemas
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert "io.k8s.api.core.v1.PodList" in schemas


def test_verbs_limit_operations() -> None:
    doc = openapi_v3_document("v1", _core("Binding"))
    collection = doc["paths"]["/api/v1/namespaces/{namespace}/bindings"]
    assert "post" in collection and "get" not in collection
    assert "/api/v1/namespaces/{namespace}/bindings/{name}" not in doc["paths"]


def test_crd_document() -> None:
    resources = from_crd(CRD)
    doc = openapi_v3_document("ray.io/v1", resources)
    schemas = doc["components"]["schemas"]
    kind = schemas["io.ray.v1.RayCluster"]
    assert kind["x-kubernetes-group-version-kind"] == [
        {"group": "ray.io", "version": "v1", "kind": "RayCluster"}
    ]
    assert kind["properties"]["metadata"]["allOf"] == [
        {"$ref": f"#/components/schemas/{META}.ObjectMeta"}
    ]
    assert kind["properties"]["apiVersion"]["type"] == "string"
    assert kind["properties"]["spec"]["properties"]["suspend"] == {"type": "boolean"}
    # The CRD's own schema is not modified.
    assert resources[0].schema is not None
    assert resources[0].schema["properties"]["metadata"] == {"type": "object"}
    lst = schemas["io.ray.v1.RayClusterList"]
    assert lst["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/io.ray.v1.RayCluster"
    }
    item = doc["paths"]["/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"]
    assert "fieldValidation" in [p["name"] for p in item["patch"]["parameters"]]
    assert "/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}/status" in doc["paths"]
    for ref in _all_refs(doc):
        assert _resolve(doc, ref) is not None
    assert f"{META}.ObjectMeta" in schemas and f"{META}.Status" in schemas


def test_crd_without_schema_preserves_everything() -> None:
    crd = {"spec": {**CRD["spec"], "versions": [{"name": "v1", "served": True, "storage": True}]}}
    doc = openapi_v3_document("ray.io/v1", from_crd(crd))
    kind = doc["components"]["schemas"]["io.ray.v1.RayCluster"]
    assert kind["x-kubernetes-preserve-unknown-fields"] is True


def test_hash_is_stable_and_content_sensitive() -> None:
    a = openapi_v3_document("v1", _core("Pod"))
    b = openapi_v3_document("v1", _core("Pod"))
    assert document_hash(a) == document_hash(b)
    assert document_hash(a) != document_hash(openapi_v3_document("v1", _core("Pod", "Secret")))
    assert len(document_hash(a)) == 128
