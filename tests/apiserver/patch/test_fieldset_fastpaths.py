"""The fast paths of field-set comparison and FieldsV1 encoding give exactly what the
general (previous) algorithms give.

The reference implementations below are the straightforward versions the server used
before the fast paths: :func:`_cmp_reference` walks both sides of every subtree (where
``fieldset._cmp`` now collects one-sided subtrees without comparing),
:func:`_to_fields_v1_reference` builds a tree and sorts each level (where
``to_fields_v1`` sorts the paths once), and ``json.dumps`` spells every list key
(where ``_dump`` spells plain-string keys itself).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.patch import builtin_list_semantics
from lahar.apiserver.patch.fieldset import (
    _MISSING,
    Comparison,
    _dump,
    _items,
    _Missing,
    _same,
    compare,
    compare_field,
    to_fields_v1,
)
from lahar.apiserver.patch.lists import ListSemantics

POD_LISTS = builtin_list_semantics("v1", "Pod")

# -- the reference algorithms ----------------------------------------------------------


def _cmp_reference(
    lhs: Any, rhs: Any, fpath: tuple, spath: tuple, lists: ListSemantics, out: Comparison
) -> None:
    container = None
    if isinstance(lhs, dict | _Missing) and isinstance(rhs, dict | _Missing):
        container = "dict"
    elif isinstance(lhs, list | _Missing) and isinstance(rhs, list | _Missing):
        container = "list"
    if container == "dict" and lists.object_kind(spath) != "atomic" and (lhs or rhs):
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        shallow = len(fpath) < 2
        for key in {**left, **right}:
            lval, rval = left.get(key, _MISSING), right.get(key, _MISSING)
            if shallow and _same(lval, rval):
                continue
            _cmp_reference(lval, rval, (*fpath, "f:" + key), (*spath, key), lists, out)
    elif container == "list" and lists.resolve(spath).kind != "atomic" and (lhs or rhs):
        lt = lists.resolve(spath)
        left_items, right_items = _items(lt, lhs), _items(lt, rhs)
        for element in {**left_items, **right_items}:
            _cmp_reference(
                left_items.get(element, _MISSING),
                right_items.get(element, _MISSING),
                (*fpath, element),
                spath,
                lists,
                out,
            )
    else:
        if not fpath:
            return
        if lhs is _MISSING:
            out.added.add(fpath)
        elif rhs is _MISSING:
            out.removed.add(fpath)
        elif lhs != rhs or type(lhs) is not type(rhs):
            out.modified.add(fpath)
        return
    if fpath:
        if lhs is _MISSING:
            out.added.add(fpath)
        elif rhs is _MISSING:
            out.removed.add(fpath)


def compare_reference(old: Any, new: Any, lists: ListSemantics) -> Comparison:
    out = Comparison()
    _cmp_reference(old, new, (), (), lists, out)
    return out


def _to_fields_v1_reference(paths: Any) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    members: set[tuple] = set()
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        members.add(path)

    def finish(node: dict[str, Any], prefix: tuple) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if node and prefix in members:
            out["."] = {}
        for element in sorted(node):
            out[element] = finish(node[element], (*prefix, element))
        return out

    return finish(tree, ())


def _ordered(value: Any) -> Any:
    """A dict's items as a list, recursively: equality that also checks key order."""
    if isinstance(value, dict):
        return [(k, _ordered(v)) for k, v in value.items()]
    return value


# -- strategies: pod-shaped objects (so map-lists, sets and atomic lists all occur) ----

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5]),
    st.sampled_from(["", "a", "b", "main", "Ready", "True", 'q"uote', "new\nline", "é"]),
)
names = st.sampled_from(["main", "side", "init", "a\\b", 'x"y', "é"])
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c", "name", "type"]), inner, max_size=3),
    ),
    max_leaves=8,
)
container = st.fixed_dictionaries(
    {"name": names},
    optional={
        "image": st.sampled_from(["x:1", "x:2"]),
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": st.integers(1, 3)},
                optional={"protocol": st.sampled_from(["TCP", "UDP"])},
            ),
            max_size=2,
        ),
        "args": st.lists(st.sampled_from(["-a", "-b"]), max_size=2),
        "resources": st.fixed_dictionaries(
            {}, optional={"requests": st.dictionaries(st.sampled_from(["cpu", "memory"]), names)}
        ),
        "extra": json_values,
    },
)
condition = st.fixed_dictionaries(
    {"type": st.sampled_from(["Ready", "PodScheduled", "Initialized"])},
    optional={"status": st.sampled_from(["True", "False"]), "reason": st.sampled_from(["", "x"])},
)
pods = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.just("v1"),
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "name": names,
                "labels": st.dictionaries(st.sampled_from(["a", "b/c"]), names, max_size=2),
                "finalizers": st.lists(st.sampled_from(["f1", "f2"]), max_size=2, unique=True),
                "ownerReferences": st.lists(
                    st.fixed_dictionaries({"uid": st.sampled_from(["u1", "u2"])}), max_size=2
                ),
            },
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": st.lists(container, max_size=3),
                "nodeSelector": st.dictionaries(st.sampled_from(["a", "b"]), names),
                "tolerations": st.lists(json_values, max_size=2),
                "nodeName": names,
                "other": json_values,
            },
        ),
        "status": st.fixed_dictionaries(
            {},
            optional={
                "phase": st.sampled_from(["Pending", "Running"]),
                "conditions": st.lists(condition, max_size=3),
                "podIPs": st.lists(st.fixed_dictionaries({"ip": names}), max_size=2),
                "weird": json_values,
            },
        ),
        "extra": json_values,
    },
)
anything = st.one_of(pods, json_values, st.just(_MISSING))


