"""RFC 6902 JSON patch (``application/json-patch+json``) as kube-apiserver applies it.

The operations themselves are carried out by the ``jsonpatch`` package; this
module only reproduces how the real server classifies failures, because
clients (kubectl, controllers) print and branch on them:

* a body that is not a JSON array of objects fails to decode: 400 BadRequest;
* more than 10000 operations: 413 RequestEntityTooLarge;
* any operation that cannot be applied (unknown ``op``, missing path, failed
  ``test``): 422 Invalid with the generic message kube-apiserver uses, since it
  wraps the error with ``NewGenericServerResponse`` and keeps no detail.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from lahar.apiserver.errors import APIError, bad_request
from lahar.apiserver.jsoncopy import clone

MAX_OPERATIONS = 10000
_GENERIC_422 = "the server rejected our request due to an error in our request"


def _json_kind(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null"


def apply_json_patch(obj: dict, patch: object) -> dict:
    """Apply an RFC 6902 patch to ``obj`` and return the patched copy."""
    if not isinstance(patch, list):
        if patch is None:  # JSON null decodes to an empty patch in Go
            return clone(obj)
        raise bad_request(
            f"json: cannot unmarshal {_json_kind(patch)} into Go value of type jsonpatch.Patch"
        )
    for op in patch:
        if not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {_json_kind(op)} into Go value of type jsonpatch.Operation"
            )
    if len(patch) > MAX_OPERATIONS:
        raise APIError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_OPERATIONS}, got {len(patch)}",
        )
    try:
        result: Any = jsonpatch.apply_patch(obj, patch, in_place=False)
    except APIError:
        raise
    except (
        jsonpatch.JsonPatchException,
        jsonpointer.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
        ValueError,
    ) as err:
        raise APIError(422, "Invalid", _GENERIC_422) from err
    if not isinstance(result, dict):
        raise APIError(422, "Invalid", _GENERIC_422)
    return result
