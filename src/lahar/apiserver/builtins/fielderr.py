"""Field-level validation errors worded the way kube-apiserver words them.

kubectl prints a 422 as ``<field>: <body>``, where the body starts with the error
type (``Required value``, ``Invalid value: "x"``, ``Unsupported value: ...``)
followed by an optional detail. Every validator in this package builds its
:class:`~lahar.apiserver.errors.Cause` objects through these helpers so the
reasons, the quoting of bad values and the path syntax (``a.b[0].c``,
``data[key]``) stay identical across kinds.
"""

from __future__ import annotations

import json
from typing import Any

from lahar.apiserver.errors import Cause

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
NOT_FOUND = "FieldValueNotFound"

IMMUTABLE = "field is immutable"


def child(path: str, *names: str) -> str:
    """``child("spec", "template", "spec")`` -> ``spec.template.spec``."""
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def show(value: Any) -> str:
    """Render a bad value roughly as Go's ``%q``/``%v``/``%#v`` would."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if not value:
            return "[]string{}"
        return "[]string{" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "}"
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        inner = ", ".join(
            f"{json.dumps(k, ensure_ascii=False)}:{json.dumps(v, ensure_ascii=False)}"
            for k, v in sorted(value.items())
        )
        return "map[string]string{" + inner + "}"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def _body(kind: str, detail: str) -> str:
    return f"{kind}: {detail}" if detail else kind


def required(path: str, detail: str = "") -> Cause:
    return Cause(REQUIRED, _body("Required value", detail), path)


def forbidden(path: str, detail: str = "") -> Cause:
    return Cause(FORBIDDEN, _body("Forbidden", detail), path)


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    return Cause(INVALID, _body(f"Invalid value: {show(value)}", detail), path)


def not_supported(path: str, value: Any, supported: list[str]) -> Cause:
    detail = "supported values: " + ", ".join(json.dumps(v) for v in supported) if supported else ""
    return Cause(NOT_SUPPORTED, _body(f"Unsupported value: {show(value)}", detail), path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause(DUPLICATE, f"Duplicate value: {show(value)}", path)


def not_found(path: str, value: Any) -> Cause:
    return Cause(NOT_FOUND, f"Not found: {show(value)}", path)


def too_long(path: str, max_bytes: int) -> Cause:
    return Cause(TOO_LONG, f"Too long: may not be more than {max_bytes} bytes", path)


def too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause(TOO_MANY, f"Too many: {actual}: must have at most {limit} items", path)


def immutable(path: str, value: Any) -> Cause:
    return invalid(path, value, IMMUTABLE)


def nonnegative(path: str, value: Any) -> list[Cause]:
    """``must be greater than or equal to 0`` for negative integers."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []
