"""Compiled structural schemas: the fast form the validators walk.

A schema arrives as a JSON-shaped dict (a CRD's openAPIV3Schema or one of the
built-in schemas). Walking the dict directly on every request means repeated key
lookups, regex compilation and root special-casing; instead each schema is
compiled once into a tree of :class:`Node` objects with slots, and the tree is
cached by the identity of the schema dict (the cache keeps the dict alive, so an
id is never reused while cached). Schemas must therefore not be mutated after
they are first used; every caller builds a new dict when a CRD changes.

Compilation also applies the server's implicit rules: at the root and in
``x-kubernetes-embedded-resource`` objects, ``apiVersion`` and ``kind`` are
strings and ``metadata`` is ObjectMeta (whatever the schema says, plus any
restrictions it adds on ``name``/``generateName``).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

MISSING: Any = object()
_CACHE_SIZE = 512
_cache: OrderedDict[tuple[int, bool], tuple[dict[str, Any], Node]] = OrderedDict()


class Node:
    """One compiled schema node. ``kind`` is the JSON type or ``None`` (any)."""

    __slots__ = (
        "additional",
        "additional_allowed",
        "all_of",
        "any_of",
        "default",
        "embedded",
        "enum",
        "exclusive_maximum",
        "exclusive_minimum",
        "format",
        "int_or_string",
        "items",
        "kind",
        "list_type",
        "map_keys",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "plain",
        "preserve",
        "properties",
        "required",
        "unique_items",
        "value_checks",
    )

    def __init__(self) -> None:
        self.kind: str | None = None
        self.nullable = False
        self.int_or_string = False
        self.preserve = False
        self.embedded = False
        self.properties: dict[str, Node] | None = None
        self.additional: Node | None = None
        self.additional_allowed = False  # additionalProperties: true
        self.items: Node | None = None
        self.required: tuple[str, ...] = ()
        self.enum: list[Any] | None = None
        self.pattern: re.Pattern[str] | None = None
        self.format: str | None = None
        self.minimum: float | None = None
        self.maximum: float | None = None
        self.exclusive_minimum = False
        self.exclusive_maximum = False
        self.multiple_of: float | None = None
        self.min_length: int | None = None
        self.max_length: int | None = None
        self.min_items: int | None = None
        self.max_items: int | None = None
        self.unique_items = False
        self.min_properties: int | None = None
        self.max_properties: int | None = None
        self.list_type: str | None = None
        self.map_keys: tuple[str, ...] = ()
        self.default: Any = MISSING
        self.any_of: tuple[Node, ...] = ()
        self.all_of: tuple[Node, ...] = ()
        self.one_of: tuple[Node, ...] = ()
        self.not_: Node | None = None
        # Whether any check beyond the type applies (lets validation skip work).
        self.value_checks = False
        # The exact Python types of scalar values validation accepts here without a
        # check (see :func:`_plain_types`): the walks skip the call for those.
        self.plain: frozenset[type] = frozenset()

    @property
    def knows_fields(self) -> bool:
        """Whether unknown keys of an object value are dropped (not preserved)."""
        return not self.preserve and not self.additional_allowed and self.additional is None


def _object_meta() -> dict[str, Any]:
    from .builtin import object_meta_schema

    return object_meta_schema()


def _with_type_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with apiVersion/kind as strings and metadata as full ObjectMeta."""
    props = dict(schema.get("properties") or {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    meta = _object_meta()
    given = props.get("metadata") or {}
    if given is not meta:
        merged = dict(meta)
        extra = given.get("properties") or {}
        if extra:
            merged["properties"] = {**meta["properties"], **extra}
        props["metadata"] = merged
    return {**schema, "properties": props}


def compile_schema(schema: dict[str, Any], root: bool = False) -> Node:
    """The compiled node of ``schema`` (cached by identity)."""
    key = (id(schema), root)
    hit = _cache.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = _compile(_with_type_meta(schema) if root else schema)
    _cache[key] = (schema, node)
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return node


def _num(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _compile(schema: dict[str, Any]) -> Node:
    node = Node()
    if not isinstance(schema, dict):
        node.preserve = True
        return node
    if schema.get("x-kubernetes-embedded-resource"):
        node.embedded = True
        schema = _with_type_meta(schema)
    node.kind = schema.get("type") or None
    node.nullable = bool(schema.get("nullable"))
    node.int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    node.preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    props = schema.get("properties")
    if props is not None:
        node.properties = {k: _compile(v) for k, v in props.items()}
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        node.additional = _compile(additional)
    elif additional is True:
        node.additional_allowed = True
    items = schema.get("items")
    if isinstance(items, dict):
        node.items = _compile(items)
        # The server keeps unknown fields of the items of a preserving list too.
        node.items.preserve = node.items.preserve or node.preserve
    node.required = tuple(schema.get("required") or ())
    enum = schema.get("enum")
    node.enum = list(enum) if enum is not None else None
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            node.pattern = re.compile(pattern)
        except re.error:
            # RE2/ECMA syntax Python cannot compile: skip the check rather than fail
            # every request for the kind (CRD registration validates patterns).
            node.pattern = None
    node.format = schema.get("format") or None
    node.minimum = _num(schema.get("minimum"))
    node.maximum = _num(schema.get("maximum"))
    node.exclusive_minimum = bool(schema.get("exclusiveMinimum"))
    node.exclusive_maximum = bool(schema.get("exclusiveMaximum"))
    node.multiple_of = _num(schema.get("multipleOf"))
    node.min_length = schema.get("minLength")
    node.max_length = schema.get("maxLength")
    node.min_items = schema.get("minItems")
    node.max_items = schema.get("maxItems")
    node.unique_items = bool(schema.get("uniqueItems"))
    node.min_properties = schema.get("minProperties")
    node.max_properties = schema.get("maxProperties")
    node.list_type = schema.get("x-kubernetes-list-type")
    node.map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    if "default" in schema:
        node.default = schema["default"]
    node.any_of = tuple(_compile(s) for s in schema.get("anyOf") or ())
    node.all_of = tuple(_compile(s) for s in schema.get("allOf") or ())
    node.one_of = tuple(_compile(s) for s in schema.get("oneOf") or ())
    if isinstance(schema.get("not"), dict):
        node.not_ = _compile(schema["not"])
    # x-kubernetes-validations (CEL rules) are deliberately not compiled: we do not
    # evaluate CEL. Objects violating only CEL rules are accepted.
    node.value_checks = any(
        v is not None and v is not False
        for v in (
            node.enum,
            node.pattern,
            node.format,
            node.minimum,
            node.maximum,
            node.multiple_of,
            node.min_length,
            node.max_length,
            node.not_,
        )
    ) or bool(node.any_of or node.all_of or node.one_of)
    node.plain = _plain_types(node)
    return node


_PLAIN_BY_KIND: dict[str | None, frozenset[type]] = {
    None: frozenset({str, int, float, bool}),
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
}


def _plain_types(node: Node) -> frozenset[type]:
    """The exact types (``type(v) in``, so ``bool`` is never ``int``) of the non-null
    scalars that ``structural._validate`` passes at ``node`` without a finding: those of
    its JSON type when nothing but the type is checked. Most values of an object are such
    leaves (names, counts, flags), and every write validates every one of them."""
    if node.value_checks:
        return frozenset()
    if node.int_or_string:
        return frozenset({str, int})
    return _PLAIN_BY_KIND.get(node.kind, frozenset())
