"""Scenario tests of validation, unknown fields, pruning and defaulting."""

from __future__ import annotations

import copy
import time
from typing import Any

from lahar.apiserver.errors import Cause
from lahar.apiserver.schema import builtin
from lahar.apiserver.schema.structural import apply_defaults, prune, unknown_fields, validate

CRD: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["entrypoint"],
            "properties": {
                "entrypoint": {"type": "string", "minLength": 1, "maxLength": 10},
                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
                "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "name": {"type": "string", "pattern": "^[a-z]+$"},
                "when": {"type": "string", "format": "date-time"},
                "size": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "workers": {
                    "type": "array",
                    "maxItems": 2,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["group"],
                    "items": {
                        "type": "object",
                        "required": ["group"],
                        "properties": {
                            "group": {"type": "string"},
                            "replicas": {"type": "integer", "default": 3},
                        },
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "limits": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"cpu": {"type": "string", "default": "1"}},
                    },
                },
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "settings": {
                    "type": "object",
                    "default": {},
                    "properties": {"level": {"type": "integer", "default": 5}},
                },
                "x": {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'y'"}]},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def obj(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"entrypoint": "python", **spec},
    }


def messages(causes: list[Cause]) -> list[tuple[str, str, str]]:
    return [(c.reason, c.field, c.message) for c in causes]


def test_valid_object_has_no_causes() -> None:
    good = obj(
        replicas=2,
        ratio=0.5,
        mode="b",
        name="abc",
        when="2024-05-01T10:00:00Z",
        size="1Gi",
        note=None,
        tags=["a", "b"],
        workers=[{"group": "g1"}, {"group": "g2", "replicas": 1}],
        labels={"a": "b"},
        extra={"anything": [1, {"x": None}]},
        template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        x="not-y",  # CEL rules are ignored
    )
    assert validate(good, CRD) == []
    assert unknown_fields(good, CRD) == []


def test_type_errors_use_kubernetes_wording() -> None:
    causes = validate(obj(replicas="string", ratio="x", tags="a"), CRD)
    assert messages(causes) == [
        (
            "FieldValueTypeInvalid",
            "spec.replicas",
            'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        ),
        (
            "FieldValueTypeInvalid",
            "spec.ratio",
            'Invalid value: "string": spec.ratio in body must be of type number: "string"',
        ),
        (
            "FieldValueTypeInvalid",
            "spec.tags",
            'Invalid value: "string": spec.tags in body must be of type array: "string"',
        ),
    ]


def test_integer_versus_number() -> None:
    assert validate(obj(replicas=2.0), CRD) == []
    assert validate(obj(ratio=0), CRD) == []
    assert [c.message for c in validate(obj(replicas=1.5), CRD)] == [
        'Invalid value: "number": spec.replicas in body must be of type integer: "number"'
    ]
    assert validate(obj(replicas=True), CRD)[0].reason == "FieldValueTypeInvalid"


def test_required_enum_pattern() -> None:
    bad = obj(mode="c", name="ABC")
    del bad["spec"]["entrypoint"]
    assert messages(validate(bad, CRD)) == [
        ("FieldValueRequired", "spec.entrypoint", "Required value"),
        (
            "FieldValueNotSupported",
            "spec.mode",
            'Unsupported value: "c": supported values: "a", "b"',
        ),
        (
            "FieldValueInvalid",
            "spec.name",
            "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'",
        ),
    ]


def test_bounds_and_lengths() -> None:
    causes = validate(
        obj(entrypoint="x" * 11, replicas=-1, ratio=1, workers=[{"group": "a"}] * 0), CRD
    )
    assert messages(causes) == [
        ("FieldValueTooLong", "spec.entrypoint", "Too long: may not be more than 10 bytes"),
        (
            "FieldValueInvalid",
            "spec.replicas",
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            "FieldValueInvalid",
            "spec.ratio",
            "Invalid value: 1: spec.ratio in body should be less than 1",
        ),
    ]
    short = validate(obj(entrypoint=""), CRD)
    assert (
        short[0].message
        == 'Invalid value: "": spec.entrypoint in body should be at least 1 chars long'
    )
    many = validate(obj(workers=[{"group": "a"}, {"group": "b"}, {"group": "c"}]), CRD)
    assert messages(many) == [
        ("FieldValueTooMany", "spec.workers", "Too many: 3: must have at most 2 items")
    ]


def test_formats() -> None:
    causes = validate(obj(replicas=2**31, when="yesterday"), CRD)
    assert messages(causes) == [
        (
            "FieldValueInvalid",
            "spec.replicas",
            'Invalid value: 2147483648: spec.replicas in body must be of type int32: "2147483648"',
        ),
        (
            "FieldValueInvalid",
            "spec.when",
            'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
        ),
    ]
    assert validate(obj(when="2024-05-01T10:00:00.123456789+02:00"), CRD) == []


def test_int_or_string_and_nullable() -> None:
    assert validate(obj(size=3), CRD) == []
    assert [c.message for c in validate(obj(size=[1]), CRD)] == [
        'Invalid value: "array": spec.size in body must be of type integer,string: "array"'
    ]
    assert validate(obj(note=None), CRD) == []
    # A null in a non-nullable field is dropped by the server, so it is not an error...
    assert validate(obj(mode=None), CRD) == []
    # ...unless the field is required, or the null is a list item.
    assert messages(validate(obj(entrypoint=None, tags=[None]), CRD)) == [
        ("FieldValueRequired", "spec.entrypoint", "Required value"),
        (
            "FieldValueTypeInvalid",
            "spec.tags[0]",
            'Invalid value: "null": spec.tags[0] in body must be of type string: "null"',
        ),
    ]


def test_root_metadata_restrictions_are_kept() -> None:
    schema = copy.deepcopy(CRD)
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 3}},
    }
    long_name = obj()
    long_name["metadata"]["name"] = "toolong"
    long_name["metadata"]["labels"] = {"a": "b"}
    assert [c.field for c in validate(long_name, schema)] == ["metadata.name"]
    assert unknown_fields(long_name, schema) == []


