"""Label interning, selectors and node selector / node affinity kernels."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.kernels.labels import LabelIndex, label_selector, matches
from lahar.scheduler.kernels.nodeaffinity import (
    NodeAffinityIndex,
    node_constraints,
    preferred_terms,
)

NODES = [
    {"zone": "a", "gen": "3", "gpu": "yes"},
    {"zone": "b", "gen": "10"},
    {"zone": "c", "gen": "x"},
    {},
]
NAMES = ["n0", "n1", "n2", "n3"]


def index() -> NodeAffinityIndex:
    return NodeAffinityIndex(LabelIndex(NODES), NAMES)


def required(*terms: dict[str, Any], selector: dict[str, str] | None = None) -> list[bool]:
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["nodeSelector"] = selector
    if terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    return index().required_mask(node_constraints({"spec": spec})).tolist()


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def test_operators() -> None:
    assert required({"matchExpressions": [expr("zone", "In", "a", "c")]}) == [1, 0, 1, 0]
    assert required({"matchExpressions": [expr("zone", "NotIn", "a")]}) == [0, 1, 1, 1]
    assert required({"matchExpressions": [expr("gpu", "Exists")]}) == [1, 0, 0, 0]
    assert required({"matchExpressions": [expr("gpu", "DoesNotExist")]}) == [0, 1, 1, 1]
    # Gt/Lt compare integers; "x" and a missing label never match
    assert required({"matchExpressions": [expr("gen", "Gt", "3")]}) == [0, 1, 0, 0]
    assert required({"matchExpressions": [expr("gen", "Lt", "4")]}) == [1, 0, 0, 0]


def test_terms_or_and_fields() -> None:
    a = {"matchExpressions": [expr("zone", "In", "a")]}
    b = {"matchFields": [expr("metadata.name", "In", "n3")]}
    assert required(a, b) == [1, 0, 0, 1]
    both = {
        "matchExpressions": [expr("zone", "In", "a", "b")],
        "matchFields": [expr("metadata.name", "NotIn", "n0")],
    }
    assert required(both) == [0, 1, 0, 0]


def test_empty_and_invalid_terms_match_nothing() -> None:
    assert required({}) == [0, 0, 0, 0]
    assert required({"matchExpressions": [expr("zone", "In")]}) == [0, 0, 0, 0]
    assert required({"matchExpressions": [expr("gen", "Gt", "a")]}) == [0, 0, 0, 0]
    # an unparsable expression list drops only that half of the term
    half = {
        "matchExpressions": [expr("zone", "Exists", "oops")],
        "matchFields": [expr("metadata.name", "In", "n1")],
    }
    assert required(half) == [0, 1, 0, 0]


def test_node_selector_and_affinity_both_apply() -> None:
    assert required(selector={"zone": "b"}) == [0, 1, 0, 0]
    assert required({"matchExpressions": [expr("gen", "Exists")]}, selector={"zone": "c"}) == [
        0,
        0,
        1,
        0,
    ]
    assert required() == [1, 1, 1, 1]


def test_preferred_score_is_raw_sum_of_weights() -> None:
    pod = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 30,
                            "preference": {"matchExpressions": [expr("zone", "In", "a")]},
                        },
                        {"weight": 80, "preference": {"matchExpressions": [expr("gen", "Exists")]}},
                        {"weight": 0, "preference": {"matchExpressions": [expr("gen", "Exists")]}},
                    ]
                }
            }
        }
    }
    # n0: 30 + 80, n1 and n2: 80, n3: none
    assert index().preferred_score(preferred_terms(pod)).tolist() == [110, 80, 80, 0]


def test_label_selector_nil_matches_nothing_empty_everything() -> None:
    assert matches({"a": "1"}, label_selector(None)) is False
    assert matches({"a": "1"}, label_selector({})) is True
    assert (
        label_selector({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
        is None
    )


# --- property: vectorized == plain reference ------------------------------------------

KEYS = ["k1", "k2", "k3"]
VALUES = ["1", "2", "10", "v", "-3"]


def ref_requirement(labels: dict[str, str], e: dict[str, Any]) -> bool | None:
    """None when the expression is invalid."""
    key, op, vals = e["key"], e["operator"], e.get("values") or []
    if op in ("In", "NotIn"):
        if not vals:
            return None
        hit = key in labels and labels[key] in vals
        return hit if op == "In" else not hit
    if op in ("Exists", "DoesNotExist"):
        if vals:
            return None
        return (key in labels) == (op == "Exists")
    if len(vals) != 1:
        return None
    try:
        bound = int(vals[0])
    except ValueError:
        return None
    try:
        have = int(labels[key])
    except (KeyError, ValueError):
        return False
    return have > bound if op == "Gt" else have < bound


def ref_term(term: dict[str, Any], labels: dict[str, str], name: str) -> bool:
    label_part: bool | None = None
    if term.get("matchExpressions"):
        results = [ref_requirement(labels, e) for e in term["matchExpressions"]]
        label_part = None if any(r is None for r in results) else all(results)
    field_part: bool | None = None
    if term.get("matchFields"):
        ok = True
        valid = True
        for f in term["matchFields"]:
            vals = f.get("values") or []
            if f["operator"] not in ("In", "NotIn") or len(vals) != 1:
                valid = False
                break
            actual = name if f["key"] == "metadata.name" else ""
            ok = ok and ((actual == vals[0]) == (f["operator"] == "In"))
        field_part = ok if valid else None
    if label_part is None and field_part is None:
        return False
    return label_part is not False and field_part is not False


expressions = st.fixed_dictionaries(
    {
        "key": st.sampled_from(KEYS),
        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
        "values": st.lists(st.sampled_from(VALUES), max_size=2),
    }
)
fields = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["metadata.name", "other"]),
        "operator": st.sampled_from(["In", "NotIn"]),
        "values": st.lists(st.sampled_from(["n0", "n1", "n2", ""]), min_size=1, max_size=2),
    }
)
terms = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(expressions, max_size=3),
        "matchFields": st.lists(fields, max_size=2),
    },
)
label_maps = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


@given(
    nodes=st.lists(label_maps, min_size=1, max_size=8),
    term_list=st.lists(terms, max_size=3),
    selector=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
)
def test_required_matches_reference(
    nodes: list[dict[str, str]], term_list: list[dict[str, Any]], selector: dict[str, str]
) -> None:
    names = [f"n{i}" for i in range(len(nodes))]
    idx = NodeAffinityIndex(LabelIndex(nodes), names)
    spec: dict[str, Any] = {"nodeSelector": selector}
    aff = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": term_list}}
    spec["affinity"] = {"nodeAffinity": aff}
    got = idx.required_mask(node_constraints({"spec": spec}))
    want = [
        all(lab.get(k) == v for k, v in selector.items())
        and any(ref_term(t, lab, names[i]) for t in term_list)
        for i, lab in enumerate(nodes)
    ]
    assert got.tolist() == want


@given(
    nodes=st.lists(label_maps, min_size=1, max_size=8),
    prefs=st.lists(st.tuples(st.integers(0, 100), terms), max_size=3),
)
def test_preferred_matches_reference(
    nodes: list[dict[str, str]], prefs: list[tuple[int, dict[str, Any]]]
) -> None:
    names = [f"n{i}" for i in range(len(nodes))]
    idx = NodeAffinityIndex(LabelIndex(nodes), names)
    raw = [{"weight": w, "preference": t} for w, t in prefs]
    pod = {
        "spec": {
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": raw}}
        }
    }
    got = idx.preferred_score(preferred_terms(pod))
    want = [
        sum(w for w, t in prefs if w and ref_term(t, lab, names[i])) for i, lab in enumerate(nodes)
    ]
    assert np.array_equal(got, np.array(want, dtype=float))
