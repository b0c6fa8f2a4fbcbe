"""Server-side Table output: what ``kubectl get`` prints.

kubectl asks for ``application/json;as=Table;g=meta.k8s.io;v=v1`` and prints the
columns and cells the server sends, unchanged except for upper-casing the headers
and hiding ``priority > 0`` columns without ``-o wide``. So the columns and cell
values here reproduce kube-apiserver 1.32: its built-in printers (always run with
``Wide``, as the server does), its CustomResourceDefinition table convertor
(``additionalPrinterColumns`` evaluated with a small JSONPath subset) and its
default convertor (``Name``, ``Created At``). Ages are Kubernetes'
``HumanDuration`` ("5m", "2d3h", "<unknown>"), which the server computes from
``now``; for ``date`` printer columns the server sends that age, not the
timestamp. Filling ``metadata`` (resourceVersion, continue) is the caller's job.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ._printers import AGE_DOC, NAME, PRINTERS, Obj, human_duration, parse_time, since
from .resources import ResourceType

__all__ = ["find", "human_duration", "parse_jsonpath", "to_table"]

# --- JSONPath (the subset used by additionalPrinterColumns) -----------------------------

_FILTER = re.compile(
    r"^\?\(\s*@(?P<path>[^=!<>\s]*)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*\)$"
)
Step = tuple[str, Any]


def _literal(text: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_jsonpath(path: str) -> list[Step]:
    """Parse ``.a.b``, ``.a[0].b``, ``.a[*].b``, ``['x.y']``, ``[?(@.k=="v")]`` and ``{...}``."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1].strip()
    path, steps, i = path.removeprefix("$"), [], 0
    while i < len(path):
        if path[i] == ".":
            j = i + 1
            while j < len(path) and path[j] not in ".[":
                j += 1
            if path[i + 1 : j]:
                steps.append(("field", path[i + 1 : j]))
            i = j
        elif path[i] == "[":
            j, quote = i + 1, ""
            while j < len(path) and (quote or path[j] != "]"):
                quote = (
                    ""
                    if path[j] == quote
                    else (path[j] if path[j] in "'\"" and not quote else quote)
                )
                j += 1
            steps.append(_bracket(path[i + 1 : j].strip()))
            i = j + 1
        else:
            raise ValueError(f"unrecognized JSONPath {path!r} at {i}")
    return steps


def _bracket(text: str) -> Step:
    if text == "*":
        return ("all", None)
    if text.startswith("?"):
        m = _FILTER.match(text)
        if not m:
            raise ValueError(f"unsupported filter {text!r}")
        lit = m["lit"]
        return ("filter", (parse_jsonpath(m["path"]), m["op"], _literal(lit) if lit else None))
    if text[:1] in "'\"":
        return ("field", _literal(text))
    return ("index", int(text))


def _compare(left: Any, op: str, right: Any) -> bool:
    if op in ("==", "!="):
        return (left == right and type(left) is type(right)) == (op == "==")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
        return False
    return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op]


def _matches(item: Any, cond: tuple[list[Step], str | None, Any]) -> bool:
    sub, op, lit = cond
    found = find(item, sub)
    if op is None:
        return bool(found)
    return any(_compare(v, op, lit) for v in found)


def find(obj: Any, steps: list[Step]) -> list[Any]:
    """All values a parsed path selects; missing keys select nothing.

    As in Kubernetes, ``[*]``, indexes and filters apply to lists and ``.*`` to maps.
    """
    current = [obj]
    for kind, arg in steps:
        found: list[Any] = []
        for value in current:
            if isinstance(value, dict) and kind == "field":
                found.extend(value.values() if arg == "*" else [value[arg]] if arg in value else [])
            elif isinstance(value, list) and kind == "all":
                found.extend(value)
            elif isinstance(value, list) and kind == "index" and -len(value) <= arg < len(value):
                found.append(value[arg])
            elif isinstance(value, list) and kind == "filter":
                found.extend(item for item in value if _matches(item, arg))
        current = found
    return current


# --- CRD and default convertors --------------------------------------------------------