def test_kubectl_style_null_creation_timestamp() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": None},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {}}]},
        "status": {},
    }
    assert validate(pod, builtin.schema_for("v1", "Pod")) == []
    assert validate(obj(), CRD) == []
    with_null = obj()
    with_null["metadata"]["creationTimestamp"] = None
    assert validate(with_null, CRD) == []


def test_list_uniqueness() -> None:
    causes = validate(obj(tags=["a", "a"], workers=[{"group": "g"}, {"group": "g"}]), CRD)
    assert messages(causes) == [
        ("FieldValueDuplicate", "spec.tags[1]", 'Duplicate value: "a"'),
        (
            "FieldValueDuplicate",
            "spec.workers[1]",
            'Duplicate value: map[string]interface {}{"group":"g"}',
        ),
    ]


def test_embedded_resource_needs_type_meta() -> None:
    causes = validate(obj(template={"metadata": {"name": 1}}), CRD)
    assert messages(causes) == [
        ("FieldValueRequired", "spec.template.apiVersion", "Required value: must not be empty"),
        ("FieldValueRequired", "spec.template.kind", "Required value: must not be empty"),
        (
            "FieldValueTypeInvalid",
            "spec.template.metadata.name",
            'Invalid value: "integer": spec.template.metadata.name in body'
            ' must be of type string: "integer"',
        ),
    ]


def test_metadata_is_validated_as_object_meta() -> None:
    bad = obj()
    bad["metadata"]["labels"] = {"a": 1}
    assert [c.field for c in validate(bad, CRD)] == ["metadata.labels.a"]


def test_unknown_fields() -> None:
    o = obj(foo=1, workers=[{"group": "g", "bar": 2}], extra={"deep": {"x": 1}}, labels={"k": "v"})
    o["metadata"]["bogus"] = True
    o["top"] = 1
    o["status"] = {"whatever": 1}
    o["spec"]["template"] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"nope": 1}, "spec": {}}
    assert unknown_fields(o, CRD) == [
        'unknown field "metadata.bogus"',
        'unknown field "spec.foo"',
        'unknown field "spec.template.metadata.nope"',
        'unknown field "spec.workers[0].bar"',
        'unknown field "top"',
    ]


def test_items_of_a_preserving_list_keep_unknown_fields() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "array",
                "x-kubernetes-preserve-unknown-fields": True,
                "items": {"type": "object", "properties": {"a": {"type": "string"}}},
            }
        },
    }
    o = {"spec": [{"a": "x", "b": 1}]}
    assert unknown_fields(o, schema) == []
    assert prune(o, schema) is o


def test_prune_drops_unknown_fields_only() -> None:
    o = obj(foo=1, workers=[{"group": "g", "bar": 2}], extra={"deep": 1})
    o["metadata"]["bogus"] = True
    before = copy.deepcopy(o)
    pruned = prune(o, CRD)
    assert o == before  # the input is untouched
    assert pruned == {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"entrypoint": "python", "workers": [{"group": "g"}], "extra": {"deep": 1}},
    }
    assert unknown_fields(pruned, CRD) == []
    clean = obj()
    assert prune(clean, CRD) is clean


def test_prune_keeps_type_meta_at_root() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object"}}}
    o = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "a"}, "spec": {"a": 1}}
    assert prune(o, schema) == {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "a"},
        "spec": {},
    }


def test_defaults() -> None:
    o = obj(
        workers=[{"group": "g"}, {"group": "h", "replicas": 1}],
        limits={"a": {}, "b": {"cpu": "2"}},
        mode=None,
        name=None,
    )
    before = copy.deepcopy(o)
    out = apply_defaults(o, CRD)
    assert o == before
    spec = out["spec"]
    assert spec["replicas"] == 1
    assert spec["mode"] == "a"  # null in a non-nullable field with a default
    assert "name" not in spec  # null in a non-nullable field without one
    assert spec["workers"] == [{"group": "g", "replicas": 3}, {"group": "h", "replicas": 1}]
    assert spec["limits"] == {"a": {"cpu": "1"}, "b": {"cpu": "2"}}
    assert spec["settings"] == {"level": 5}  # defaulted objects are defaulted further
    assert "tags" not in spec
    assert apply_defaults(out, CRD) == out


