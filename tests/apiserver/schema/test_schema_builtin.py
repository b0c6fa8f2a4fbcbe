"""Built-in schemas generated from lightkube-models."""

from __future__ import annotations

from typing import Any

import pytest

from lahar.apiserver.resources import BUILTINS
from lahar.apiserver.schema import builtin

POD = "io.k8s.api.core.v1.Pod"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"


def _walk(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(schema, dict):
        out.append((path, schema))
        for key, value in (schema.get("properties") or {}).items():
            out += _walk(value, f"{path}.{key}")
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                out += _walk(schema[key], f"{path}[{key}]")
    return out


def assert_structural(schema: dict[str, Any]) -> None:
    """The CRD structural-schema rules our inlined schemas must follow."""
    for path, node in _walk(schema):
        assert "$ref" not in node and "allOf" not in node, path
        assert not ("properties" in node and "additionalProperties" in node), path
        typed = "type" in node
        special = node.get("x-kubernetes-int-or-string") or node.get(
            "x-kubernetes-preserve-unknown-fields"
        )
        assert typed or special, f"untyped node at {path}"
        if node.get("x-kubernetes-list-type") == "map":
            items = node["items"]
            for key in node["x-kubernetes-list-map-keys"]:
                prop = items["properties"][key]
                assert key in items.get("required", ()) or "default" in prop, (path, key)


def test_definition_names() -> None:
    assert builtin.definition_name("v1", "Pod") == POD
    assert builtin.definition_name("batch/v1", "Job") == "io.k8s.api.batch.v1.Job"
    assert (
        builtin.definition_name("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        == "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
    )
    with pytest.raises(KeyError):
        builtin.definition_name("v1", "Nope")


@pytest.mark.parametrize("resource", BUILTINS, ids=lambda r: r.kind)
def test_every_builtin_resource_has_a_schema(resource: Any) -> None:
    name = builtin.definition_name(resource.api_version, resource.kind)
    schema = builtin.definitions()[name]
    gvk = schema["x-kubernetes-group-version-kind"]
    assert {"group": resource.group, "version": resource.version, "kind": resource.kind} in gvk
    assert_structural(builtin.schema_for(resource.api_version, resource.kind))


def test_descriptions_come_from_the_models() -> None:
    defs = builtin.definitions()
    pod = defs[POD]
    assert pod["description"].startswith("Pod is a collection of containers")
    container = defs["io.k8s.api.core.v1.Container"]
    assert container["required"] == ["name"]
    assert "DNS_LABEL" in container["properties"]["name"]["description"]
    # Refs carry the field description next to an allOf, like the real v3 documents.
    spec = pod["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert "desired behavior" in spec["description"]
    assert defs[f"{META}.ListMeta"]["properties"]["continue"]["type"] == "string"


def test_special_types() -> None:
    defs = builtin.definitions()
    assert defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["x-kubernetes-int-or-string"]
    assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["x-kubernetes-int-or-string"]
    assert defs[f"{META}.Time"] == {**defs[f"{META}.Time"], "type": "string", "format": "date-time"}
    assert defs[f"{META}.MicroTime"]["format"] == "date-time"
    raw = defs["io.k8s.apimachinery.pkg.runtime.RawExtension"]
    assert raw["x-kubernetes-preserve-unknown-fields"] is True
    json_def = defs["io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"]
    assert json_def["x-kubernetes-preserve-unknown-fields"] is True


def test_list_types() -> None:
    defs = builtin.definitions()
    spec = defs["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert spec["containers"]["x-kubernetes-list-type"] == "map"
    assert spec["containers"]["x-kubernetes-list-map-keys"] == ["name"]
    assert spec["volumes"]["x-kubernetes-list-map-keys"] == ["name"]
    container = defs["io.k8s.api.core.v1.Container"]["properties"]
    assert container["ports"]["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert container["env"]["x-kubernetes-list-map-keys"] == ["name"]
    assert container["volumeMounts"]["x-kubernetes-list-map-keys"] == ["mountPath"]
    meta = defs[f"{META}.ObjectMeta"]["properties"]
    assert meta["finalizers"]["x-kubernetes-list-type"] == "set"
    assert meta["ownerReferences"]["x-kubernetes-list-map-keys"] == ["uid"]
    status = defs["io.k8s.api.core.v1.PodStatus"]["properties"]
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]


def test_map_value_types() -> None:
    inlined = builtin.inline_schema("io.k8s.api.core.v1.ResourceRequirements")
    assert inlined["properties"]["limits"]["additionalProperties"]["x-kubernetes-int-or-string"]
    pod = builtin.schema_for("v1", "Pod")
    labels = pod["properties"]["metadata"]["properties"]["labels"]
    assert labels == {"type": "object", "additionalProperties": {"type": "string"}}


def test_pod_template_spec_for_crds() -> None:
    schema = builtin.inline_schema("io.k8s.api.core.v1.PodTemplateSpec")
    assert_structural(schema)
    meta = schema["properties"]["metadata"]
    assert meta["type"] == "object"
    assert set(meta["properties"]) == {"annotations", "finalizers", "labels", "name", "namespace"}
    containers = schema["properties"]["spec"]["properties"]["containers"]
    assert containers["items"]["properties"]["image"]["type"] == "string"
    assert "description" in containers["items"]["properties"]["image"]
    ports = containers["items"]["properties"]["ports"]["items"]["properties"]
    assert ports["protocol"]["default"] == "TCP"
    # A fresh copy each time: callers may edit it.
    schema["properties"].clear()
    assert builtin.inline_schema("io.k8s.api.core.v1.PodTemplateSpec")["properties"]


def test_inline_without_descriptions() -> None:
    schema = builtin.inline_schema("io.k8s.api.core.v1.PodTemplateSpec", descriptions=False)
    assert all("description" not in node for _, node in _walk(schema))
    assert_structural(schema)


def test_recursive_types_are_cut() -> None:
    schema = builtin.schema_for("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    assert_structural(schema)
    versions = schema["properties"]["spec"]["properties"]["versions"]["items"]
    props = versions["properties"]["schema"]["properties"]["openAPIV3Schema"]["properties"]
    assert props["properties"]["additionalProperties"]["x-kubernetes-preserve-unknown-fields"]


def test_full_metadata_when_asked() -> None:
    schema = builtin.inline_schema("io.k8s.api.core.v1.PodTemplateSpec", full_metadata=True)
    assert "ownerReferences" in schema["properties"]["metadata"]["properties"]
    meta = builtin.inline_schema(f"{META}.ObjectMeta")
    assert "managedFields" in meta["properties"]
