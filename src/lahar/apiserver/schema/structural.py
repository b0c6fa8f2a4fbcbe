"""Structural-schema semantics: validation, unknown fields, pruning, defaulting.

These are the four things the real apiserver does with a CRD's openAPIV3Schema
(and, through the generated schemas of ``builtin.py``, what strict decoding does
for built-in kinds), reproduced with Kubernetes' wording so clients see the same
errors: causes carry ``FieldValue*`` reasons, ``spec.containers[0].name`` paths
and messages such as ``Invalid value: "string": spec.replicas in body must be of
type integer: "string"``.

Nulls follow the server: a null in a non-nullable object field counts as absent
(the server drops it before validating, or replaces it with the default), while
a null list item is a type error.

Rules that apply without being written in the schema: at the root and inside
``x-kubernetes-embedded-resource`` objects, ``apiVersion``/``kind`` are strings
and ``metadata`` is checked, pruned and defaulted as ObjectMeta. Pruning and
defaulting are copy-on-write: the input is never modified and unchanged subtrees
are shared with the result.

Not implemented on purpose: ``x-kubernetes-validations`` (CEL). Rules are
ignored, so objects that break only CEL rules are accepted.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ..errors import Cause
from . import _formats
from ._causes import go_value, invalid, type_error, type_name, where_in_body
from ._compile import MISSING, Node, compile_schema


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def validate(obj: dict[str, Any], schema: dict[str, Any]) -> list[Cause]:
    """Every violation of ``schema`` in ``obj``, as Kubernetes words them."""
    out: list[Cause] = []
    _validate(obj, compile_schema(schema, root=True), "", out)
    return out


def _validate(value: Any, node: Node, path: str, out: list[Cause]) -> None:
    if value is None:
        if not node.nullable and (node.kind is not None or node.int_or_string):
            out.append(type_error(path, "null", node.kind or "integer,string"))
        return
    actual = type_name(value)
    if node.int_or_string:
        if actual not in ("integer", "string"):
            out.append(type_error(path, actual, "integer,string"))
            return
    elif (
        node.kind is not None
        and node.kind != actual
        and not (node.kind == "number" and actual == "integer")
    ):
        out.append(type_error(path, actual, node.kind))
        return
    if actual == "object":
        _validate_object(value, node, path, out)
    elif actual == "array":
        _validate_array(value, node, path, out)
    if node.value_checks:
        _validate_value(value, actual, node, path, out)


def _validate_object(value: dict[str, Any], node: Node, path: str, out: list[Cause]) -> None:
    props = node.properties
    for name in node.required:
        if value.get(name) is None and not (name in value and _nullable(props, name)):
            out.append(Cause("FieldValueRequired", "Required value", _join(path, name)))
    if node.embedded:
        for name in ("apiVersion", "kind"):
            if not value.get(name) and name not in node.required:
                out.append(
                    Cause(
                        "FieldValueRequired", "Required value: must not be empty", _join(path, name)
                    )
                )
    count = len(value)
    if node.min_properties is not None and count < node.min_properties:
        detail = f"{where_in_body(path)} should have at least {node.min_properties} properties"
        out.append(invalid(path, count, detail))
    if node.max_properties is not None and count > node.max_properties:
        message = f"Too many: {count}: must have at most {node.max_properties} items"
        out.append(Cause("FieldValueTooMany", message, path))
    additional = node.additional
    for key, item in value.items():
        sub = props.get(key) if props is not None else None
        if sub is None:
            sub = additional
        # A null in a non-nullable field counts as absent: the server drops it
        # before validating (and so does apply_defaults); a nullable null is valid. A
        # scalar of a type the node passes unchecked needs no call (most leaves).
        if sub is not None and item is not None and type(item) not in sub.plain:
            _validate(item, sub, _join(path, key), out)


def _nullable(props: dict[str, Node] | None, name: str) -> bool:
    sub = props.get(name) if props is not None else None
    return sub is not None and sub.nullable


def _validate_array(value: list[Any], node: Node, path: str, out: list[Cause]) -> None:
    count = len(value)
    if node.min_items is not None and count < node.min_items:
        detail = f"{where_in_body(path)} should have at least {node.min_items} items"
        out.append(invalid(path, count, detail))
    if node.max_items is not None and count > node.max_items:
        noun = "item" if node.max_items == 1 else "items"
        message = f"Too many: {count}: must have at most {node.max_items} {noun}"
        out.append(Cause("FieldValueTooMany", message, path))
    items = node.items
    if items is not None:
        plain = items.plain
        for index, item in enumerate(value):
            if type(item) not in plain:
                _validate(item, items, f"{path}[{index}]", out)
    if node.list_type == "set" or node.unique_items:
        seen: set[str] = set()
        for index, item in enumerate(value):
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                message = f"Duplicate value: {go_value(item)}"
                out.append(Cause("FieldValueDuplicate", message, f"{path}[{index}]"))
            seen.add(key)
    elif node.list_type == "map" and node.map_keys:
        _validate_list_map(value, node, path, out)


def _validate_list_map(value: list[Any], node: Node, path: str, out: list[Cause]) -> None:
    props = node.items.properties if node.items is not None else None
    seen: set[str] = set()
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            continue
        keys: dict[str, Any] = {}
        for name in node.map_keys:
            given = item.get(name, MISSING)
            if given is MISSING and props is not None and name in props:
                given = props[name].default
            keys[name] = None if given is MISSING else given
        marker = json.dumps(keys, sort_keys=True)
        if marker in seen:
            message = f"Duplicate value: {go_value(keys)}"
            out.append(Cause("FieldValueDuplicate", message, f"{path}[{index}]"))
        seen.add(marker)


def _validate_value(value: Any, actual: str, node: Node, path: str, out: list[Cause]) -> None:
    where = where_in_body(path)
    if node.enum is not None and not any(_same(value, e) for e in node.enum):
        allowed = ", ".join(
            json.dumps(e if isinstance(e, str) else json.dumps(e)) for e in node.enum
        )
        message = f"Unsupported value: {go_value(value)}: supported values: {allowed}"
        out.append(Cause("FieldValueNotSupported", message, path))
    if actual == "string":
        _validate_string(value, node, path, where, out)
    elif actual in ("integer", "number"):
        _validate_number(value, node, path, where, out)
    if node.any_of and all(_errors(value, n, path) for n in node.any_of):
        out.append(invalid(path, value, f"{where} must validate at least one schema (anyOf)"))
    if node.one_of and sum(not _errors(value, n, path) for n in node.one_of) != 1:
        out.append(invalid(path, value, f"{where} must validate one and only one schema (oneOf)"))
    for sub in node.all_of:
        _validate(value, sub, path, out)
    if node.not_ is not None and not _errors(value, node.not_, path):
        out.append(invalid(path, value, f"{where} must not validate the schema (not)"))


def _same(value: Any, other: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, but ``1`` is ``1.0``."""
    if isinstance(value, bool) or isinstance(other, bool):
        return type(value) is type(other) and value == other
    return bool(value == other)


