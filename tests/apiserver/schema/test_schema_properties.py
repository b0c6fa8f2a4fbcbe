"""Hypothesis properties of the structural-schema functions over random schemas."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.schema import builtin
from lahar.apiserver.schema.structural import apply_defaults, prune, unknown_fields, validate

NAMES = st.sampled_from(["a", "b", "c", "spec", "items", "x-y", "name"])
SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=5),
    "integer": st.integers(-1000, 1000),
    "number": st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
}


def _scalar_schema() -> st.SearchStrategy[dict[str, Any]]:
    typed = st.sampled_from(sorted(SCALARS)).flatmap(
        lambda t: st.builds(
            lambda default, nullable: {
                "type": t,
                **({"default": default} if default is not None else {}),
                **({"nullable": True} if nullable else {}),
            },
            st.none() | SCALARS[t],
            st.booleans(),
        )
    )
    enum = st.lists(st.text(min_size=1, max_size=3), min_size=1, max_size=3, unique=True).map(
        lambda values: {"type": "string", "enum": values}
    )
    return typed | enum | st.just({"x-kubernetes-int-or-string": True})


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    obj = st.dictionaries(NAMES, children, max_size=4).flatmap(
        lambda props: st.builds(
            lambda required, preserve: {
                "type": "object",
                "properties": props,
                **({"required": required} if required else {}),
                **({"x-kubernetes-preserve-unknown-fields": True} if preserve else {}),
            },
            st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]),
            st.booleans(),
        )
    )
    array = children.map(lambda items: {"type": "array", "items": items})
    mapping = children.map(lambda values: {"type": "object", "additionalProperties": values})
    return obj | array | mapping


SCHEMAS = st.recursive(_scalar_schema(), _extend, max_leaves=12)
ROOTS = st.dictionaries(NAMES, SCHEMAS, max_size=4).map(
    lambda props: {"type": "object", "properties": props}
)


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under ``schema``."""
    if schema.get("x-kubernetes-int-or-string"):
        return st.integers(-5, 5) | st.text(max_size=3)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    base: st.SearchStrategy[Any]
    if kind in SCALARS:
        base = SCALARS[kind]
    elif kind == "array":
        base = st.lists(values(schema["items"]), max_size=3)
    elif "additionalProperties" in schema:
        base = st.dictionaries(NAMES, values(schema["additionalProperties"]), max_size=3)
    else:
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        base = st.fixed_dictionaries(
            {k: values(v) for k, v in props.items() if k in required},
            optional={k: values(v) for k, v in props.items() if k not in required},
        )
    return base | st.none() if schema.get("nullable") else base


@st.composite
def schema_and_object(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = draw(ROOTS)
    obj = draw(values(schema))
    obj["apiVersion"] = "example.com/v1"
    obj["kind"] = "Thing"
    obj["metadata"] = {"name": "n", "labels": {"a": "b"}}
    return schema, obj


def _add_noise(value: Any, noise: list[int]) -> Any:
    """A copy of ``value`` with an extra ``zz-unknown`` key in some of its objects."""
    if isinstance(value, dict):
        out = {k: _add_noise(v, noise) for k, v in value.items()}
        if noise and noise.pop():
            out["zz-unknown"] = 1
        return out
    if isinstance(value, list):
        return [_add_noise(v, noise) for v in value]
    return value


@settings(max_examples=150, deadline=None)
@given(schema_and_object())
def test_valid_generated_objects_produce_no_causes(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    schema, obj = case
    assert validate(obj, schema) == []
    assert unknown_fields(obj, schema) == []
    assert prune(obj, schema) is obj


@settings(max_examples=150, deadline=None)
@given(schema_and_object())
def test_defaults_are_idempotent_and_pure(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    schema, obj = case
    before = copy.deepcopy(obj)
    once = apply_defaults(obj, schema)
    assert obj == before
    assert apply_defaults(once, schema) == once
    assert validate(once, schema) == []


@settings(max_examples=150, deadline=None)
@given(schema_and_object(), st.lists(st.booleans(), max_size=20))
def test_prune_leaves_no_unknown_fields(
    case: tuple[dict[str, Any], dict[str, Any]], noise: list[bool]
) -> None:
    schema, obj = case
    noisy = _add_noise(obj, [int(b) for b in noise])
    frozen = json.dumps(noisy, sort_keys=True)
    pruned = prune(noisy, schema)
    assert json.dumps(noisy, sort_keys=True) == frozen
    assert unknown_fields(pruned, schema) == []
    assert prune(pruned, schema) == pruned
    # Everything unknown_fields reported is exactly what prune removed.
    assert bool(unknown_fields(noisy, schema)) == (pruned != noisy)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=4), st.text(max_size=4), max_size=3))
def test_pod_labels_round_trip(labels: dict[str, str]) -> None:
    schema = builtin.schema_for("v1", "Pod")
    pod = {"metadata": {"name": "p", "labels": labels}, "spec": {"containers": [{"name": "c"}]}}
    assert validate(pod, schema) == []
    assert prune(pod, schema) == pod
