"""Object metadata: names per kind, namespaces, labels, annotations, owners, updates."""

from __future__ import annotations

from lahar.apiserver.builtins import validate_metadata
from lahar.apiserver.errors import invalid
from lahar.apiserver.resources import ResourceType

from .helpers import RT, lines

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    r"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
CR = ResourceType("ray.io", "v1", "RayCluster", "rayclusters", "raycluster", True, builtin=False)


def meta(**fields: object) -> dict:
    return {"metadata": {"namespace": "default", **fields}}


def test_bad_pod_name_matches_kubectl_output() -> None:
    causes = validate_metadata(meta(name="Foo_bar"), RT["Pod"])
    assert lines(causes) == [f'metadata.name: Invalid value: "Foo_bar": {SUBDOMAIN_MSG}']
    assert causes[0].reason == "FieldValueInvalid"
    err = invalid("Pod", "Foo_bar", causes)
    assert (
        err.message
        == f'Pod "Foo_bar" is invalid: metadata.name: Invalid value: "Foo_bar": {SUBDOMAIN_MSG}'
    )


def test_name_required() -> None:
    assert lines(validate_metadata(meta(), RT["ConfigMap"])) == [
        "metadata.name: Required value: name or generateName is required"
    ]


def test_name_rules_per_kind() -> None:
    ns = validate_metadata({"metadata": {"name": "a.b"}}, RT["Namespace"])
    assert lines(ns) == ['metadata.name: Invalid value: "a.b": must not contain dots']
    svc = lines(validate_metadata(meta(name="1svc"), RT["Service"]))
    assert svc[0].startswith('metadata.name: Invalid value: "1svc": a DNS-1035 label must')
    assert validate_metadata(meta(name="x" * 63), RT["Service"]) == []
    assert lines(validate_metadata(meta(name="x" * 64), RT["Service"])) == [
        f'metadata.name: Invalid value: "{"x" * 64}": must be no more than 63 characters'
    ]
    assert lines(validate_metadata(meta(name="a" * 254), RT["Pod"]))[0].endswith(
        "must be no more than 253 characters"
    )
    assert validate_metadata(meta(name="my.dotted-name"), RT["Pod"]) == []
    assert validate_metadata(meta(name="web.v1"), CR) == []
    assert lines(validate_metadata(meta(name="Web"), CR))[0].startswith(
        'metadata.name: Invalid value: "Web"'
    )


def test_events_only_need_path_segment_names() -> None:
    assert validate_metadata(meta(name="Pod_x.17a"), RT["Event"]) == []
    assert lines(validate_metadata(meta(name=".."), RT["Event"])) == [
        "metadata.name: Invalid value: \"..\": may not be '..'"
    ]


def test_namespace_required_for_namespaced_and_ignored_for_cluster_scoped() -> None:
    assert lines(validate_metadata({"metadata": {"name": "p"}}, RT["Pod"])) == [
        "metadata.namespace: Required value"
    ]
    # The real server silently drops a namespace sent on a cluster-scoped object.
    assert validate_metadata({"metadata": {"name": "n1", "namespace": "x"}}, RT["Node"]) == []
    assert lines(
        validate_metadata(
            meta(name="p") | {"metadata": {"name": "p", "namespace": "Bad"}}, RT["Pod"]
        )
    )[0].startswith('metadata.namespace: Invalid value: "Bad": a lowercase RFC 1123 label')


def test_labels() -> None:
    causes = validate_metadata(
        meta(name="p", labels={"-k": "v", "ok": "x" * 64, "a/b/c": ""}), RT["Pod"]
    )
    out = lines(causes)
    assert out[0].startswith('metadata.labels: Invalid value: "-k": name part must consist of')
    assert out[1].startswith(
        'metadata.labels: Invalid value: "a/b/c": a valid label key must consist'
    )
    assert (
        out[2]
        == f'metadata.labels: Invalid value: "{"x" * 64}": must be no more than 63 characters'
    )
    assert len(out) == 3