def _errors(value: Any, node: Node, path: str) -> list[Cause]:
    out: list[Cause] = []
    _validate(value, node, path, out)
    return out


def _validate_string(value: str, node: Node, path: str, where: str, out: list[Cause]) -> None:
    if node.max_length is not None and len(value) > node.max_length:
        noun = "byte" if node.max_length == 1 else "bytes"
        message = f"Too long: may not be more than {node.max_length} {noun}"
        out.append(Cause("FieldValueTooLong", message, path))
    if node.min_length is not None and len(value) < node.min_length:
        detail = f"{where} should be at least {node.min_length} chars long"
        out.append(invalid(path, value, detail))
    if node.pattern is not None and not node.pattern.search(value):
        out.append(invalid(path, value, f"{where} should match '{node.pattern.pattern}'"))
    if node.format is not None and not _formats.check(node.format, value):
        detail = f"{where} must be of type {node.format}: {go_value(value)}"
        out.append(invalid(path, value, detail))


def _validate_number(value: float, node: Node, path: str, where: str, out: list[Cause]) -> None:
    if node.format is not None and not _formats.check(node.format, value):
        detail = f'{where} must be of type {node.format}: "{go_value(value)}"'
        out.append(invalid(path, value, detail))
    if node.minimum is not None:
        if node.exclusive_minimum and value <= node.minimum:
            out.append(invalid(path, value, f"{where} should be greater than {node.minimum}"))
        elif value < node.minimum:
            detail = f"{where} should be greater than or equal to {node.minimum}"
            out.append(invalid(path, value, detail))
    if node.maximum is not None:
        if node.exclusive_maximum and value >= node.maximum:
            out.append(invalid(path, value, f"{where} should be less than {node.maximum}"))
        elif value > node.maximum:
            detail = f"{where} should be less than or equal to {node.maximum}"
            out.append(invalid(path, value, detail))
    if node.multiple_of:
        quotient = value / node.multiple_of
        if not float(quotient).is_integer():
            out.append(invalid(path, value, f"{where} should be a multiple of {node.multiple_of}"))


def _field_known(node: Node) -> bool:
    """Whether unknown keys of an object under ``node`` are unknown fields."""
    if node.int_or_string or node.preserve or node.additional_allowed:
        return False
    if node.kind is None and node.properties is None:
        return False  # a schema-less node: nothing to compare against
    return node.kind in (None, "object")


