"""Fuzzing: any JSON shape is answered with causes or an APIError, never a crash."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.builtins import default, validate_create, validate_metadata, validate_update
from lahar.apiserver.errors import APIError

from .helpers import RT, context

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)

SAMPLES: dict[str, dict[str, Any]] = {
    "Pod": {
        "metadata": {"name": "p", "namespace": "d", "labels": {"a": "b"}, "ownerReferences": []},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                    "resources": {"limits": {"cpu": "1"}},
                    "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                    "livenessProbe": {"httpGet": {"port": 80}},
                }
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["a"]}]}]
            }}},
            "schedulingGates": [{"name": "g"}],
        },
    },
    "Service": {"metadata": {"name": "s", "namespace": "d"}, "spec": {"ports": [{"port": 80}], "selector": {}}},
    "Job": {
        "metadata": {"name": "j", "namespace": "d", "uid": "u"},
        "spec": {"template": {"metadata": {"labels": {}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    },
    "Node": {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
    "Endpoints": {"metadata": {"name": "e", "namespace": "d"}, "subsets": [{"addresses": [{"ip": "1.2.3.4"}], "ports": [{"port": 1}]}]},
    "Secret": {"metadata": {"name": "s", "namespace": "d"}, "data": {"a": "YQ=="}, "stringData": {"b": "c"}},
    "ConfigMap": {"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "b"}},
    "CustomResourceDefinition": {
        "metadata": {"name": "xs.a.io"},
        "spec": {"group": "a.io", "scope": "Namespaced", "names": {"plural": "xs", "kind": "X"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}]},
    },
}  # fmt: skip


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*prefix, i))
    return out


def replaced(obj: dict[str, Any], path: tuple, value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(obj)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(SAMPLES)), st.data(), JSON)
def test_malformed_fields_never_crash(kind: str, data: st.DataObject, value: Any) -> None:
    base = SAMPLES[kind]
    path = data.draw(st.sampled_from(paths(base)[1:]))
    obj = replaced(base, path, value)
    rt = RT[kind]
    try:
        out = default(obj, rt, context())
    except APIError as err:
        assert err.code in (400, 403)
        return
    assert isinstance(validate_metadata(out, rt), list)
    assert isinstance(validate_create(out, rt), list)
    stored = default(base, rt, context())
    assert isinstance(validate_update(out, stored, rt), list)
    assert isinstance(validate_update(out, stored, rt, subresource="status"), list)