def test_annotations() -> None:
    assert validate_metadata(meta(name="p", annotations={"Example.COM/Key": "v"}), RT["Pod"]) == []
    big = {"a": "x" * (256 * 1024)}
    assert lines(validate_metadata(meta(name="p", annotations=big), RT["Pod"])) == [
        "metadata.annotations: Too long: may not be more than 262144 bytes"
    ]
    bad = lines(validate_metadata(meta(name="p", annotations={"bad key": "v"}), RT["Pod"]))
    assert bad[0].startswith('metadata.annotations: Invalid value: "bad key": name part must')


def test_owner_references() -> None:
    refs = [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": "a",
            "uid": "1",
            "controller": True,
        },
        {"apiVersion": "", "kind": "", "name": "", "uid": "", "controller": True},
        {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "2"},
    ]
    out = lines(validate_metadata(meta(name="p", ownerReferences=refs), RT["Pod"]))
    assert out[:4] == [
        'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": must not be empty',
    ]
    assert out[4].startswith("metadata.ownerReferences: Invalid value: [")
    assert out[4].endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "RayCluster/a and /"
    )
    assert out[5].endswith("/v1, Kind=Event is disallowed from being an owner")


def test_finalizers() -> None:
    out = lines(validate_metadata(meta(name="p", finalizers=["ok.io/f", "bad f"]), RT["Pod"]))
    assert len(out) == 1 and out[0].startswith('metadata.finalizers: Invalid value: "bad f"')
    both = lines(
        validate_metadata(meta(name="p", finalizers=["orphan", "foregroundDeletion"]), RT["Pod"])
    )
    assert both == [
        'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: '
        "finalizer orphan and foregroundDeletion cannot be both set"
    ]


def test_generation_must_be_nonnegative() -> None:
    assert lines(validate_metadata(meta(name="p", generation=-1), RT["Pod"])) == [
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_update_identity_fields_are_immutable() -> None:
    old = meta(name="p", uid="u1", creationTimestamp="2026-01-01T00:00:00Z", generation=3)
    new = meta(name="p", uid="u2", creationTimestamp="2026-01-02T00:00:00Z", generation=2)
    new["metadata"]["namespace"] = "other"
    assert lines(validate_metadata(new, RT["Pod"], old=old)) == [
        "metadata.generation: Invalid value: 2: must not be decremented",
        'metadata.namespace: Invalid value: "other": field is immutable',
        'metadata.uid: Invalid value: "u2": field is immutable',
        'metadata.creationTimestamp: Invalid value: "2026-01-02T00:00:00Z": field is immutable',
    ]
    # Leaving server-set fields out is fine: the REST layer carries them over.
    assert validate_metadata(meta(name="p"), RT["Pod"], old=old) == []


def test_no_new_finalizers_while_deleting() -> None:
    old = meta(name="p", finalizers=["a.io/x"], deletionTimestamp="2026-01-01T00:00:00Z")
    new = meta(name="p", finalizers=["a.io/x", "b.io/y"], deletionTimestamp="2026-01-01T00:00:00Z")
    assert lines(validate_metadata(new, RT["Pod"], old=old)) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"b.io/y"}'
    ]
    moved = meta(name="p", finalizers=["a.io/x"], deletionTimestamp="2026-02-02T00:00:00Z")
    assert lines(validate_metadata(moved, RT["Pod"], old=old)) == [
        'metadata.deletionTimestamp: Invalid value: "2026-02-02T00:00:00Z": field is immutable'
    ]
    # Removing finalizers is how deletion completes.
    assert (
        validate_metadata(
            meta(name="p", deletionTimestamp="2026-01-01T00:00:00Z"), RT["Pod"], old=old
        )
        == []
    )


def test_generate_name_prefix() -> None:
    assert validate_metadata(meta(name="web-x7k2p", generateName="web-"), RT["Pod"]) == []
    out = lines(validate_metadata(meta(name="Web-x7k2p", generateName="Web-"), RT["Pod"]))
    assert out[0].startswith('metadata.generateName: Invalid value: "Web-": a lowercase RFC 1123')
    assert out[1].startswith('metadata.name: Invalid value: "Web-x7k2p": a lowercase RFC 1123')
