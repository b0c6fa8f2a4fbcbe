"""Kubernetes' wording for validation failures.

The real server turns OpenAPI validation failures into field errors whose text
clients show verbatim (``Invalid value: "string": spec.replicas in body must be of
type integer: "string"``); values are printed the way Go's ``%q``/``%v``/``%#v``
print them. These helpers keep that wording in one place.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import Cause


def type_name(value: Any) -> str:
    """The JSON type of a decoded value (an integral float counts as an integer)."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return type(value).__name__


def go_value(value: Any) -> str:
    """A value as Go's field errors print it (strings quoted, maps as ``%#v``)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)}:{go_value(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_value(v) for v in value) + "}"
    return str(value)


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}", path)


def where_in_body(path: str) -> str:
    return f"{path} in body" if path else "in body"


def type_error(path: str, actual: str, expected: str) -> Cause:
    detail = f'{where_in_body(path)} must be of type {expected}: "{actual}"'
    return Cause("FieldValueTypeInvalid", f'Invalid value: "{actual}": {detail}', path)