def _same_result(a: Comparison, b: Comparison) -> None:
    assert (a.added, a.removed, a.modified) == (b.added, b.removed, b.modified)


@settings(max_examples=400, deadline=None)
@given(pods, pods)
def test_compare_matches_the_general_walk(old: dict, new: dict) -> None:
    _same_result(compare(old, new, POD_LISTS), compare_reference(old, new, POD_LISTS))
    # a create: everything is new
    _same_result(compare({}, new, POD_LISTS), compare_reference({}, new, POD_LISTS))


@settings(max_examples=300, deadline=None)
@given(anything, anything, st.sampled_from([POD_LISTS, ListSemantics()]))
def test_compare_of_any_values_matches(old: Any, new: Any, lists: ListSemantics) -> None:
    if old is _MISSING and new is _MISSING:
        return
    _same_result(compare(old, new, lists), compare_reference(old, new, lists))


@settings(max_examples=300, deadline=None)
@given(pods, pods)
def test_compare_field_matches_the_general_walk(old: dict, new: dict) -> None:
    for key in ("status", "spec", "metadata"):
        want = Comparison()
        lval, rval = old.get(key, _MISSING), new.get(key, _MISSING)
        if not (lval is _MISSING and rval is _MISSING) and not _same(lval, rval):
            _cmp_reference(lval, rval, ("f:" + key,), (key,), POD_LISTS, want)
        _same_result(compare_field(old, new, key, POD_LISTS), want)


# Path elements always carry their kind (f:, k:, v:, i:), so none is ".".
paths = st.lists(
    st.lists(st.sampled_from(["f:a", "f:b", "f:spec", 'k:{"name":"x"}', "v:1", "i:0"]), max_size=4)
    .map(tuple)
    .filter(bool),
    max_size=12,
)


@settings(max_examples=500, deadline=None)
@given(paths)
def test_to_fields_v1_matches_the_tree_walk(fields: list[tuple]) -> None:
    got = to_fields_v1(fields)
    want = _to_fields_v1_reference(fields)
    assert _ordered(got) == _ordered(want)  # same content, same key order
    assert json.dumps(got) == json.dumps(want)


def test_to_fields_v1_of_the_root_and_nothing() -> None:
    assert to_fields_v1([]) == {}
    assert _ordered(to_fields_v1([(), ("f:a",)])) == _ordered(
        _to_fields_v1_reference([(), ("f:a",)])
    )


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(max_size=6),
        st.dictionaries(st.text(max_size=4), st.one_of(st.text(max_size=4), scalars), max_size=3),
        scalars,
        st.lists(scalars, max_size=2),
    )
)
def test_dump_spells_like_json_dumps(value: Any) -> None:
    want = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert _dump(value) == want


fields_v1 = st.recursive(
    st.just({}),
    lambda inner: st.dictionaries(
        st.sampled_from([".", "f:a", "f:b", 'k:{"name":"x"}', "v:1"]), inner, max_size=3
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(fields_v1)
def test_memoised_fields_v1_decoding_matches_and_hands_out_copies(value: dict) -> None:
    from lahar.apiserver.patch.fieldset import from_fields_v1
    from lahar.apiserver.patch.managed import _decode_fields

    want = from_fields_v1(value)
    first = _decode_fields(value)
    assert first == want
    first.add(("f:changed",))  # the caller's to change
    assert _decode_fields(value) == want


@settings(max_examples=300, deadline=None)
@given(
    st.sets(
        st.lists(
            st.sampled_from(["f:status", "f:spec", "f:metadata", "f:name", "f:uid", "f:a"]),
            max_size=3,
        ).map(tuple)
    ),
    st.sampled_from(["", "status", "scale"]),
    st.booleans(),
)
def test_only_tracked_is_the_tracked_filter(
    paths: set[tuple], subresource: str, status_subresource: bool
) -> None:
    from lahar.apiserver.patch.managed import only_tracked, tracked

    want = {p for p in paths if tracked(p, subresource, status_subresource)}
    assert only_tracked(paths, subresource, status_subresource) == want
