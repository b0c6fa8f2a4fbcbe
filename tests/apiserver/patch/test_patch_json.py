"""JSON patch (RFC 6902) as kube-apiserver applies it: results and error codes."""

from __future__ import annotations

import copy

import pytest

from lahar.apiserver.errors import APIError
from lahar.apiserver.patch import apply_json_patch

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "args": ["a"]}]},
}


def test_kubectl_patch_type_json_operations() -> None:
    # kubectl patch pod p --type json -p '[...]'
    patch = [
        {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.27"},
        {"op": "add", "path": "/spec/containers/0/args/-", "value": "b"},
        {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
        {"op": "remove", "path": "/metadata/labels/app"},
        {"op": "test", "path": "/metadata/name", "value": "p"},
        {"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/copied"},
        {"op": "move", "from": "/metadata/labels/copied", "path": "/metadata/labels/moved"},
    ]
    before = copy.deepcopy(POD)
    out = apply_json_patch(POD, patch)
    assert before == POD  # input untouched
    assert out["spec"]["containers"][0] == {"name": "c", "image": "nginx:1.27", "args": ["a", "b"]}
    assert out["metadata"]["labels"] == {"tier": "front", "moved": "p"}


def test_escaped_pointer_for_annotation_keys() -> None:
    patch = [{"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "x"}]
    out = apply_json_patch(POD, patch)
    assert out["metadata"]["labels"]["app.kubernetes.io/name"] == "x"


@pytest.mark.parametrize(
    "patch",
    [
        [{"op": "add", "path": "/spec/x/y", "value": 1}],  # doc is missing path
        [{"op": "remove", "path": "/metadata/annotations"}],
        [{"op": "test", "path": "/metadata/name", "value": "other"}],
        [{"op": "frobnicate", "path": "/spec"}],
        [{"path": "/spec"}],
        [{"op": "replace", "path": "spec", "value": 1}],
        [{"op": "add", "path": "/spec/containers/7", "value": {}}],
    ],
)
def test_inapplicable_operation_is_422_invalid(patch: list) -> None:
    with pytest.raises(APIError) as info:
        apply_json_patch(POD, patch)
    err = info.value
    assert (err.code, err.reason) == (422, "Invalid")
    # kube-apiserver wraps these with NewGenericServerResponse, keeping no detail.
    assert err.message == "the server rejected our request due to an error in our request"


@pytest.mark.parametrize("patch", [{"op": "add"}, "nope", 3, [1, 2]])
def test_undecodable_patch_is_400_bad_request(patch: object) -> None:
    with pytest.raises(APIError) as info:
        apply_json_patch(POD, patch)
    assert (info.value.code, info.value.reason) == (400, "BadRequest")
    assert "cannot unmarshal" in info.value.message


def test_too_many_operations_is_413() -> None:
    patch = [{"op": "test", "path": "/kind", "value": "Pod"}] * 10001
    with pytest.raises(APIError) as info:
        apply_json_patch(POD, patch)
    assert info.value.code == 413
    assert "maximum operations in a JSON patch is 10000, got 10001" in info.value.message


def test_empty_patch_is_identity_copy() -> None:
    out = apply_json_patch(POD, [])
    assert out == POD and out is not POD