def go_text(value: Any) -> str:
    """How Go's JSONPath printer writes one value (``fmt`` for scalars, JSON otherwise)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return str(int(value))
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return str(value)


def _go_float(value: float) -> str:
    """Go's ``%v`` of a float64: shortest digits, exponent form below 1e-4 or from 1e6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    number = Decimal(repr(value))
    exponent = number.adjusted()
    if -4 <= exponent < 6:
        return format(number, "f")
    sign, digit_tuple, _ = number.as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def _cell(type_: str, value: Any, now: datetime) -> Any:
    if value is None:
        return None
    if type_ == "string":
        return go_text(value)
    if type_ == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if type_ == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if type_ == "boolean" and isinstance(value, bool):
        return value
    if type_ == "date" and isinstance(value, str):
        return since(value, now)
    return None


def _path(text: str) -> list[Step] | None:
    try:
        return parse_jsonpath(text)
    except ValueError:  # a real server refuses such a CRD; here the column stays empty
        return None


def _crd_table(rt: ResourceType, now: datetime) -> tuple[list[Obj], Callable[[Obj], list[Any]]]:
    """Name, then each additionalPrinterColumn (or Age when the CRD defines none)."""
    age = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    columns = list(rt.printer_columns) or [{**age, "description": AGE_DOC}]
    paths = [_path(c.get("jsonPath", "")) for c in columns]
    defs = [NAME] + [
        {
            "name": c["name"],
            "type": c.get("type", "string"),
            "format": c.get("format", ""),
            "description": c.get("description", ""),
            "priority": int(c.get("priority", 0)),
        }
        for c in columns
    ]

    def row(obj: Obj) -> list[Any]:
        cells: list[Any] = [obj.get("metadata", {}).get("name", "")]
        for column, path in zip(columns, paths, strict=True):
            found = find(obj, path) if path is not None else []
            cells.append(_cell(column.get("type", "string"), found[0], now) if found else None)
        return cells

    return defs, row


def _default_table() -> tuple[list[Obj], Callable[[Obj], list[Any]]]:
    """The generic convertor: name and the creation time as RFC 3339 text."""
    created = {**NAME, "name": "Created At", "type": "date", "format": "", "description": AGE_DOC}

    def row(obj: Obj) -> list[Any]:
        meta = obj.get("metadata", {})
        when = parse_time(meta.get("creationTimestamp"))
        text = when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else "0001-01-01T00:00:00Z"
        return [meta.get("name", ""), text]

    return [NAME, created], row


# --- table assembly --------------------------------------------------------------------


def to_table(
    rt: ResourceType, objects: list[Obj], *, include_object: str = "Metadata", now: datetime
) -> Obj:
    """A ``meta.k8s.io/v1`` Table of ``objects`` as kube-apiserver 1.32 renders ``rt``.

    ``include_object`` is the request's ``includeObject``: ``Metadata`` (the
    default) puts a PartialObjectMetadata in each row, ``Object`` the object
    itself, ``None`` nothing. ``metadata`` is left empty for the caller.
    """
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    if rt.builtin and rt.group_resource in PRINTERS:
        columns, printer = PRINTERS[rt.group_resource]
        defs, row_of = columns, lambda obj: printer(obj, now)
    elif not rt.builtin:
        defs, row_of = _crd_table(rt, now)
    else:
        defs, row_of = _default_table()
    rows = []
    for obj in objects:
        row: Obj = {"cells": row_of(obj)}
        conditions = _row_conditions(rt, obj)
        if conditions:
            row["conditions"] = conditions
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [dict(d) for d in defs],
        "rows": rows,
    }


def _row_conditions(rt: ResourceType, obj: Obj) -> list[Obj]:
    """Finished pods carry a ``Completed`` row condition, as the pod printer sets it."""
    if rt.group_resource != "pods":
        return []
    phase = obj.get("status", {}).get("phase")
    if phase == "Succeeded":
        return [{"type": "Completed", "status": "True", "reason": "Succeeded",
                 "message": "The pod has completed successfully."}]  # fmt: skip
    if phase == "Failed":
        return [{"type": "Completed", "status": "True", "reason": "Failed",
                 "message": "The pod failed."}]  # fmt: skip
    return []
