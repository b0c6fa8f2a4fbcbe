"""Pod topology spread: DoNotSchedule filter and ScheduleAnyway score."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.kernels import KernelState, feasible, nodeorder_components
from lahar.scheduler.kernels.feasibility import PredicateSwitches
from lahar.scheduler.kernels.scoring import NodeOrderWeights
from lahar.scheduler.kernels.spread import SPREAD_MISMATCH, SPREAD_MISSING_LABEL
from tests.scheduler.kernels.kernel_builders import make_table, node, place, pod, task_of

ONLY_SPREAD = NodeOrderWeights(0, 0, 0, 0, 0, 0, 0, 1)


def constraint(key: str = "zone", skew: int = 1, hard: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **extra,
    }


def web_cluster() -> Any:
    """zone a: n0 (2 web), n1; zone b: n2 (1 web); zone c: n3 (0 web); n4 no zone."""
    nodes = [
        node("n0", labels={"zone": "a"}),
        node("n1", labels={"zone": "a"}),
        node("n2", labels={"zone": "b"}),
        node(
            "n3",
            labels={"zone": "c", "tier": "spot"},
            taints=[{"key": "spot", "effect": "NoSchedule"}],
        ),
        node("n4"),
    ]
    table = make_table(nodes)
    place(table, "n0", pod("w0", labels={"app": "web"}))
    place(table, "n0", pod("w1", labels={"app": "web"}))
    place(table, "n2", pod("w2", labels={"app": "web"}))
    place(table, "n2", pod("other", labels={"app": "db"}))
    return table


def filter_reasons(table: Any, *cons: dict[str, Any], **spec: Any) -> dict[str, list[bool]]:
    p = pod("new", labels={"app": "web"}, spec={"topologySpreadConstraints": list(cons), **spec})
    result = feasible(KernelState(table), task_of(table, p), PREDICATES_SPREAD_ONLY)
    return {t: m.tolist() for t, m in result.reasons}


PREDICATES_SPREAD_ONLY = PredicateSwitches(
    node_affinity=False, taint_toleration=False, pod_count=False
)


def test_skew_against_global_minimum() -> None:
    table = web_cluster()
    # counts a=2, b=1, c=0 (taints ignored by default); min 0, maxSkew 1:
    # a: 2+1-0 > 1 fails, b: 1+1-0 = 2 > 1 fails, c: 1 ok; n4 lacks the label
    got = filter_reasons(table, constraint())
    assert got == {
        SPREAD_MISSING_LABEL: [False, False, False, False, True],
        SPREAD_MISMATCH: [True, True, True, False, False],
    }


def test_node_taints_policy_honor_drops_the_tainted_domain() -> None:
    table = web_cluster()
    # zone c leaves the domain set: min becomes 1 (zone b): a: 3-1 > 1 fails, b: 2-1 ok
    # n3 itself is judged by its own zone value, which is no longer a counted domain: 0+1-1
    got = filter_reasons(table, constraint(nodeTaintsPolicy="Honor"))
    assert got == {
        SPREAD_MISSING_LABEL: [False, False, False, False, True],
        SPREAD_MISMATCH: [True, True, False, False, False],
    }


def test_node_affinity_policy_and_min_domains() -> None:
    table = web_cluster()
    sel = {"nodeSelector": {"zone": "a"}}
    # Honor (default): only zone a counts -> min 2 -> a: 2+1-2 = 1 ok
    assert filter_reasons(table, constraint(), **sel) == {
        SPREAD_MISSING_LABEL: [False, False, False, False, True]
    }
    # minDomains 2 > 1 domain: min is taken as 0 -> a: 3 > 1 fails; zones b and c are
    # not counted domains, so a node there sees 0 + 1 - 0 = 1
    assert filter_reasons(table, constraint(minDomains=2), **sel)[SPREAD_MISMATCH] == [
        True,
        True,
        False,
        False,
        False,
    ]
    # Ignore: all zones count again (min 0)
    got = filter_reasons(table, constraint(nodeAffinityPolicy="Ignore"), **sel)
    assert got[SPREAD_MISMATCH] == [True, True, True, False, False]


def test_terminating_and_other_namespace_pods_do_not_count() -> None:
    table = web_cluster()
    place(table, "n3", pod("gone", labels={"app": "web"}))
    table.tasks[3]["uid-default-gone"].pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    place(table, "n3", pod("elsewhere", namespace="prod", labels={"app": "web"}))
    got = filter_reasons(table, constraint())
    assert got[SPREAD_MISMATCH] == [True, True, True, False, False]


def test_score_by_hand() -> None:
    table = web_cluster()
    p = pod(
        "new",
        labels={"app": "web"},
        spec={"topologySpreadConstraints": [constraint(skew=2, hard=False)]},
    )
    state = KernelState(table)
    got = nodeorder_components(state, task_of(table, p), np.arange(5), ONLY_SPREAD)[
        "podtopologyspread"
    ]
    w = math.log(3 + 2)  # three zones among the candidates
    raw = [round(2 * w + 1), round(2 * w + 1), round(1 * w + 1), round(0 * w + 1)]
    assert raw == [4, 4, 3, 1]
    hi, lo = max(raw), min(raw)
    want = [100 * (hi + lo - r) // hi for r in raw] + [0]  # n4 lacks the key: ignored
    assert want == [25, 25, 50, 100, 0]
    assert got.tolist() == want


def test_hostname_score_counts_pods_on_the_node() -> None:
    table = web_cluster()
    c = constraint("kubernetes.io/hostname", skew=1, hard=False)
    p = pod("new", labels={"app": "web"}, spec={"topologySpreadConstraints": [c]})
    state = KernelState(table)
    got = nodeorder_components(state, task_of(table, p), np.arange(5), ONLY_SPREAD)[
        "podtopologyspread"
    ]
    w = math.log(5 + 2)
    raw = [round(2 * w), 0, round(w), 0, 0]  # [4, 0, 2, 0, 0]
    assert raw == [4, 0, 2, 0, 0]
    assert got.tolist() == [100 * (4 + 0 - r) // 4 for r in raw]


# --- property: vectorized == a plain per-node reference ---------------------------------

KEYS = ["zone", "rack", "kubernetes.io/hostname"]


def ref_count(pods: list[tuple[int, dict[str, Any]]], n: int, ns: str, app: str) -> int:
    return sum(
        1
        for m, p in pods
        if m == n and p["metadata"]["namespace"] == ns and p["metadata"]["labels"].get("app") == app
    )


def ref(
    nodes: list[dict[str, str]],
    pods: list[tuple[int, dict[str, Any]]],
    inc: dict[str, Any],
    sel_ok: list[bool],
) -> tuple[list[str | None], list[int]]:
    ns, my_app = inc["metadata"]["namespace"], inc["metadata"]["labels"]["app"]
    cons = inc["spec"]["topologySpreadConstraints"]
    hard = [c for c in cons if c["whenUnsatisfiable"] == "DoNotSchedule"]
    soft = [c for c in cons if c["whenUnsatisfiable"] == "ScheduleAnyway"]
    reasons: list[str | None] = [None] * len(nodes)
    if hard:
        stats = []
        for c in hard:
            counts: Counter[str] = Counter()
            for n, labels in enumerate(nodes):
                if all(x["topologyKey"] in labels for x in hard) and sel_ok[n]:
                    counts[labels[c["topologyKey"]]] += ref_count(
                        pods, n, ns, c["labelSelector"]["matchLabels"]["app"]
                    )
            low = min(counts.values()) if counts else 2**31 - 1
            if len(counts) < c.get("minDomains", 1):
                low = 0
            stats.append((counts, low))
        for n, labels in enumerate(nodes):
            for c, (counts, low) in zip(hard, stats, strict=True):
                if c["topologyKey"] not in labels:
                    reasons[n] = SPREAD_MISSING_LABEL
                    break
                self_match = int(c["labelSelector"]["matchLabels"]["app"] == my_app)
                if counts.get(labels[c["topologyKey"]], 0) + self_match - low > c["maxSkew"]:
                    reasons[n] = SPREAD_MISMATCH
                    break
    scores = [0] * len(nodes)
    if soft:
        ok = [all(c["topologyKey"] in labels for c in soft) for labels in nodes]
        raw: list[float] = [0.0] * len(nodes)
        for c in soft:
            key, app = c["topologyKey"], c["labelSelector"]["matchLabels"]["app"]
            values = {labels[key] for n, labels in enumerate(nodes) if ok[n]}
            size = sum(ok) if key == "kubernetes.io/hostname" else len(values)
            totals: Counter[str] = Counter()
            for n, labels in enumerate(nodes):
                if ok[n] and sel_ok[n] and labels[key] in values:
                    totals[labels[key]] += ref_count(pods, n, ns, app)
            for n, labels in enumerate(nodes):
                if ok[n]:
                    cnt = (
                        ref_count(pods, n, ns, app)
                        if key == "kubernetes.io/hostname"
                        else totals[labels[key]]
                    )
                    raw[n] += cnt * math.log(size + 2) + c["maxSkew"] - 1
        ints = [math.floor(r + 0.5) for r in raw]
        kept = [ints[n] for n in range(len(nodes)) if ok[n]]
        if kept:
            hi, lo = max(kept), min(kept)
            scores = [
                (0 if not ok[n] else 100 if hi == 0 else 100 * (hi + lo - ints[n]) // hi)
                for n in range(len(nodes))
            ]
    return reasons, scores


cons_st = st.fixed_dictionaries(
    {
        "maxSkew": st.integers(1, 3),
        "topologyKey": st.sampled_from(KEYS),
        "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
        "labelSelector": st.fixed_dictionaries(
            {"matchLabels": st.fixed_dictionaries({"app": st.sampled_from(["a", "b"])})}
        ),
    },
    optional={"minDomains": st.integers(1, 4)},
)
node_labels = st.fixed_dictionaries(
    {},
    optional={
        "zone": st.sampled_from(["z1", "z2", "z3"]),
        "rack": st.sampled_from(["r1", "r2"]),
        "pool": st.just("x"),
    },
)


@given(
    labels=st.lists(node_labels, min_size=1, max_size=7),
    placed=st.lists(
        st.tuples(
            st.integers(0, 6), st.sampled_from(["a", "b"]), st.sampled_from(["default", "other"])
        ),
        max_size=14,
    ),
    cons=st.lists(cons_st, min_size=1, max_size=2),
    app=st.sampled_from(["a", "b"]),
    selector=st.booleans(),
)
def test_matches_reference(
    labels: list[dict[str, str]],
    placed: list[tuple[int, str, str]],
    cons: list[dict[str, Any]],
    app: str,
    selector: bool,
) -> None:
    nodes = [node(f"n{i}", labels=lab) for i, lab in enumerate(labels)]
    table = make_table(nodes)
    pods = []
    for j, (n, papp, ns) in enumerate(placed):
        n %= len(nodes)
        p = pod(f"p{j}", namespace=ns, labels={"app": papp})
        place(table, f"n{n}", p)
        pods.append((n, p))
    spec: dict[str, Any] = {"topologySpreadConstraints": cons}
    if selector:
        spec["nodeSelector"] = {"pool": "x"}
    inc = pod("new", labels={"app": app}, spec=spec)
    full = [n["metadata"]["labels"] for n in nodes]
    sel_ok = [(not selector) or lab.get("pool") == "x" for lab in full]
    state = KernelState(table)
    task = task_of(table, inc)
    result = feasible(state, task, PredicateSwitches(node_affinity=False, pod_count=False))
    got = [next((t for t, m in result.reasons if m[i]), None) for i in range(len(nodes))]
    want_reasons, want_scores = ref(full, pods, inc, sel_ok)
    assert got == want_reasons
    score = nodeorder_components(state, task, np.arange(len(nodes)), ONLY_SPREAD)[
        "podtopologyspread"
    ]
    assert score.tolist() == want_scores