def unknown_fields(obj: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """``unknown field "spec.foo"`` for every field ``schema`` does not declare,
    sorted by path as the server sorts them."""
    root = compile_schema(schema, root=True)
    if not _any_unknown(obj, root):  # the usual answer, found without building paths
        return []
    paths: list[str] = []
    _unknown(obj, root, "", paths)
    return [f'unknown field "{p}"' for p in sorted(paths)]


_CONTAINERS = (dict, list)


def _any_unknown(value: Any, node: Node) -> bool:
    """Whether :func:`_unknown` would report anything: the same walk, without the path
    strings it builds for every object and list it enters (this runs on every write)."""
    if isinstance(value, dict):
        props = node.properties
        additional = node.additional
        for key, item in value.items():
            sub = props.get(key) if props is not None else None
            if sub is None:
                sub = additional
            if sub is not None:
                if isinstance(item, _CONTAINERS) and _any_unknown(item, sub):
                    return True
            elif _field_known(node):
                return True
    elif isinstance(value, list) and node.items is not None:
        items = node.items
        for item in value:
            if isinstance(item, _CONTAINERS) and _any_unknown(item, items):
                return True
    return False


def _unknown(value: Any, node: Node, path: str, out: list[str]) -> None:
    if isinstance(value, dict):
        props = node.properties
        additional = node.additional
        known = _field_known(node)
        for key, item in value.items():
            sub = props.get(key) if props is not None else None
            if sub is None:
                sub = additional
            if sub is not None:
                # A scalar has no fields: skip the call and the path it would need
                # (most of an object's values; this walk runs on every write).
                if isinstance(item, dict | list):
                    _unknown(item, sub, _join(path, key), out)
            elif known:
                out.append(_join(path, key))
    elif isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                _unknown(item, node.items, f"{path}[{index}]", out)


def prune(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without the fields ``schema`` does not declare (a new object when
    anything is dropped; unchanged subtrees are shared). apiVersion, kind and
    metadata stay at the root; inside metadata, fields unknown to ObjectMeta go."""
    result: dict[str, Any] = _prune(obj, compile_schema(schema, root=True))
    return result


def _prune(value: Any, node: Node) -> Any:
    if isinstance(value, dict):
        props = node.properties
        additional = node.additional
        known = _field_known(node)
        out: dict[str, Any] | None = None
        for key, item in value.items():
            sub = props.get(key) if props is not None else None
            if sub is None:
                sub = additional
            if sub is None:
                if known:
                    if out is None:
                        out = {k: value[k] for k in value if k != key}
                    else:
                        out.pop(key, None)
                continue
            if not isinstance(item, _CONTAINERS):
                continue  # a scalar is kept as it is: no call
            new = _prune(item, sub)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, list) and node.items is not None:
        items = node.items
        new_list: list[Any] | None = None
        for index, item in enumerate(value):
            if isinstance(item, _CONTAINERS):
                new = _prune(item, items)
                if new is not item:
                    if new_list is None:
                        new_list = list(value)
                    new_list[index] = new
        if new_list is not None:
            return new_list
    return value


def apply_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the schema's defaults applied as the apiserver applies them.

    A default fills a property that is absent, or null where the property is not
    nullable; defaulted values are defaulted further. Non-nullable nulls without a
    default are dropped. List items and ``additionalProperties`` values are
    defaulted through their schemas. Copy-on-write: ``obj`` is not modified.
    """
    result: dict[str, Any] = _default(obj, compile_schema(schema, root=True))
    return result


def _default(value: Any, node: Node) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        props = node.properties
        if props:
            for key, sub in props.items():
                if sub.default is MISSING:
                    continue
                current = value.get(key, MISSING)
                if current is MISSING or (current is None and not sub.nullable):
                    if out is None:
                        out = dict(value)
                    out[key] = copy.deepcopy(sub.default)
        source = value if out is None else out
        for key, item in list(source.items()):
            sub = props.get(key) if props is not None else None
            if sub is None:
                sub = node.additional
            if sub is None:
                continue
            if item is None and not sub.nullable:
                if out is None:
                    out = dict(value)
                if sub.default is MISSING:
                    del out[key]
                    continue
                item = out[key] = copy.deepcopy(sub.default)
            if not isinstance(item, _CONTAINERS):
                continue  # a scalar has nothing to default below it: no call
            new = _default(item, sub)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, list) and node.items is not None:
        items = node.items
        new_list = []
        changed = False
        for item in value:
            if item is None and not items.nullable and items.default is not MISSING:
                item = copy.deepcopy(items.default)
                changed = True
            if isinstance(item, _CONTAINERS):
                new = _default(item, items)
                changed = changed or new is not item
                item = new
            new_list.append(item)
        return new_list if changed else value
    return value