def test_defaults_keep_nullable_null() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "nullable": True, "default": "x"}},
    }
    assert apply_defaults({"a": None}, schema) == {"a": None}
    assert apply_defaults({}, schema) == {"a": "x"}


def test_builtin_pod_unknown_fields_and_validation() -> None:
    schema = builtin.schema_for("v1", "Pod")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "foo": 1},
        "spec": {"containers": [{"image": "x", "bar": 2, "ports": [{"containerPort": "80"}]}]},
    }
    assert unknown_fields(pod, schema) == [
        'unknown field "metadata.foo"',
        'unknown field "spec.containers[0].bar"',
    ]
    assert messages(validate(pod, schema)) == [
        ("FieldValueRequired", "spec.containers[0].name", "Required value"),
        (
            "FieldValueTypeInvalid",
            "spec.containers[0].ports[0].containerPort",
            'Invalid value: "string": spec.containers[0].ports[0].containerPort in body'
            ' must be of type integer: "string"',
        ),
    ]


def test_builtin_pod_tolerates_duplicate_env() -> None:
    schema = builtin.schema_for("v1", "Pod")
    env = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "env": env}]}}
    assert validate(pod, schema) == []
    pod["spec"]["containers"].append({"name": "c"})
    assert [c.field for c in validate(pod, schema)] == ["spec.containers[1]"]


def _big_pod() -> dict[str, Any]:
    container = {
        "name": "ray-head",
        "image": "rayproject/ray:2.9.0",
        "command": ["/bin/bash", "-lc", "--"],
        "args": ["ray start --head"],
        "env": [{"name": f"E{i}", "value": str(i)} for i in range(8)],
        "ports": [{"containerPort": p, "name": f"p{p}"} for p in (6379, 8265, 10001)],
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}, "requests": {"cpu": 1}},
        "volumeMounts": [{"name": "log", "mountPath": "/tmp/ray"}],
        "readinessProbe": {"exec": {"command": ["bash", "-c", "true"]}, "periodSeconds": 5},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "head",
            "namespace": "default",
            "labels": {"ray.io/cluster": "c", "ray.io/node-type": "head"},
            "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "c", "uid": "u1"}
            ],
        },
        "spec": {
            "containers": [container, {**container, "name": "sidecar"}],
            "volumes": [{"name": "log", "emptyDir": {}}],
            "restartPolicy": "Never",
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
            ],
        },
    }


def test_validating_a_pod_is_fast() -> None:
    schema = builtin.schema_for("v1", "Pod")
    pod = _big_pod()
    assert validate(pod, schema) == []
    assert unknown_fields(pod, schema) == []
    rounds = 200
    start = time.perf_counter()
    for _ in range(rounds):
        validate(pod, schema)
    per_call = (time.perf_counter() - start) / rounds
    assert per_call < 0.001, f"{per_call * 1e6:.0f} µs per Pod validation"


def test_crd_with_inlined_pod_template() -> None:
    """A RayCluster-like CRD embedding inline_schema(PodTemplateSpec)."""
    template = builtin.inline_schema("io.k8s.api.core.v1.PodTemplateSpec", descriptions=False)
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "headGroupSpec": {"type": "object", "properties": {"template": template}}
                },
            }
        },
    }
    head = {
        "metadata": {"labels": {"app": "ray"}, "annotations": {"a": "b"}, "uid": "x"},
        "spec": {
            "containers": [
                {"name": "ray-head", "image": "ray", "ports": [{"containerPort": 6379}], "x": 1}
            ]
        },
    }
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c"},
        "spec": {"headGroupSpec": {"template": head}},
    }
    assert unknown_fields(cluster, schema) == [
        'unknown field "spec.headGroupSpec.template.metadata.uid"',
        'unknown field "spec.headGroupSpec.template.spec.containers[0].x"',
    ]
    pruned = prune(cluster, schema)
    tpl = pruned["spec"]["headGroupSpec"]["template"]
    assert tpl["metadata"] == {"labels": {"app": "ray"}, "annotations": {"a": "b"}}
    assert "x" not in tpl["spec"]["containers"][0]
    defaulted = apply_defaults(pruned, schema)
    port = defaulted["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 6379, "protocol": "TCP"}
    assert validate(defaulted, schema) == []
    dup = copy.deepcopy(defaulted)
    containers = dup["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    containers.append(dict(containers[0]))
    assert [c.reason for c in validate(dup, schema)] == ["FieldValueDuplicate"]


def test_uncompilable_pattern_is_skipped() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=["}}}
    assert validate({"a": "x"}, schema) == []


def test_non_string_enum_values() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}
    assert validate({"n": 2}, schema) == []
    assert validate({"n": 2.0}, schema) == []
    assert [c.message for c in validate({"n": 3}, schema)] == [
        'Unsupported value: 3: supported values: "1", "2"'
    ]
