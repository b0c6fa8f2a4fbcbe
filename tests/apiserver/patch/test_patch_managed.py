"""managedFields after ordinary writes (record_update) and apply on custom resources."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.errors import APIError
from lahar.apiserver.patch import (
    builtin_list_semantics,
    record_update,
    schema_list_semantics,
    server_side_apply,
)

CM = builtin_list_semantics("v1", "ConfigMap")
POD = builtin_list_semantics("v1", "Pod")


def configmap(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "demo"}},
        "data": dict(data),
    }


def apply(live: dict | None, config: dict, manager: str = "kubectl", **kw: Any) -> dict:
    kw.setdefault("now", "2026-11-29T10:00:00Z")
    kw.setdefault("force", False)
    return server_side_apply(live, config, manager=manager, **kw)


def entries(obj: dict) -> dict[tuple[str, str], dict]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


# --- record_update -------------------------------------------------------------


def test_record_update_moves_changed_fields_and_leaves_unchanged_writes_alone() -> None:
    created = configmap(a="1", b="2")
    mf = record_update(None, created, manager="kubectl-create", lists=CM, now="T1")
    assert mf == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "T1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {".": {}, "f:a": {}, "f:b": {}},
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            },
        }
    ]
    live = copy.deepcopy(created)
    live["metadata"]["managedFields"] = mf
    same = copy.deepcopy(live)
    assert record_update(live, same, manager="other", lists=CM, now="T2") == mf
    edited = copy.deepcopy(live)
    edited["data"]["a"] = "changed"
    del edited["data"]["b"]
    mf2 = record_update(live, edited, manager="kubectl-edit", lists=CM, now="T3")
    by = {e["manager"]: e for e in mf2}
    assert by["kubectl-edit"]["fieldsV1"] == {"f:data": {"f:a": {}}}
    # kubectl-create keeps only the data map itself (a leaf now: ``{}``)
    assert by["kubectl-create"]["fieldsV1"]["f:data"] == {}


def test_record_update_reset_and_status_subresource() -> None:
    live = configmap(a="1")
    live["metadata"]["managedFields"] = record_update(None, live, manager="m", lists=CM, now="T")
    reset = copy.deepcopy(live)
    reset["metadata"]["managedFields"] = [{}]
    assert record_update(live, reset, manager="m", lists=CM, now="T") == []
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "status": {"phase": "Pending"},
    }
    new = copy.deepcopy(pod)
    new["status"]["phase"] = "Running"
    mf = record_update(pod, new, manager="kubelet", lists=POD, now="T", subresource="status")
    assert mf[0]["subresource"] == "status"
    assert mf[0]["fieldsV1"] == {"f:status": {"f:phase": {}}}
    # the same change through the main resource is not tracked (status is reset there)
    assert record_update(pod, new, manager="x", lists=POD, now="T") == []


# --- custom resources ----------------------------------------------------------

VCJOB_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "tasks": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "replicas": {"type": "integer"}},
                    },
                },
                "queues": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "args": {"type": "array", "items": {"type": "string"}},
                "plugins": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
}
VC = schema_list_semantics(VCJOB_SCHEMA)


def vcjob(**spec: Any) -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": spec,
    }


def test_crd_lists_follow_schema_extensions() -> None:
    live = apply(
        None,
        vcjob(tasks=[{"name": "a", "replicas": 1}], queues=["q1"], args=["x"]),
        manager="alice",
        lists=VC,
    )
    out = apply(
        live, vcjob(tasks=[{"name": "b", "replicas": 2}], queues=["q2"]), manager="bob", lists=VC
    )
    assert out["spec"]["tasks"] == [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 2}]
    assert out["spec"]["queues"] == ["q1", "q2"]
    fields = entries(out)[("bob", "Apply")]["fieldsV1"]["f:spec"]
    assert fields == {
        "f:queues": {'v:"q2"': {}},
        "f:tasks": {'k:{"name":"b"}': {".": {}, "f:name": {}, "f:replicas": {}}},
    }
    with pytest.raises(APIError):  # args is atomic: bob replacing it conflicts with alice
        apply(out, vcjob(args=["y"]), manager="bob", lists=VC)


def test_crd_free_form_maps_mark_entries() -> None:
    out = apply(None, vcjob(plugins={"ssh": ["a"]}, extra={"x": {"y": 1}}), lists=VC)
    spec = entries(out)[("kubectl", "Apply")]["fieldsV1"]["f:spec"]
    assert spec["f:plugins"] == {"f:ssh": {}}
    assert spec["f:extra"] == {"f:x": {".": {}, "f:y": {}}}


# --- properties -----------------------------------------------------------------

label_maps = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.text(max_size=3), max_size=4)
task_lists = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["t1", "t2", "t3"]), "replicas": st.integers(0, 3)}
    ),
    unique_by=lambda t: t["name"],
    max_size=3,
)


@given(label_maps, task_lists, label_maps, task_lists)
def test_apply_is_idempotent_and_contains_config(
    labels1: dict, tasks1: list, labels2: dict, tasks2: list
) -> None:
    first = vcjob(tasks=tasks1)
    first["metadata"]["labels"] = labels1
    live = server_side_apply(None, first, manager="a", force=True, lists=VC, now="T1")
    cfg = vcjob(tasks=tasks2)
    cfg["metadata"]["labels"] = labels2
    once = server_side_apply(live, cfg, manager="b", force=True, lists=VC, now="T2")
    twice = server_side_apply(once, cfg, manager="b", force=True, lists=VC, now="T3")
    assert once == twice
    for key, value in labels2.items():
        assert once["metadata"]["labels"][key] == value
    by_name = {t["name"]: t for t in once["spec"].get("tasks", [])}
    for task in tasks2:
        assert by_name[task["name"]] == task
