"""Property tests: objects encoded gogo-style decode back to the same dicts."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.errors import APIError
from lahar.apiserver.protobuf import decode
from tests.apiserver.protobuf.encoder import encode

names = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,12}[a-z0-9])?\Z")
texts = st.text(min_size=1, max_size=20)
int32s = st.integers(min_value=-(2**31), max_value=2**31 - 1)
int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
base64s = st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode())
quantities = st.sampled_from(["0", "1", "500m", "1Gi", "2.5", "100Mi", "1e3"])
times = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
)


def optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts holding any subset of ``fields``."""
    return st.fixed_dictionaries({}, optional=fields)


metadata = st.builds(
    lambda name, rest: {"name": name, **rest},
    names,
    optional(
        namespace=names,
        labels=st.dictionaries(names, st.text(max_size=10), min_size=1, max_size=3),
        annotations=st.dictionaries(texts, st.text(max_size=30), min_size=1, max_size=3),
        finalizers=st.lists(texts, min_size=1, max_size=2),
        deletionGracePeriodSeconds=int64s,
        creationTimestamp=times,
    ),
)

config_maps = st.builds(
    lambda meta, rest: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **rest},
    metadata,
    optional(
        data=st.dictionaries(texts, st.text(max_size=30), min_size=1, max_size=4),
        binaryData=st.dictionaries(texts, base64s, min_size=1, max_size=3),
        immutable=st.booleans(),
    ),
)

ports = st.builds(
    lambda port, rest: {"containerPort": port, **rest},
    st.integers(min_value=0, max_value=65535),
    optional(name=names, protocol=st.sampled_from(["TCP", "UDP"]), hostPort=st.integers(1, 9)),
)
resources = optional(
    limits=st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities, min_size=1),
    requests=st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities, min_size=1),
)
probes = st.builds(
    lambda port, rest: {"httpGet": {"port": port, "path": "/healthz"}, **rest},
    st.one_of(st.integers(1, 65535), names),
    optional(periodSeconds=st.integers(1, 100), terminationGracePeriodSeconds=int64s),
)
containers = st.builds(
    lambda name, image, rest: {"name": name, "image": image, **rest},
    names,
    texts,
    optional(
        command=st.lists(st.text(max_size=10), min_size=1, max_size=3),
        env=st.lists(st.builds(lambda n, v: {"name": n, "value": v}, names, texts), min_size=1),
        ports=st.lists(ports, min_size=1, max_size=2),
        resources=resources.filter(bool),
        livenessProbe=probes,
        securityContext=optional(runAsUser=int64s, privileged=st.booleans()),
    ),
)
tolerations = optional(
    key=names,
    operator=st.sampled_from(["Exists", "Equal"]),
    effect=st.sampled_from(["NoSchedule", "NoExecute"]),
    tolerationSeconds=int64s,
).filter(bool)
volumes = st.builds(
    lambda name, source: {"name": name, **source},
    names,
    st.one_of(
        st.just({"emptyDir": {}}),
        st.builds(lambda q: {"emptyDir": {"sizeLimit": q}}, quantities),
        st.builds(lambda n: {"configMap": {"name": n}}, names),
    ),
)
pod_specs = st.builds(
    lambda cs, rest: {"containers": cs, **rest},
    st.lists(containers, min_size=1, max_size=3),
    optional(
        restartPolicy=st.sampled_from(["Always", "Never"]),
        terminationGracePeriodSeconds=int64s,
        activeDeadlineSeconds=int64s,
        automountServiceAccountToken=st.booleans(),
        nodeSelector=st.dictionaries(names, names, min_size=1, max_size=2),
        priority=int32s,
        tolerations=st.lists(tolerations, min_size=1, max_size=2),
        volumes=st.lists(volumes, min_size=1, max_size=2),
        securityContext=optional(
            supplementalGroups=st.lists(int64s, min_size=1, max_size=3), runAsGroup=int64s
        ),
    ),
)
pods = st.builds(
    lambda meta, spec, status: {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        **({"status": status} if status else {}),
    },
    metadata,
    pod_specs,
    optional(phase=st.sampled_from(["Pending", "Running"]), startTime=times, podIP=texts),
)


@given(config_maps)
def test_config_map_round_trip(obj: dict[str, Any]) -> None:
    assert decode(encode(obj)) == obj


@given(pods)
def test_pod_round_trip(obj: dict[str, Any]) -> None:
    assert decode(encode(obj)) == obj


@given(pods, st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4))
def test_corrupted_bodies_fail_as_api_errors(obj: dict[str, Any], edits: list[Any]) -> None:
    """Flipped bytes and truncations give a dict or a 400/415, never another exception."""
    body = bytearray(encode(obj))
    for position, byte in edits:
        body[position % len(body)] = byte
    for candidate in (bytes(body), bytes(body[: len(body) // 2]), bytes(body[4:])):
        try:
            assert isinstance(decode(candidate), dict)
        except APIError as err:
            assert err.code in (400, 415), err
