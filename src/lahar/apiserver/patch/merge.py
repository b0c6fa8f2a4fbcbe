"""RFC 7386 JSON merge patch (``application/merge-patch+json``).

Used by ``kubectl patch --type merge`` and by client-side ``kubectl apply`` on
custom resources. Objects merge key by key, ``null`` deletes a key, anything
else (lists included) replaces the target value whole. A patch that is not a
JSON object would replace the whole resource with a non-object, which
kube-apiserver then fails to decode: that is reported as the same 422.
"""

from __future__ import annotations

import json
from typing import Any

from lahar.apiserver.errors import Cause, invalid
from lahar.apiserver.jsoncopy import clone

_TYPE_META = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


def merge_values(target: Any, patch: Any) -> Any:
    """The RFC 7386 MergePatch(target, patch) function; inputs are never mutated."""
    if not isinstance(patch, dict):
        return clone(patch)
    out: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_values(out.get(key), value)
    return out


def merge_shared(target: Any, patch: Any) -> Any:
    """:func:`merge_values` without its copies: the result shares the values of ``patch``
    and the untouched parts of ``target``. Inputs are still never mutated (every dict on
    a patched path is a new one). For a caller that copies what it keeps: copying each
    patched value and then the whole result again was a tenth of a pod status write."""
    if not isinstance(patch, dict):
        return patch
    out: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_shared(out.get(key), value)
    return out


def apply_merge_patch(obj: dict, patch: object, *, private: tuple[str, ...] | None = None) -> dict:
    """Apply a JSON merge patch to ``obj`` and return the patched copy.

    ``private`` names the top-level fields the caller keeps: only those are copied, the
    others may share with ``obj`` and ``patch`` (read them, never change them). A write
    to ``/status`` keeps nothing but ``status`` of the patched object."""
    if not isinstance(patch, dict):
        kind = "array" if isinstance(patch, list) else type(patch).__name__
        if patch is None:
            kind = "null"
        elif isinstance(patch, str):
            kind = "string"
        elif isinstance(patch, bool):
            kind = "bool"
        elif isinstance(patch, int | float):
            kind = "number"
        text = json.dumps(patch, separators=(",", ":"))
        message = (
            f"Invalid value: {json.dumps(text)}: couldn't get version/kind; json parse error: "
            f"json: cannot unmarshal {kind} into Go value of type {_TYPE_META}"
        )
        raise invalid("", "", [Cause("FieldValueInvalid", message, "patch")])
    result = merge_shared(obj, patch)
    if private is None:
        return clone(result)
    for key in private:
        if key in result:
            result[key] = clone(result[key])
    return result
