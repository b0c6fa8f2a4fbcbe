"""Unit tests for the protobuf decoder: JSON mapping, zero handling, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lahar.apiserver.errors import APIError
from lahar.apiserver.protobuf import decode, is_protobuf, schema, supported_kinds
from lahar.apiserver.protobuf.special import CONVERTERS, go_duration
from lahar.apiserver.protobuf.wire import SCALAR_KINDS
from tests.apiserver.protobuf.encoder import encode, envelope, length, num, tag, varint


def pod_body(spec: bytes) -> bytes:
    """A Pod whose PodSpec payload is ``spec`` (metadata left out)."""
    return envelope("v1", "Pod", length(2, spec))


def test_table_is_closed() -> None:
    """Every message a field refers to is in the table or converted by hand."""
    for api_version, kind in supported_kinds():
        assert schema.known_message(schema.message_for(api_version, kind))
    names = {name for api_version, kind in supported_kinds() for name in [kind]}
    assert {"Pod", "Job", "ConfigMap", "Secret", "PriorityClass", "Eviction"} <= names
    from lahar.apiserver.protobuf.schema import _table

    for fields in _table()[1].values():
        for field in fields.values():
            for kind in (field.map_value if field.is_map else field.kind,):
                assert kind in SCALAR_KINDS or kind in CONVERTERS or schema.known_message(kind)


def test_content_type_check() -> None:
    assert is_protobuf("application/vnd.kubernetes.protobuf")
    assert is_protobuf("Application/vnd.kubernetes.protobuf; charset=x")
    assert not is_protobuf("application/json")


def test_pointer_zeros_are_kept_and_plain_zeros_dropped() -> None:
    spec = (
        length(2, length(1, b"c") + length(2, b"img"))  # containers[0]
        + length(3, b"")  # restartPolicy "" (non-pointer): dropped
        + num(4, 0)  # terminationGracePeriodSeconds (pointer): kept
        + num(11, 0)  # hostNetwork false (non-pointer): dropped
        + num(21, 0)  # automountServiceAccountToken (pointer): kept
        + length(14, b"")  # securityContext {} (pointer): kept
        + length(1, length(1, b"v") + length(2, length(2, b"")))  # volume with emptyDir {}
    )
    assert decode(pod_body(spec)) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "volumes": [{"name": "v", "emptyDir": {}}],
            "containers": [{"name": "c", "image": "img"}],
            "terminationGracePeriodSeconds": 0,
            "securityContext": {},
            "automountServiceAccountToken": False,
        },
    }


def test_job_pointer_zeros() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "parallelism": 0,
            "backoffLimit": 0,
            "suspend": False,
            "activeDeadlineSeconds": 0,
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    assert decode(encode(job)) == job


def test_required_fields_keep_zero() -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}}
    assert decode(encode(pc)) == {**pc, "value": 0}
    port = length(2, length(1, b"c") + length(6, num(3, 0)))
    assert decode(pod_body(port))["spec"]["containers"][0]["ports"] == [{"containerPort": 0}]


def test_negative_int32_is_a_ten_byte_varint() -> None:
    raw = varint(-5)
    assert len(raw) == 10
    assert decode(pod_body(tag(25, 0) + raw))["spec"]["priority"] == -5


def test_packed_and_unpacked_repeated_scalars() -> None:
    groups = [3, -1, 1 << 40]
    unpacked = b"".join(num(4, g) for g in groups)
    packed = length(4, b"".join(varint(g) for g in groups))
    for sc in (unpacked, packed):
        decoded = decode(pod_body(length(14, sc)))
        assert decoded["spec"]["securityContext"]["supplementalGroups"] == groups


def test_times_quantities_int_or_string_and_bytes() -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "creationTimestamp": "2026-11-29T10:00:00Z"},
        "spec": {
            "holderIdentity": "me",
            "leaseDurationSeconds": 0,
            "renewTime": "2026-11-29T10:00:00.123456Z",
        },
    }
    assert decode(encode(lease)) == lease
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": "AAH/", "empty": ""},
        "immutable": False,
    }
    assert decode(encode(secret)) == secret
    svc_port = length(4, length(1, b"p") + num(3, 80) + length(4, length(3, b"web")))
    svc_port = length(4, num(1, 1) + length(3, b"web")) + num(3, 80)
    decoded = decode(envelope("v1", "Service", length(2, length(1, svc_port))))
    assert decoded["spec"]["ports"] == [{"port": 80, "targetPort": "web"}]


def test_zero_time_is_dropped_even_where_required() -> None:
    ns = length(3, length(2, length(1, b"Ready") + length(4, b"")))  # status.conditions[0]
    decoded = decode(envelope("v1", "Namespace", ns))
    assert decoded["status"]["conditions"] == [{"type": "Ready"}]


def test_managed_fields_json_is_parsed() -> None:
    fields: dict[str, Any] = {"f:data": {"f:a": {}}}
    entry = length(1, b"kubectl") + length(7, length(1, json.dumps(fields).encode()))
    meta = length(1, b"c") + length(17, entry)
    decoded = decode(envelope("v1", "ConfigMap", length(1, meta)))
    assert decoded["metadata"]["managedFields"] == [{"manager": "kubectl", "fieldsV1": fields}]


@pytest.mark.parametrize("api_version", ["v1", "meta.k8s.io/v1", "batch/v1", "policy/v1"])
def test_delete_options_in_any_group_version(api_version: str) -> None:
    body = num(1, 0) + length(2, length(1, b"uid")) + length(4, b"Background")
    body += length(5, b"All")
    assert decode(envelope(api_version, "DeleteOptions", body)) == {
        "apiVersion": api_version,
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "uid"},
        "propagationPolicy": "Background",
        "dryRun": ["All"],
    }


def test_eviction() -> None:
    obj = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "ns"},
        "deleteOptions": {"gracePeriodSeconds": 0},
    }
    assert decode(encode(obj)) == obj


def test_unknown_fields_are_skipped() -> None:
    cm = length(1, length(1, b"c")) + length(99, b"future") + num(98, 7)
    assert decode(envelope("v1", "ConfigMap", cm)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
    }


def test_repeated_embedded_message_occurrences_merge() -> None:
    cm = length(1, length(1, b"c")) + length(1, length(3, b"ns"))
    assert decode(envelope("v1", "ConfigMap", cm))["metadata"] == {"name": "c", "namespace": "ns"}


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1500, "1.5µs"),
        (2_000_000, "2ms"),
        (1_500_000_000, "1.5s"),
        (90 * 10**9, "1m30s"),
        (3600 * 10**9, "1h0m0s"),
        (-(3723 * 10**9 + 5 * 10**8), "-1h2m3.5s"),
    ],
)
def test_go_duration_strings(nanos: int, text: str) -> None:
    assert go_duration(nanos) == text


def _error(body: bytes) -> APIError:
    with pytest.raises(APIError) as info:
        decode(body)
    return info.value


BAD_BODIES: dict[str, bytes] = {
    "no magic": b"{}",
    "truncated envelope": b"k8s\x00\x0a\x05ab",
    "truncated varint": envelope("v1", "ConfigMap", b"\x38\xff"),
    "length past end": envelope("v1", "ConfigMap", b"\x0a\x10\x0a"),
    "group wire type": envelope("v1", "ConfigMap", b"\x0b"),
    "field zero": envelope("v1", "ConfigMap", b"\x02\x00"),
    "wrong wire type": envelope("v1", "ConfigMap", num(1, 3)),
    "varint too long": envelope("v1", "Pod", length(2, tag(25, 0) + b"\xff" * 11)),
    "bad fields json": envelope(
        "v1", "ConfigMap", length(1, length(17, length(7, length(1, b"{nope"))))
    ),
    "bad map entry": envelope("v1", "ConfigMap", length(2, num(2, 1))),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_malformed_bodies_are_400(name: str) -> None:
    err = _error(BAD_BODIES[name])
    assert (err.code, err.reason) == (400, "BadRequest"), err.message


def test_unknown_kind_is_415() -> None:
    err = _error(envelope("apps/v1", "Deployment", b""))
    assert (err.code, err.reason) == (415, "UnsupportedMediaType")
    assert "Deployment" in err.message


def test_content_encoding_is_415() -> None:
    meta = length(1, length(1, b"v1") + length(2, b"ConfigMap"))
    err = _error(b"k8s\x00" + meta + length(2, b"") + length(3, b"gzip"))
    assert err.code == 415


def test_nested_envelope_in_raw_extension() -> None:
    from lahar.apiserver.protobuf.special import raw_json

    inner = envelope("v1", "ConfigMap", length(1, length(1, b"c")))
    got: Any = raw_json(length(1, inner), "x")
    assert got == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
