"""JSON merge patch (RFC 7386): kubectl patch --type merge and CRD client-side apply."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.errors import APIError
from lahar.apiserver.patch import apply_merge_patch

RAYJOB = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "j", "labels": {"a": "1", "b": "2"}},
    "spec": {"entrypoint": "python x.py", "shutdownAfterJobFinishes": True, "tags": ["x", "y"]},
}


def test_kubectl_patch_type_merge() -> None:
    patch = {
        "metadata": {"labels": {"a": None, "c": "3"}},
        "spec": {"tags": ["z"], "suspend": True, "entrypoint": None},
    }
    before = copy.deepcopy(RAYJOB)
    out = apply_merge_patch(RAYJOB, patch)
    assert before == RAYJOB
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["spec"] == {"shutdownAfterJobFinishes": True, "tags": ["z"], "suspend": True}


def test_client_side_apply_on_crd_three_way_shape() -> None:
    # kubectl apply on an existing custom resource: merge patch with the new
    # last-applied annotation, changed fields and nulls for removed ones.
    patch = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"x":1}\n'}
        },
        "spec": {"entrypoint": "python y.py", "shutdownAfterJobFinishes": None},
    }
    out = apply_merge_patch(RAYJOB, patch)
    assert out["spec"] == {"entrypoint": "python y.py", "tags": ["x", "y"]}
    assert "kubectl.kubernetes.io/last-applied-configuration" in out["metadata"]["annotations"]


def test_nulls_inside_new_objects_are_dropped() -> None:
    out = apply_merge_patch({}, {"spec": {"a": {"b": None, "c": 1}}})
    assert out == {"spec": {"a": {"c": 1}}}


@pytest.mark.parametrize("patch", [[1, 2], "x", 5, None])
def test_non_object_patch_is_422(patch: object) -> None:
    with pytest.raises(APIError) as info:
        apply_merge_patch(RAYJOB, patch)
    assert (info.value.code, info.value.reason) == (422, "Invalid")
    assert info.value.causes[0].field == "patch"


# --- properties --------------------------------------------------------------

scalars = st.one_of(st.integers(), st.text(max_size=4), st.booleans())
keys = st.sampled_from(["a", "b", "c", "d"])
values = st.recursive(
    scalars | st.lists(scalars, max_size=3),
    lambda inner: st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
documents = st.dictionaries(keys, values, max_size=4)


def merge_diff(a: Any, b: Any) -> Any:
    """The smallest merge patch turning a into b (both objects)."""
    patch: dict[str, Any] = {}
    for key in a:
        if key not in b:
            patch[key] = None
    for key, value in b.items():
        if key not in a:
            patch[key] = value
        elif isinstance(a[key], dict) and isinstance(value, dict):
            sub = merge_diff(a[key], value)
            if sub:
                patch[key] = sub
        elif a[key] != value or type(a[key]) is not type(value):
            patch[key] = value
    return patch


@given(documents, documents)
def test_merge_of_diff_reaches_target(a: dict, b: dict) -> None:
    assert apply_merge_patch(a, merge_diff(a, b)) == b


@given(documents, documents)
def test_merge_patch_is_idempotent(a: dict, p: dict) -> None:
    once = apply_merge_patch(a, p)
    assert apply_merge_patch(once, p) == once


@given(documents)
def test_empty_merge_patch_is_identity(a: dict) -> None:
    assert apply_merge_patch(a, {}) == a
