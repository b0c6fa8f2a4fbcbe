"""The write path's fast paths give what the general code gives (fourth round).

Each test pits a fast path against the code it short-cuts: the structural walks that skip
the call for a scalar leaf (``Node.plain``; pruning and defaulting keep scalars as they
are), checked against the same walks with every leaf visited, and the comparison of two
objects that handles a pair of scalar leaves inline (``compare._leaf``), checked against
the reference walk of ``tests/apiserver/patch/test_fieldset_fastpaths.py``.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.patch.compare import compare
from lahar.apiserver.schema import structural
from lahar.apiserver.schema._compile import MISSING, Node, compile_schema
from tests.apiserver.patch.test_fieldset_fastpaths import POD_LISTS, compare_reference

# -- structural walks -------------------------------------------------------------------

_LEAF_SCHEMAS: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "integer"},
    {"type": "number"},
    {"type": "boolean"},
    {},
    {"x-kubernetes-int-or-string": True},
    {"type": "string", "nullable": True},
    {"type": "integer", "format": "int32"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "enum": ["a", "b"]},
    {"type": "integer", "minimum": 0, "default": 1},
    {"type": "string", "default": "d"},
    {"type": "object", "default": {"x": 1}},
    {"type": "object", "properties": {"x": {"type": "integer", "default": 5}}},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"type": "integer", "nullable": True, "default": 0}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
]
_NAMES = ["a", "b", "c", "d", "e"]

schemas = st.builds(
    lambda picks, inner, required: {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": dict(zip(_NAMES, picks, strict=False)),
                "required": required,
            },
            "status": {
                "type": "object",
                "properties": {
                    "list": {"type": "array", "items": {"type": "object", "properties": inner}},
                },
            },
        },
    },
    st.lists(st.sampled_from(_LEAF_SCHEMAS), min_size=len(_NAMES), max_size=len(_NAMES)),
    st.dictionaries(st.sampled_from(_NAMES), st.sampled_from(_LEAF_SCHEMAS), max_size=4),
    st.lists(st.sampled_from(_NAMES), max_size=2, unique=True),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**40),
    st.sampled_from([1.0, 1.5, "a", "b", "2024-01-01T00:00:00Z", "x"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_NAMES), inner, max_size=3)
    ),
    max_leaves=12,
)
bodies = st.builds(
    lambda spec, items, meta: {
        "apiVersion": "v1",
        "kind": "K",
        "metadata": meta,
        "spec": spec,
        "status": {"list": items},
    },
    st.dictionaries(st.sampled_from(_NAMES), values, max_size=5),
    st.lists(st.one_of(st.dictionaries(st.sampled_from(_NAMES), values, max_size=4), values)),
    st.fixed_dictionaries(
        {"name": st.sampled_from(["n", 3])},
        optional={"generation": st.sampled_from([1, "x", None])},
    ),
)


def _every_leaf(schema: dict[str, Any]) -> dict[str, Any]:
    """A private copy of ``schema`` compiled with no plain types anywhere: validation
    then calls ``_validate`` for every value, as before the fast path."""
    copied = copy.deepcopy(schema)
    seen: set[int] = set()

    def clear(node: Node | None) -> None:
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        node.plain = frozenset()
        for sub in (node.properties or {}).values():
            clear(sub)
        for sub in (node.additional, node.items, node.not_, *node.any_of, *node.all_of):
            clear(sub)
        for sub in node.one_of:
            clear(sub)

    clear(compile_schema(copied, root=True))
    return copied


def _ref_prune(value: Any, node: Node) -> Any:
    """``structural._prune`` as it was: every value visited, lists rebuilt."""
    if isinstance(value, dict):
        props, additional = node.properties, node.additional
        known = structural._field_known(node)
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
            new = _ref_prune(item, sub)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, list) and node.items is not None:
        new_list = [_ref_prune(item, node.items) for item in value]
        if any(a is not b for a, b in zip(new_list, value, strict=True)):
            return new_list
    return value


def _ref_default(value: Any, node: Node) -> Any:
    """``structural._default`` as it was: every value visited."""
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
            new = _ref_default(item, sub)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, list) and node.items is not None:
        items = node.items
        new_list, changed = [], False
        for item in value:
            if item is None and not items.nullable and items.default is not MISSING:
                item = copy.deepcopy(items.default)
                changed = True
            new = _ref_default(item, items)
            changed = changed or new is not item
            new_list.append(new)
        return new_list if changed else value
    return value


@settings(max_examples=400, deadline=None)
@given(schemas, bodies)
def test_validation_skipping_plain_leaves_finds_the_same_causes(
    schema: dict[str, Any], body: dict[str, Any]
) -> None:
    assert structural.validate(body, schema) == structural.validate(body, _every_leaf(schema))


@settings(max_examples=400, deadline=None)
@given(schemas, bodies)
def test_prune_and_defaults_skipping_scalars_equal_the_full_walks(
    schema: dict[str, Any], body: dict[str, Any]
) -> None:
    before = copy.deepcopy(body)
    root = compile_schema(schema, root=True)
    pruned, ref_pruned = structural.prune(body, schema), _ref_prune(body, root)
    assert pruned == ref_pruned
    assert (pruned is body) == (ref_pruned is body)
    defaulted = structural.apply_defaults(pruned, schema)
    ref_defaulted = _ref_default(pruned, root)
    assert defaulted == ref_defaulted
    assert (defaulted is pruned) == (ref_defaulted is pruned)
    assert body == before  # copy-on-write: the input is untouched


def test_plain_types_follow_the_json_type() -> None:
    def plain(schema: dict[str, Any]) -> frozenset[type]:
        return compile_schema(schema).plain

    assert plain({"type": "string"}) == {str}
    assert plain({"type": "integer"}) == {int}  # never bool: it is not an integer
    assert plain({"type": "number"}) == {int, float}
    assert plain({"type": "boolean"}) == {bool}
    assert plain({"x-kubernetes-int-or-string": True}) == {int, str}
    assert plain({}) == {str, int, float, bool}
    assert plain({"type": "object"}) == frozenset()
    assert plain({"type": "string", "format": "date-time"}) == frozenset()  # checked
    assert plain({"type": "integer", "enum": [1]}) == frozenset()
    assert Node().plain == frozenset()


# -- comparing scalar leaves --------------------------------------------------------------

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, 1.0, 0.0, float("nan"), "", "1", "a"]),
    st.just([]),
    st.just({}),
    st.lists(st.sampled_from([1, "a"]), max_size=2),
)
leafy = st.dictionaries(st.sampled_from(["a", "b", "c"]), leaves, max_size=3)
leafy_pods = st.fixed_dictionaries(
    {},
    optional={
        "spec": leafy,
        "status": st.fixed_dictionaries(
            {},
            optional={
                "phase": leaves,
                "conditions": st.lists(
                    st.fixed_dictionaries(
                        {"type": st.sampled_from(["Ready", "X"])},
                        optional={
                            "status": leaves,
                            "extra": leaves,
                        },
                    ),
                    max_size=3,
                ),
                "nested": leafy,
            },
        ),
    },
)


@settings(max_examples=500, deadline=None)
@given(leafy_pods, leafy_pods)
def test_compare_of_scalar_leaves_matches_the_general_walk(old: dict, new: dict) -> None:
    """``compare._leaf`` (no call for a pair of scalars, nor for a scalar on one side):
    ``1`` vs ``1.0`` vs ``True``, NaN, nulls and empty containers, against the reference."""
    got, want = compare(old, new, POD_LISTS), compare_reference(old, new, POD_LISTS)
    assert (got.added, got.removed, got.modified) == (want.added, want.removed, want.modified)
