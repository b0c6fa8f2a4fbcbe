"""CustomResourceDefinitions: names, scope, versions, schemas, status on create."""

from __future__ import annotations

import copy

from lahar.apiserver.builtins import default

from .helpers import RT, context, create, update

SCHEMA = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}


def crd(**spec: object) -> dict:
    base = {
        "group": "ray.io",
        "scope": "Namespaced",
        "names": {"plural": "rayclusters", "kind": "RayCluster", "shortNames": ["rc"]},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": SCHEMA}],
    }
    base.update(spec)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "rayclusters.ray.io"},
        "spec": base,
    }


def test_defaults_and_established_status() -> None:
    out = default(crd(), RT["CustomResourceDefinition"], context())
    assert out["spec"]["names"] == {
        "plural": "rayclusters",
        "kind": "RayCluster",
        "shortNames": ["rc"],
        "singular": "raycluster",
        "listKind": "RayClusterList",
    }
    assert out["spec"]["conversion"] == {"strategy": "None"}
    status = out["status"]
    assert status["storedVersions"] == ["v1"]
    assert status["acceptedNames"]["kind"] == "RayCluster"
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("NamesAccepted", "True"),
        ("Established", "True"),
    ]
    assert create(crd(), "CustomResourceDefinition") == []


def test_name_group_and_scope() -> None:
    obj = crd(group="rayio", scope="Global")
    assert create(obj, "CustomResourceDefinition") == [
        'metadata.name: Invalid value: "rayclusters.ray.io": must be '
        'spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "rayio": should be a domain with at least one dot',
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
    ]


def test_names() -> None:
    obj = crd(names={"plural": "RayClusters", "kind": "Ray_Cluster", "listKind": "Ray_Cluster"})
    obj["metadata"]["name"] = "RayClusters.ray.io"
    out = create(obj, "CustomResourceDefinition")
    assert out[0].startswith(
        'metadata.name: Invalid value: "RayClusters.ray.io": a lowercase RFC 1123'
    )
    assert out[1].startswith('spec.names.plural: Invalid value: "RayClusters": a DNS-1035 label')
    assert out[2].startswith('spec.names.singular: Invalid value: "ray_cluster": a DNS-1035')
    assert any(
        line.startswith(
            'spec.names.kind: Invalid value: "Ray_Cluster": may have mixed case, but should'
        )
        for line in out
    )
    assert (
        'spec.names.listKind: Invalid value: "Ray_Cluster": kind and listKind may not be the same'
        in out
    )


def test_versions() -> None:
    no_storage = crd(versions=[{"name": "v1", "served": True, "storage": False, "schema": SCHEMA}])
    out = create(no_storage, "CustomResourceDefinition")
    assert len(out) == 1
    assert out[0].startswith("spec.versions: Invalid value: [")
    assert out[0].endswith("must have exactly one version marked as storage version")
    no_schema = crd(versions=[{"name": "v1", "served": True, "storage": True}])
    assert create(no_schema, "CustomResourceDefinition") == [
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
    ]
    untyped = {
        "openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {"x": {}}}}}
    }
    assert create(
        crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": untyped}]),
        "CustomResourceDefinition",
    ) == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not "
        "be "
        "empty for specified object fields",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].type: Required "
        "value: "
        "must not be empty for specified object fields",
    ]
    root = {"openAPIV3Schema": {"type": "string"}}
    assert create(
        crd(versions=[{"name": "V1", "served": True, "storage": True, "schema": root}]),
        "CustomResourceDefinition",
    )[1] == (
        'spec.versions[0].schema.openAPIV3Schema.type: Invalid value: "string": must be object at '
        "the root"
    )
    preserve = {
        "openAPIV3Schema": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"status": {"x-kubernetes-preserve-unknown-fields": True}},
        }
    }
    assert (
        create(
            crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": preserve}]),
            "CustomResourceDefinition",
        )
        == []
    )


def test_scale_subresource_and_columns() -> None:
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": SCHEMA,
        "subresources": {
            "scale": {"specReplicasPath": "replicas", "statusReplicasPath": ".status.replicas"}
        },
        "additionalPrinterColumns": [
            {"name": "Age", "type": "time", "jsonPath": ".metadata.creationTimestamp"}
        ],
    }
    assert create(crd(versions=[version]), "CustomResourceDefinition") == [
        'spec.versions[0].subresources.scale.specReplicasPath: Invalid value: "replicas": should '
        "be a json path under .spec",
        'spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "time": supported '
        "values: "
        '"boolean", "date", "integer", "number", "string"',
    ]


def test_update() -> None:
    old = default(crd(), RT["CustomResourceDefinition"], context())
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    assert update(new, old, "CustomResourceDefinition") == [
        'spec.scope: Invalid value: "Cluster": field is immutable'
    ]
    new = copy.deepcopy(old)
    new["spec"]["versions"] = [
        {"name": "v1", "served": True, "storage": False, "schema": SCHEMA},
        {"name": "v2", "served": True, "storage": True, "schema": SCHEMA},
    ]
    out = default(new, RT["CustomResourceDefinition"], context(), old=old)
    assert out["status"]["storedVersions"] == ["v1", "v2"]
    assert update(new, old, "CustomResourceDefinition") == []
    new["spec"]["versions"] = new["spec"]["versions"][1:]
    assert update(new, old, "CustomResourceDefinition") == [
        'status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions'
    ]


def test_conversion_and_pruning_flags() -> None:
    obj = crd(conversion={"strategy": "Webhook"}, preserveUnknownFields=True)
    assert create(obj, "CustomResourceDefinition") == [
        "spec.conversion.webhook: Required value: required when strategy is set to Webhook",
        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
        "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    ]
