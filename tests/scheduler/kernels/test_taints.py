"""Taint/toleration filter, node unschedulable and the PreferNoSchedule score."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.kernels.taints import TaintIndex, normalize_reverse, unschedulable_fails


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


NODE_TAINTS = [
    [],
    [taint("gpu", "true")],
    [taint("soft", "x", "PreferNoSchedule"), taint("maint", "", "NoExecute"), taint("gpu", "true")],
    [taint("soft", "x", "PreferNoSchedule"), taint("soft2", "y", "PreferNoSchedule")],
]


def test_untolerated_taints_fail_with_first_taint_named() -> None:
    failed, reasons = TaintIndex(NODE_TAINTS).filter([])
    assert failed.tolist() == [False, True, True, False]
    by_text = {text: mask.tolist() for text, mask in reasons}
    # node 2 lists maint before gpu, so its reason names maint
    assert by_text == {
        "node(s) had untolerated taint {gpu: true}": [False, True, False, False],
        "node(s) had untolerated taint {maint: }": [False, False, True, False],
    }


def test_tolerations_equal_exists_and_effect() -> None:
    idx = TaintIndex(NODE_TAINTS)
    equal = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert idx.filter(equal)[0].tolist() == [False, False, True, False]
    wrong_value = [{"key": "gpu", "value": "false"}]
    assert idx.filter(wrong_value)[0].tolist() == [False, True, True, False]
    exists_all = [{"operator": "Exists"}]
    assert idx.filter(exists_all)[0].tolist() == [False, False, False, False]
    only_noexecute = [
        {"operator": "Exists", "effect": "NoExecute"},
        {"key": "gpu", "operator": "Exists"},
    ]
    assert idx.filter(only_noexecute)[0].tolist() == [False, False, False, False]


def test_unschedulable_needs_the_cordon_toleration() -> None:
    cordoned = np.array([True, False])
    assert unschedulable_fails(cordoned, []).tolist() == [True, False]
    tol = [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert unschedulable_fails(cordoned, tol).tolist() == [False, False]


def test_prefer_no_schedule_score() -> None:
    idx = TaintIndex(NODE_TAINTS)
    counts = idx.prefer_counts([])
    assert counts.tolist() == [0, 0, 1, 2]
    # max 2: 100 - 100*c//2
    assert normalize_reverse(counts).tolist() == [100, 100, 50, 0]
    # a NoSchedule toleration does not count for the score
    tol = [{"key": "soft", "operator": "Exists", "effect": "NoSchedule"}]
    assert idx.prefer_counts(tol).tolist() == [0, 0, 1, 2]
    tol = [{"key": "soft", "operator": "Exists"}]
    assert idx.prefer_counts(tol).tolist() == [0, 0, 0, 1]
    assert normalize_reverse(np.array([0, 0])).tolist() == [100, 100]
    # 3 nodes with 0, 1, 3: 100 - 0, 100 - 33, 100 - 100
    assert normalize_reverse(np.array([0, 1, 3])).tolist() == [100, 67, 0]


# --- property ----------------------------------------------------------------------------

KEYS = ["a", "b", "c"]
VALUES = ["", "x", "y"]
EFFECTS = ["NoSchedule", "NoExecute", "PreferNoSchedule"]
taints_st = st.builds(
    taint, st.sampled_from(KEYS), st.sampled_from(VALUES), st.sampled_from(EFFECTS)
)
tols_st = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(["", *KEYS]),
        "operator": st.sampled_from(["Equal", "Exists"]),
        "value": st.sampled_from(VALUES),
        "effect": st.sampled_from(["", *EFFECTS]),
    },
)


def ref_tolerates(tol: dict[str, Any], t: dict[str, str]) -> bool:
    if tol.get("effect") and tol["effect"] != t["effect"]:
        return False
    if tol.get("key") and tol["key"] != t["key"]:
        return False
    if tol.get("operator", "Equal") == "Exists":
        return True
    return tol.get("value", "") == t["value"]


@given(
    nodes=st.lists(st.lists(taints_st, max_size=3), min_size=1, max_size=6),
    tols=st.lists(tols_st, max_size=3),
)
def test_matches_reference(nodes: list[list[dict[str, str]]], tols: list[dict[str, Any]]) -> None:
    idx = TaintIndex(nodes)
    failed, reasons = idx.filter(tols)
    counts = idx.prefer_counts(tols)
    soft_tols = [t for t in tols if t.get("effect", "") in ("", "PreferNoSchedule")]
    for i, node_taints in enumerate(nodes):
        bad = [
            t
            for t in node_taints
            if t["effect"] != "PreferNoSchedule" and not any(ref_tolerates(x, t) for x in tols)
        ]
        assert bool(failed[i]) == bool(bad)
        named = [text for text, mask in reasons if mask[i]]
        if bad:
            assert named == [
                f"node(s) had untolerated taint {{{bad[0]['key']}: {bad[0]['value']}}}"
            ]
        else:
            assert named == []
        distinct = {tuple(t.values()) for t in node_taints if t["effect"] == "PreferNoSchedule"}
        want = sum(
            1
            for k, v, e in distinct
            if not any(ref_tolerates(x, {"key": k, "value": v, "effect": e}) for x in soft_tols)
        )
        assert counts[i] == want
