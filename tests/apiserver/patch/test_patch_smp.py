"""Strategic merge patch: kubectl's real shapes, directives, errors and properties."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.errors import APIError
from lahar.apiserver.patch import (
    apply_merge_patch,
    apply_strategic_merge_patch,
    builtin_list_semantics,
)

POD_LISTS = builtin_list_semantics("v1", "Pod")
JOB_LISTS = builtin_list_semantics("batch/v1", "Job")
SVC_LISTS = builtin_list_semantics("v1", "Service")

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "train",
        "labels": {"team": "ml", "app": "train"},
        "finalizers": ["batch.kubernetes.io/job-tracking", "example.com/keep"],
    },
    "spec": {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
                "volumes": [{"name": "scratch", "emptyDir": {}}],
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    },
                    {"name": "sidecar", "image": "envoy:1"},
                ],
            }
        }
    },
}


def smp(obj: dict, patch: object, lists: Any = JOB_LISTS) -> dict:
    before = copy.deepcopy(obj)
    out = apply_strategic_merge_patch(obj, patch, lists)
    assert obj == before, "input was mutated"
    return out


def test_kubectl_client_side_apply_three_way_patch() -> None:
    # What kubectl apply sends for an existing Job after editing the manifest:
    # new image, env C added and A removed, label removed, sidecar dropped.
    patch = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"},
            "labels": {"team": None},
        },
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "main"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "B"}, {"name": "C"}],
                            "env": [{"name": "C", "value": "3"}, {"$patch": "delete", "name": "A"}],
                            "image": "busybox:1.37",
                            "name": "main",
                        },
                        {"$patch": "delete", "name": "sidecar"},
                    ],
                }
            }
        },
    }
    out = smp(JOB, patch)
    assert out["metadata"]["labels"] == {"app": "train"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in out["metadata"]["annotations"]
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main"]
    assert containers[0]["image"] == "busybox:1.37"
    assert containers[0]["env"] == [{"name": "B", "value": "2"}, {"name": "C", "value": "3"}]
    assert containers[0]["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    # untouched siblings survive
    assert out["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_set_element_order_reorders_without_list_in_patch() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "main"}]}
            }
        }
    }
    out = smp(JOB, patch)
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == [
        "sidecar",
        "main",
    ]


def test_kubectl_patch_default_strategic_merges_containers_by_name() -> None:
    # kubectl patch job train -p '{"spec":{"template":{"spec":{"containers":[...]}}}}'
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "new", "image": "x"}]}}}}
    out = smp(JOB, patch)
    names = [c["name"] for c in out["spec"]["template"]["spec"]["containers"]]
    assert names == ["main", "sidecar", "new"]


def test_env_merges_by_name_and_value_from_replaced_key_by_key() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "main", "env": [{"name": "B", "value": None, "valueFrom": {}}]}
                    ]
                }
            }
        }
    }
    out = smp(JOB, patch)
    env = out["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {}}]


def test_atomic_lists_are_replaced() -> None:
    patch = {"spec": {"template": {"spec": {"tolerations": [{"key": "spot"}]}}}}
    out = smp(JOB, patch)
    assert out["spec"]["template"]["spec"]["tolerations"] == [{"key": "spot"}]


def test_finalizers_merge_as_a_set_and_delete_from_primitive_list() -> None:
    out = smp(JOB, {"metadata": {"finalizers": ["example.com/new", "example.com/keep"]}})
    assert out["metadata"]["finalizers"] == [
        "batch.kubernetes.io/job-tracking",
        "example.com/keep",
        "example.com/new",
    ]
    patch = {
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": ["batch.kubernetes.io/job-tracking"],
            "$setElementOrder/finalizers": ["example.com/keep"],
        }
    }
    assert smp(JOB, patch)["metadata"]["finalizers"] == ["example.com/keep"]


def test_retain_keys_switches_volume_source() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "volumes": [
                        {
                            "$retainKeys": ["configMap", "name"],
                            "configMap": {"name": "cm"},
                            "name": "scratch",
                        }
                    ]
                }
            }
        }
    }
    out = smp(JOB, patch)
    assert out["spec"]["template"]["spec"]["volumes"] == [
        {"name": "scratch", "configMap": {"name": "cm"}}
    ]


def test_patch_replace_and_delete_directives_on_maps() -> None:
    out = smp(JOB, {"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    assert out["metadata"]["labels"] == {"only": "this"}
    out = smp(JOB, {"metadata": {"labels": {"$patch": "delete"}}})
    assert "labels" not in out["metadata"]


def test_patch_replace_directive_in_a_list() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "s"}]}
            }
        }
    }
    out = smp(JOB, patch)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "solo", "image": "s"}]


def test_service_ports_merge_on_port() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {
            "selector": {"app": "a", "tier": "b"},
            "ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}],
        },
    }
    patch = {
        "spec": {
            "$setElementOrder/ports": [{"port": 443}, {"port": 80}],
            "ports": [{"port": 443, "targetPort": 9443}],
            "selector": {"tier": None},
        }
    }
    out = smp(svc, patch, SVC_LISTS)
    assert out["spec"]["ports"] == [
        {"port": 443, "targetPort": 9443},
        {"port": 80, "targetPort": 8080},
    ]
    assert out["spec"]["selector"] == {"app": "a"}


def test_pod_status_conditions_merge_by_type() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "Init", "status": "True"}]
        },
    }
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    out = smp(pod, patch, POD_LISTS)
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Init", "status": "True"},
    ]


def test_new_keys_drop_nulls_and_apply_directives() -> None:
    out = smp({"metadata": {"name": "x"}}, {"metadata": {"labels": {"a": None, "b": "1"}}})
    assert out["metadata"]["labels"] == {"b": "1"}


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        ({"metadata": {"labels": {"$patch": "explode"}}}, 400),
        ({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, 400),
        ({"spec": {"template": {"spec": {"$setElementOrder/containers": "x"}}}}, 400),
        ({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}, 400),
        (
            {"spec": {"template": {"spec": {"volumes": [{"$retainKeys": "name", "name": "v"}]}}}},
            400,
        ),
        (
            {
                "spec": {
                    "template": {
                        "spec": {"volumes": [{"$retainKeys": ["name"], "name": "v", "nfs": {}}]}
                    }
                }
            },
            422,
        ),
        ({"metadata": {"finalizers": [["nested"]]}}, 422),
        ({"spec": {"template": {"spec": {"containers": [{"$patch": "merge", "name": "m"}]}}}}, 400),
        ([{"op": "add"}], 400),
    ],
)
def test_malformed_patches_are_client_errors(patch: object, code: int) -> None:
    with pytest.raises(APIError) as info:
        apply_strategic_merge_patch(JOB, patch, JOB_LISTS)
    assert info.value.code == code


# --- properties --------------------------------------------------------------

names = st.sampled_from(["A", "B", "C", "D", "E"])
env_lists = st.lists(
    st.fixed_dictionaries({"name": names, "value": st.text(max_size=3)}),
    unique_by=lambda e: e["name"],
    max_size=5,
)


def pod_with_env(env: list[dict]) -> dict:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "env": env}]}}


@given(env_lists)
def test_empty_patch_is_identity(env: list[dict]) -> None:
    pod = pod_with_env(env)
    assert apply_strategic_merge_patch(pod, {}, POD_LISTS) == pod


@given(env_lists, env_lists, st.lists(names, unique=True, max_size=3))
def test_env_patch_is_idempotent_and_keyed(
    env: list[dict], updates: list[dict], deletes: list[str]
) -> None:
    items: list[dict] = [u for u in updates if u["name"] not in deletes]
    items += [{"$patch": "delete", "name": n} for n in deletes]
    patch = {"spec": {"containers": [{"name": "c", "env": items}]}}
    once = apply_strategic_merge_patch(pod_with_env(env), patch, POD_LISTS)
    twice = apply_strategic_merge_patch(once, patch, POD_LISTS)
    assert once == twice
    result = {e["name"]: e["value"] for e in once["spec"]["containers"][0]["env"]}
    expected = {e["name"]: e["value"] for e in env if e["name"] not in deletes}
    expected.update({u["name"]: u["value"] for u in updates if u["name"] not in deletes})
    assert result == expected


maps_only = st.recursive(
    st.one_of(st.integers(), st.text(max_size=3), st.none()),
    lambda inner: st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=10,
)


@given(
    st.dictionaries(st.sampled_from(["x", "y"]), maps_only, max_size=2),
    st.dictionaries(st.sampled_from(["x", "y"]), maps_only, max_size=2),
)
def test_without_lists_smp_equals_json_merge_patch(doc: dict, patch: dict) -> None:
    doc = apply_merge_patch({}, doc)  # no nulls in a stored object
    assert apply_strategic_merge_patch(doc, patch, POD_LISTS) == apply_merge_patch(doc, patch)
