"""Merge-rule tables: built-in kinds, CRD schemas and the FieldsV1 encoding."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.patch import ListType, builtin_list_semantics, schema_list_semantics
from lahar.apiserver.patch.fieldset import from_fields_v1, human_path, to_fields_v1


def test_pod_spec_rules_are_shared_with_job_templates() -> None:
    pod = builtin_list_semantics("v1", "Pod")
    job = builtin_list_semantics("batch/v1", "Job")
    for path in [("containers",), ("containers", "env"), ("volumes",), ("initContainers", "ports")]:
        assert pod.resolve(("spec", *path)) == job.resolve(("spec", "template", "spec", *path))
    env = pod.resolve(("spec", "containers", "env"))
    assert (env.kind, env.keys, env.strategy) == ("map", ("name",), "merge")
    ports = pod.resolve(("spec", "containers", "ports"))
    assert ports.keys == ("containerPort", "protocol") and ports.merge_key == "containerPort"
    assert ports.key_of({"containerPort": 80}) == {"containerPort": 80, "protocol": "TCP"}
    assert pod.resolve(("spec", "volumes")).strategy == "merge,retainKeys"
    assert pod.resolve(("spec", "containers", "volumeMounts")).merge_key == "mountPath"
    assert pod.resolve(("spec", "tolerations")) == ListType("atomic")
    assert pod.resolve(("spec", "containers", "args")) == ListType("atomic")
    assert pod.object_kind(("spec", "nodeSelector")) == "atomic"
    assert pod.object_kind(("metadata", "labels")) == "map"
    assert pod.resolve(("metadata", "finalizers")) == ListType("set", (), "merge")
    assert job.object_kind(("spec", "selector")) == "atomic"


def test_lists_that_merge_under_smp_but_are_atomic_for_apply() -> None:
    job = builtin_list_semantics("batch/v1", "Job")
    node = builtin_list_semantics("v1", "Node")
    pod = builtin_list_semantics("v1", "Pod")
    for lists, path in [
        (job, ("status", "conditions")),
        (pod, ("status", "hostIPs")),
    ]:
        lt = lists.resolve(path)
        assert lt.kind == "atomic" and lt.smp_merges
    assert node.resolve(("spec", "taints")) == ListType("atomic")
    assert pod.resolve(("status", "conditions")).kind == "map"
    assert node.resolve(("status", "addresses")).keys == ("type",)


def test_service_ports_keyed_by_port_and_protocol() -> None:
    svc = builtin_list_semantics("v1", "Service")
    ports = svc.resolve(("spec", "ports"))
    assert ports.keys == ("port", "protocol") and ports.merge_key == "port"
    assert svc.object_kind(("spec", "selector")) == "atomic"


def test_unknown_kind_has_object_meta_rules_only() -> None:
    lists = builtin_list_semantics("example.com/v1", "Thing")
    assert lists.resolve(("metadata", "ownerReferences")).keys == ("uid",)
    assert lists.resolve(("spec", "anything")) == ListType("atomic")


def test_schema_semantics_reads_extensions_and_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                        "items": {
                            "type": "object",
                            "properties": {
                                "port": {"type": "integer"},
                                "protocol": {"type": "string", "default": "TCP"},
                            },
                        },
                    },
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "metadata": {"type": "object"},
        },
    }
    lists = schema_list_semantics(schema)
    ports = lists.resolve(("spec", "ports"))
    assert ports.kind == "map" and ports.key_of({"port": 1}) == {"port": 1, "protocol": "TCP"}
    assert ports.strategy == ""  # CRDs never take strategic merge patches
    assert lists.resolve(("spec", "tags")).kind == "atomic"
    assert lists.object_kind(("spec", "selector")) == "atomic"
    assert lists.object_kind(("spec", "env")) == "map"
    assert lists.resolve(("metadata", "finalizers")).kind == "set"


def test_human_paths_match_conflict_messages() -> None:
    path = (
        "f:spec",
        "f:containers",
        'k:{"name":"c"}',
        "f:ports",
        'k:{"containerPort":80,"protocol":"TCP"}',
    )
    assert human_path(path) == '.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"]'
    assert human_path(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'


elements = st.one_of(
    st.sampled_from(["a", "b", "c"]).map(lambda s: "f:" + s),
    st.sampled_from(["x", "y"]).map(lambda s: 'k:{"name":"' + s + '"}'),
    st.integers(0, 3).map(lambda i: f"v:{i}"),
)
field_sets = st.sets(st.lists(elements, min_size=1, max_size=4).map(tuple), max_size=12)


@given(field_sets)
def test_fields_v1_round_trip(paths: set[tuple[str, ...]]) -> None:
    encoded = to_fields_v1(paths)
    assert from_fields_v1(encoded) == paths
    assert to_fields_v1(from_fields_v1(encoded)) == encoded
