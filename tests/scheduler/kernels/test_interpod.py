"""Inter-pod affinity / anti-affinity: filter and preferred score."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.kernels import KernelState, feasible, nodeorder_components
from lahar.scheduler.kernels.interpod import (
    AFFINITY_MISMATCH,
    ANTI_AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY_MISMATCH,
    interpod_raw_score,
    normalize_min_max,
)
from lahar.scheduler.kernels.scoring import NodeOrderWeights
from tests.scheduler.kernels.kernel_builders import make_table, node, place, pod, task_of

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
ONLY_PODAFFINITY = NodeOrderWeights(0, 0, 0, 0, 1, 0, 0, 0)


def term(app: str, key: str = "zone", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def affinity(kind: str, required: list[Any] = (), preferred: list[Any] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    body: dict[str, Any] = {}
    if required:
        body[REQ] = list(required)
    if preferred:
        body[PREF] = [{"weight": w, "podAffinityTerm": t} for w, t in preferred]
    return {"affinity": {kind: body}}


def cluster() -> Any:
    nodes = [
        node("n0", labels={"zone": "a"}),
        node("n1", labels={"zone": "a"}),
        node("n2", labels={"zone": "b"}),
        node("n3"),  # no zone label
    ]
    table = make_table(nodes)
    place(table, "n0", pod("db-0", labels={"app": "db"}))
    place(table, "n3", pod("cache-0", labels={"app": "cache"}))
    return table


def reasons_of(
    table: Any, spec: dict[str, Any], labels: dict[str, str] | None = None
) -> dict[str, list[bool]]:
    state = KernelState(table)
    result = feasible(state, task_of(table, pod("new", labels=labels, spec=spec)))
    return {text: mask.tolist() for text, mask in result.reasons}


def test_required_affinity_zone() -> None:
    table = cluster()
    got = reasons_of(table, affinity("podAffinity", [term("db")]))
    # db runs in zone a: n0 and n1 pass, n2 (zone b) and n3 (no zone label) fail
    assert got == {AFFINITY_MISMATCH: [False, False, True, True]}


def test_first_pod_of_self_affine_group_may_go_anywhere_with_the_label() -> None:
    table = cluster()
    got = reasons_of(table, affinity("podAffinity", [term("web")]), labels={"app": "web"})
    assert got == {AFFINITY_MISMATCH: [False, False, False, True]}
    # without self-match there is nowhere to go
    got = reasons_of(table, affinity("podAffinity", [term("web")]), labels={"app": "other"})
    assert got == {AFFINITY_MISMATCH: [True, True, True, True]}


def test_required_anti_affinity() -> None:
    table = cluster()
    got = reasons_of(table, affinity("podAntiAffinity", [term("db")]))
    assert got == {ANTI_AFFINITY_MISMATCH: [True, True, False, False]}
    # hostname topology only excludes db's own node
    got = reasons_of(table, affinity("podAntiAffinity", [term("db", "kubernetes.io/hostname")]))
    assert got == {ANTI_AFFINITY_MISMATCH: [True, False, False, False]}


def test_namespaces_of_terms() -> None:
    table = cluster()
    other_ns = term("db", namespaces=["prod"])
    assert reasons_of(table, affinity("podAntiAffinity", [other_ns])) == {}
    all_ns = term("db", namespaceSelector={})
    assert reasons_of(table, affinity("podAntiAffinity", [all_ns])) == {
        ANTI_AFFINITY_MISMATCH: [True, True, False, False]
    }


def test_existing_pods_anti_affinity() -> None:
    table = cluster()
    guard = pod("guard", labels={"app": "guard"}, spec=affinity("podAntiAffinity", [term("web")]))
    place(table, "n2", guard)
    got = reasons_of(table, {}, labels={"app": "web"})
    assert got == {EXISTING_ANTI_AFFINITY_MISMATCH: [False, False, True, False]}
    assert reasons_of(table, {}, labels={"app": "api"}) == {}


def test_preferred_score_by_hand() -> None:
    table = cluster()
    place(table, "n2", pod("db-1", labels={"app": "db"}))
    place(table, "n1", pod("db-2", labels={"app": "db"}))
    spec = affinity(
        "podAffinity", preferred=[(10, term("db")), (4, term("cache", "kubernetes.io/hostname"))]
    )
    state = KernelState(table)
    task = task_of(table, pod("new", spec=spec))
    got = nodeorder_components(state, task, np.arange(4), ONLY_PODAFFINITY)["podaffinity"]
    # zone a holds 2 db pods -> 20 for n0, n1; zone b 1 -> 10 for n2; n3 has cache -> 4
    # min 4, max 20: n0,n1 100; n2 int(100*6/16) = 37; n3 0
    assert got.tolist() == [100, 100, 37, 0]


def test_existing_pods_terms_feed_the_score() -> None:
    table = cluster()
    lover = pod("lover", labels={"app": "x"}, spec=affinity("podAffinity", [term("web")]))
    fan = pod(
        "fan", labels={"app": "z"}, spec=affinity("podAffinity", preferred=[(3, term("web"))])
    )
    hater = pod(
        "hater", labels={"app": "y"}, spec=affinity("podAntiAffinity", preferred=[(5, term("web"))])
    )
    place(table, "n2", lover)
    place(table, "n2", fan)
    place(table, "n0", hater)
    state = KernelState(table)
    p = state.parsed(task_of(table, pod("new", labels={"app": "web"})))
    # Volcano: the lover's *required* term does not score (hard weight 0);
    # zone b: +3, zone a: -5, n3 (no zone): 0 -> min -5, max 3
    raw = interpod_raw_score(p.affinity, p.namespace, p.labels, state.labels, state.pods)
    assert raw is not None and raw.tolist() == [-5, -5, 3, 0]
    assert normalize_min_max(raw).tolist() == [0, 0, 100, int(100 * 5 / 8)]
    # kube-scheduler's default hard weight 1 adds the lover's term: zone b +4
    raw = interpod_raw_score(p.affinity, p.namespace, p.labels, state.labels, state.pods, 1)
    assert raw is not None and raw.tolist() == [-5, -5, 4, 0]


# --- property: vectorized == a plain per-node reference ---------------------------------

KEYS = ["zone", "rack", "kubernetes.io/hostname"]
APPS = ["a", "b", "c"]


def ref_term_matches(t: dict[str, Any], owner_ns: str, target: dict[str, Any]) -> bool:
    nss = t.get("namespaces") or []
    if not nss and "namespaceSelector" not in t:
        nss = [owner_ns]
    ns_ok = target["metadata"]["namespace"] in nss or t.get("namespaceSelector") == {}
    want = t["labelSelector"]["matchLabels"]
    labels = target["metadata"]["labels"]
    return ns_ok and all(labels.get(k) == v for k, v in want.items())


def ref_filter(
    nodes: list[dict[str, str]], pods: list[tuple[int, dict[str, Any]]], inc: dict[str, Any]
) -> list[str | None]:
    aff = inc["spec"].get("affinity") or {}
    req_aff = (aff.get("podAffinity") or {}).get(REQ) or []
    req_anti = (aff.get("podAntiAffinity") or {}).get(REQ) or []
    ns = inc["metadata"]["namespace"]
    existing, aff_counts, anti_counts = Counter(), Counter(), Counter()
    for n, p in pods:
        labels = nodes[n]
        p_aff = p["spec"].get("affinity") or {}
        for t in (p_aff.get("podAntiAffinity") or {}).get(REQ) or []:
            if ref_term_matches(t, p["metadata"]["namespace"], inc) and t["topologyKey"] in labels:
                existing[(t["topologyKey"], labels[t["topologyKey"]])] += 1
        if req_aff and all(ref_term_matches(t, ns, p) for t in req_aff):
            for t in req_aff:
                if t["topologyKey"] in labels:
                    aff_counts[(t["topologyKey"], labels[t["topologyKey"]])] += 1
        for t in req_anti:
            if ref_term_matches(t, ns, p) and t["topologyKey"] in labels:
                anti_counts[(t["topologyKey"], labels[t["topologyKey"]])] += 1
    out: list[str | None] = []
    for labels in nodes:
        reason = None
        ok, exist = True, True
        for t in req_aff:
            if t["topologyKey"] not in labels:
                ok = False
            elif aff_counts[(t["topologyKey"], labels[t["topologyKey"]])] <= 0:
                exist = False
        if not ok or (
            not exist
            and not (not aff_counts and all(ref_term_matches(t, ns, inc) for t in req_aff))
        ):
            reason = AFFINITY_MISMATCH
        elif any(
            anti_counts[(t["topologyKey"], labels.get(t["topologyKey"]))] > 0
            for t in req_anti
            if t["topologyKey"] in labels
        ):
            reason = ANTI_AFFINITY_MISMATCH
        elif any(existing[(k, v)] > 0 for k, v in labels.items()):
            reason = EXISTING_ANTI_AFFINITY_MISMATCH
        out.append(reason)
    return out


def ref_score(
    nodes: list[dict[str, str]], pods: list[tuple[int, dict[str, Any]]], inc: dict[str, Any]
) -> list[int]:
    aff = inc["spec"].get("affinity") or {}
    ns = inc["metadata"]["namespace"]
    topo: Counter[tuple[str, str]] = Counter()
    seen = False
    for n, p in pods:
        labels = nodes[n]
        for sign, kind in ((1, "podAffinity"), (-1, "podAntiAffinity")):
            for wt in (aff.get(kind) or {}).get(PREF) or []:
                t = wt["podAffinityTerm"]
                if t["topologyKey"] in labels:
                    seen = True
                    if ref_term_matches(t, ns, p):
                        topo[(t["topologyKey"], labels[t["topologyKey"]])] += sign * wt["weight"]
        p_aff = p["spec"].get("affinity") or {}
        # existing pods' required affinity terms: hard weight 0 in Volcano, no effect
        for sign, kind in ((1, "podAffinity"), (-1, "podAntiAffinity")):
            for wt in (p_aff.get(kind) or {}).get(PREF) or []:
                t = wt["podAffinityTerm"]
                if (
                    ref_term_matches(t, p["metadata"]["namespace"], inc)
                    and t["topologyKey"] in labels
                ):
                    seen = True
                    topo[(t["topologyKey"], labels[t["topologyKey"]])] += sign * wt["weight"]
    raw = [sum(topo[(k, v)] for k, v in labels.items()) for labels in nodes]
    if not seen or max(raw) == min(raw):
        return [0] * len(nodes)
    lo, hi = min(raw), max(raw)
    return [int(100 * ((r - lo) / (hi - lo))) for r in raw]


term_st = st.builds(
    lambda app, key, ns: term(app, key, **ns),
    st.sampled_from(APPS),
    st.sampled_from(KEYS),
    st.sampled_from([{}, {"namespaces": ["other"]}, {"namespaceSelector": {}}]),
)


def aff_st() -> st.SearchStrategy[dict[str, Any]]:
    weighted = st.lists(st.tuples(st.integers(1, 100), term_st), max_size=2)
    return st.builds(
        lambda ra, rn, pa, pn: {
            "affinity": {
                "podAffinity": {
                    REQ: ra,
                    PREF: [{"weight": w, "podAffinityTerm": t} for w, t in pa],
                },
                "podAntiAffinity": {
                    REQ: rn,
                    PREF: [{"weight": w, "podAffinityTerm": t} for w, t in pn],
                },
            }
        },
        st.lists(term_st, max_size=2),
        st.lists(term_st, max_size=2),
        weighted,
        weighted,
    )


node_labels = st.fixed_dictionaries(
    {},
    optional={"zone": st.sampled_from(["z1", "z2"]), "rack": st.sampled_from(["r1", "r2", "r3"])},
)
pod_st = st.tuples(
    st.sampled_from(APPS), st.sampled_from(["default", "other"]), st.one_of(st.just({}), aff_st())
)


@given(
    labels=st.lists(node_labels, min_size=1, max_size=6),
    placed=st.lists(st.tuples(st.integers(0, 5), pod_st), max_size=10),
    incoming=pod_st,
)
def test_matches_reference(
    labels: list[dict[str, str]],
    placed: list[tuple[int, Any]],
    incoming: tuple[str, str, dict[str, Any]],
) -> None:
    nodes = [node(f"n{i}", labels=lab) for i, lab in enumerate(labels)]
    table = make_table(nodes)
    pods: list[tuple[int, dict[str, Any]]] = []
    for j, (n, (app, ns, spec)) in enumerate(placed):
        n %= len(nodes)
        p = pod(f"p{j}", namespace=ns, labels={"app": app}, spec=spec)
        place(table, f"n{n}", p)
        pods.append((n, p))
    app, ns, spec = incoming
    inc = pod("new", namespace=ns, labels={"app": app}, spec=spec)
    state = KernelState(table)
    task = task_of(table, inc)
    result = feasible(state, task)
    got = [next((t for t, m in result.reasons if m[i]), None) for i in range(len(nodes))]
    full = [n["metadata"]["labels"] for n in nodes]
    assert got == ref_filter(full, pods, inc)
    score = nodeorder_components(state, task, np.arange(len(nodes)), ONLY_PODAFFINITY)[
        "podaffinity"
    ]
    assert score.tolist() == ref_score(full, pods, inc)
