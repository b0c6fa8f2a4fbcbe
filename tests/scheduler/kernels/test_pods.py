"""PodIndex: cached per-node counts stay exact through updates and cache evictions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.kernels import pods as pods_module
from lahar.scheduler.kernels.labels import label_selector, matches
from lahar.scheduler.kernels.pods import PodIndex, PodMatcher

APPS = ["a", "b", "c"]


def mk(app: str, ns: str = "default", tier: str | None = None) -> dict[str, Any]:
    labels = {"app": app}
    if tier:
        labels["tier"] = tier
    return {"metadata": {"namespace": ns, "labels": labels}, "spec": {}}


SELECTORS = [
    label_selector({"matchLabels": {"app": "a"}}),
    label_selector({"matchExpressions": [{"key": "app", "operator": "In", "values": ["b", "c"]}]}),
    label_selector({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
    label_selector({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}),
    label_selector({}),
    label_selector(None),
]
MATCHERS = [PodMatcher(frozenset({"default"}), None, sel) for sel in SELECTORS] + [
    PodMatcher(frozenset(), (), SELECTORS[0])  # every namespace
]


def brute(placed: dict[str, tuple[int, dict[str, Any]]], m: PodMatcher, n: int) -> list[int]:
    out = [0] * n
    for node, p in placed.values():
        ns = p["metadata"]["namespace"]
        ns_ok = ns in m.namespaces or m.ns_selector is not None
        if ns_ok and matches(p["metadata"]["labels"], m.selector):
            out[node] += 1
    return out


def test_counts_by_hand() -> None:
    index = PodIndex.build(
        3,
        [
            ("u1", 0, mk("a"), None),
            ("u2", 0, mk("a", "prod"), None),
            ("u3", 2, mk("b", tier="x"), None),
        ],
    )
    assert index.counts((MATCHERS[0],)).tolist() == [1, 0, 0]
    assert index.counts((MATCHERS[6],)).tolist() == [2, 0, 0]
    assert index.counts((MATCHERS[2],)).tolist() == [0, 0, 1]
    assert index.counts((MATCHERS[5],)).tolist() == [0, 0, 0]
    index.add("u4", 1, mk("a"))
    index.remove("u1")
    assert index.counts((MATCHERS[0],)).tolist() == [0, 1, 0]
    # both matchers must hold: app in (b, c) and tier exists
    assert index.counts((MATCHERS[1], MATCHERS[2])).tolist() == [0, 0, 1]


@given(
    initial=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.sampled_from(APPS),
            st.sampled_from(["default", "prod"]),
            st.booleans(),
        ),
        max_size=8,
    ),
    steps=st.lists(
        st.tuples(
            st.booleans(),
            st.integers(0, 20),
            st.integers(0, 3),
            st.sampled_from(APPS),
            st.booleans(),
            st.integers(0, 6),
        ),
        max_size=20,
    ),
)
def test_counts_match_brute_force_with_tiny_cache(
    initial: list[tuple[int, str, str, bool]], steps: list[tuple[bool, int, int, str, bool, int]]
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pods_module, "MAX_CACHED_SELECTORS", 2)
        placed = {
            f"i{j}": (n, mk(app, ns, "t" if tier else None))
            for j, (n, app, ns, tier) in enumerate(initial)
        }
        index = PodIndex.build(4, [(uid, n, p, None) for uid, (n, p) in placed.items()])
        for j, (add, pick, n, app, tier, which) in enumerate(steps):
            if add or not placed:
                uid = f"s{j}"
                placed[uid] = (n, mk(app, tier="t" if tier else None))
                index.add(uid, n, placed[uid][1])
            else:
                uid = sorted(placed)[pick % len(placed)]
                del placed[uid]
                index.remove(uid)
            m = MATCHERS[which]
            assert index.counts((m,)).tolist() == brute(placed, m, 4)
        for m in MATCHERS:
            assert np.array_equal(index.counts((m,)), brute(placed, m, 4))
