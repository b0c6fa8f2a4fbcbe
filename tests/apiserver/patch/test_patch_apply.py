"""Server-side apply and managedFields: kubectl apply --server-side scenarios."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.errors import APIError
from lahar.apiserver.patch import (
    builtin_list_semantics,
    record_update,
    server_side_apply,
)

CM = builtin_list_semantics("v1", "ConfigMap")
POD = builtin_list_semantics("v1", "Pod")
JOB = builtin_list_semantics("batch/v1", "Job")


def configmap(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "demo"}},
        "data": dict(data),
    }


def apply(live: dict | None, config: dict, manager: str = "kubectl", **kw: Any) -> dict:
    kw.setdefault("lists", CM)
    kw.setdefault("now", "2026-11-29T10:00:00Z")
    kw.setdefault("force", False)
    before = (copy.deepcopy(live), copy.deepcopy(config))
    out = server_side_apply(live, config, manager=manager, **kw)
    assert (live, config) == before, "inputs were mutated"
    return out


def entries(obj: dict) -> dict[tuple[str, str], dict]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


def test_apply_creates_object_with_apply_entry() -> None:
    out = apply(None, configmap(key="v"))
    assert out["data"] == {"key": "v"}
    assert out["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": "2026-11-29T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
        }
    ]


def test_applying_same_config_twice_changes_nothing() -> None:
    first = apply(None, configmap(key="v"))
    second = apply(first, configmap(key="v"), now="2026-11-29T11:00:00Z")
    assert second == first


def test_conflict_between_two_appliers() -> None:
    live = apply(None, configmap(key="v"), manager="alice")
    with pytest.raises(APIError) as info:
        apply(live, configmap(key="other"), manager="bob")
    err = info.value
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == 'Apply failed with 1 conflict: conflict with "alice": .data.key'
    assert [c.to_dict() for c in err.causes] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.key"}
    ]
    status = err.to_status()
    assert status["details"]["causes"][0]["reason"] == "FieldManagerConflict"


def test_same_value_is_shared_ownership_not_a_conflict() -> None:
    live = apply(None, configmap(key="v"), manager="alice")
    out = apply(live, configmap(key="v"), manager="bob")
    owners = entries(out)
    assert set(owners) == {("alice", "Apply"), ("bob", "Apply")}
    assert owners[("alice", "Apply")]["fieldsV1"] == owners[("bob", "Apply")]["fieldsV1"]
    assert owners[("bob", "Apply")]["fieldsV1"]["f:data"] == {"f:key": {}}
    # alice dropping the shared field keeps it, bob still owns it
    cfg = configmap()
    out2 = apply(out, cfg, manager="alice")
    assert out2["data"] == {"key": "v"}


def test_force_conflicts_takes_ownership() -> None:
    live = apply(None, configmap(key="v", other="o"), manager="alice")
    out = apply(live, configmap(key="forced"), manager="bob", force=True)
    assert out["data"] == {"key": "forced", "other": "o"}
    owners = entries(out)
    assert "f:key" not in owners[("alice", "Apply")]["fieldsV1"]["f:data"]
    assert owners[("bob", "Apply")]["fieldsV1"]["f:data"] == {"f:key": {}}


def test_removing_a_field_from_the_config_removes_it() -> None:
    live = apply(None, configmap(a="1", b="2"))
    out = apply(live, configmap(a="1"))
    assert out["data"] == {"a": "1"}
    assert entries(out)[("kubectl", "Apply")]["fieldsV1"]["f:data"] == {"f:a": {}}


def test_removing_a_container_removes_the_list_item() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}]},
                {"name": "b", "image": "b:1"},
            ]
        },
    }
    live = apply(None, pod, lists=POD)
    fields = entries(live)[("kubectl", "Apply")]["fieldsV1"]["f:spec"]["f:containers"]
    assert fields['k:{"name":"a"}'] == {
        ".": {},
        "f:image": {},
        "f:name": {},
        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
    }
    smaller = copy.deepcopy(pod)
    del smaller["spec"]["containers"][1]
    out = apply(live, smaller, lists=POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["a"]


def test_conflict_with_client_side_apply_update_manager() -> None:
    deploy_like = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "parallelism": 2,
            "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    mf = record_update(
        None,
        deploy_like,
        manager="kubectl-client-side-apply",
        lists=JOB,
        now="2026-11-29T09:00:00Z",
    )
    assert mf[0]["operation"] == "Update" and mf[0]["manager"] == "kubectl-client-side-apply"
    live = {**deploy_like, "metadata": {**deploy_like["metadata"], "managedFields": mf}}
    cfg = copy.deepcopy(deploy_like)
    cfg["spec"]["parallelism"] = 5
    cfg["spec"]["template"]["spec"]["containers"][0]["image"] = "y"
    with pytest.raises(APIError) as info:
        apply(live, cfg, lists=JOB)
    assert info.value.message == (
        "Apply failed with 2 conflicts: conflicts with "
        '"kubectl-client-side-apply" using batch/v1:\n'
        "- .spec.parallelism\n"
        '- .spec.template.spec.containers[name="c"].image'
    )
    assert {c.field for c in info.value.causes} == {
        ".spec.parallelism",
        '.spec.template.spec.containers[name="c"].image',
    }
    forced = apply(live, cfg, lists=JOB, force=True)
    assert forced["spec"]["parallelism"] == 5


def test_before_first_apply_owns_untracked_fields() -> None:
    live = configmap(key="v")  # stored without managedFields
    with pytest.raises(APIError) as info:
        apply(live, configmap(key="new"))
    assert 'conflict with "before-first-apply" using v1' in info.value.message


def test_status_subresource_apply_touches_only_status() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n1"}}
    live = apply(None, pod, lists=POD)
    cfg = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"nodeName": "ignored"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    out = apply(live, cfg, manager="kubelet", lists=POD, subresource="status")
    assert out["spec"] == {"nodeName": "n1"}
    assert out["status"]["phase"] == "Running"
    kubelet = next(e for e in out["metadata"]["managedFields"] if e["manager"] == "kubelet")
    assert kubelet["subresource"] == "status"
    assert set(kubelet["fieldsV1"]) == {"f:status"}
    # the main resource ignores status in an apply configuration
    main = apply(out, {**pod, "status": {"phase": "Failed"}}, lists=POD)
    assert main["status"]["phase"] == "Running"


def test_config_with_managed_fields_or_bad_keys_is_rejected() -> None:
    cfg = configmap(key="v")
    cfg["metadata"]["managedFields"] = [{"manager": "x"}]
    with pytest.raises(APIError) as info:
        apply(None, cfg)
    assert info.value.code == 400
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"image": "x"}]},
    }
    with pytest.raises(APIError) as info:
        apply(None, pod, lists=POD)
    assert info.value.code == 400 and 'omits key field "name"' in info.value.message
    dup = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a"}, {"name": "a"}]},
    }
    with pytest.raises(APIError) as info:
        apply(None, dup, lists=POD)
    assert "duplicate entries" in info.value.message


# --- properties -----------------------------------------------------------------

label_maps = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.text(max_size=3), max_size=4)


@given(label_maps, label_maps)
def test_reapplying_a_smaller_config_removes_exactly_the_dropped_fields(a: dict, b: dict) -> None:
    cfg1 = configmap(**a)
    cfg2 = configmap(**b)
    live = server_side_apply(None, cfg1, manager="m", force=False, lists=CM, now="T1")
    out = server_side_apply(live, cfg2, manager="m", force=False, lists=CM, now="T2")
    assert out.get("data", {}) == b
    json.dumps(out)  # stays JSON-serializable


containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c"])},
        optional={
            "image": st.sampled_from(["x", "y"]),
            "args": st.lists(st.sampled_from(["p", "q"]), max_size=2),
            "env": st.lists(
                st.fixed_dictionaries(
                    {"name": st.sampled_from(["A", "B"]), "value": st.sampled_from(["1", "2"])}
                ),
                unique_by=lambda e: e["name"],
                max_size=2,
            ),
        },
    ),
    unique_by=lambda c: c["name"],
    min_size=1,
    max_size=3,
)
pod_configs = st.builds(
    lambda cs, fins: {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": fins},
        "spec": {"containers": cs},
    },
    containers,
    st.lists(st.sampled_from(["f1", "f2"]), unique=True, max_size=2),
)


@given(st.lists(st.tuples(st.sampled_from(["m1", "m2"]), pod_configs), min_size=1, max_size=4))
def test_forced_applies_by_several_managers_keep_each_config(steps: list) -> None:
    live = None
    for manager, cfg in steps:
        live = server_side_apply(live, cfg, manager=manager, force=True, lists=POD, now="T")
        again = server_side_apply(live, cfg, manager=manager, force=True, lists=POD, now="T2")
        assert again == live
        by_name = {c["name"]: c for c in live["spec"]["containers"]}
        for container in cfg["spec"]["containers"]:
            for key, value in container.items():
                if key != "env":
                    assert by_name[container["name"]][key] == value
        assert set(cfg["metadata"]["finalizers"]) <= set(live["metadata"].get("finalizers", []))
