"""preempt: same-queue preemption of lower-priority, preemptable tasks (§4.4)."""

from __future__ import annotations

from typing import Any

from tests.scheduler.builders import conf, node, pod, podgroup, priority_class, queue, schedule

# Helm-style tiers: gang and drf do not vote on victims, so priority decides.
PREEMPT = conf(
    "enqueue, allocate, preempt",
    ["priority", {"name": "gang", "enablePreemptable": False}, "conformance"],
    [{"name": "drf", "enablePreemptable": False}, "proportion"],
)


def running(name: str, prio: str, *, q: str = "default", cpu: str = "2", **kw: Any) -> list:
    return [
        podgroup(name, 1, phase="Running", priority_class=prio, queue=q),
        pod(f"{name}-0", name, cpu=cpu, node_name="n1", priority_class=prio, **kw),
    ]


def waiting(name: str, prio: str, *, q: str = "default", cpu: str = "2") -> list:
    return [
        podgroup(name, 1, phase="Inqueue", priority_class=prio, queue=q),
        pod(f"{name}-0", name, cpu=cpu, priority_class=prio),
    ]


BASE = [node("n1", cpu="2"), priority_class("high", 100), priority_class("low", 1)]


def test_high_priority_evicts_lower_and_is_pipelined() -> None:
    result = schedule([*BASE, *running("lo", "low"), *waiting("hi", "high")], PREEMPT)
    assert result.evictions == ["default/lo-0"]
    assert result.pipelined == {"default/hi-0": "n1"}
    assert result.binds == {}


def test_equal_or_higher_priority_is_never_evicted() -> None:
    result = schedule([*BASE, *running("a", "high"), *waiting("b", "high")], PREEMPT)
    assert result.evictions == []


def test_non_preemptable_pod_is_kept() -> None:
    objs = [
        *BASE,
        *running("lo", "low", annotations={"volcano.sh/preemptable": "false"}),
        *waiting("hi", "high"),
    ]
    assert schedule(objs, PREEMPT).evictions == []


def test_conformance_protects_kube_system_and_critical_pods() -> None:
    objs = [*BASE, priority_class("system-node-critical", 0)]
    objs += [podgroup("sys", 1, phase="Running", namespace="kube-system", priority_class="low")]
    objs += [pod("sys-0", "sys", cpu="2", node_name="n1", namespace="kube-system")]
    objs += waiting("hi", "high")
    assert schedule(objs, PREEMPT).evictions == []
    objs = [*BASE, priority_class("system-node-critical", 0)]
    objs += running("crit", "low")
    objs[-1]["spec"]["priorityClassName"] = "system-node-critical"
    objs += waiting("hi", "high")
    assert schedule(objs, PREEMPT).evictions == []


def test_preempt_stays_within_the_queue() -> None:
    objs = [
        *BASE,
        queue("a"),
        queue("b"),
        *running("lo", "low", q="a"),
        *waiting("hi", "high", q="b"),
    ]
    assert schedule(objs, PREEMPT).evictions == []


def test_gang_protects_min_member_with_default_flags() -> None:
    default_like = conf(
        "enqueue, allocate, preempt", ["priority", "gang", "conformance"], ["drf", "proportion"]
    )
    result = schedule([*BASE, *running("lo", "low"), *waiting("hi", "high")], default_like)
    assert result.evictions == []


def test_gang_allows_victims_above_min_member() -> None:
    default_like = conf(
        "enqueue, allocate, preempt", ["priority", "gang", "conformance"], ["proportion"]
    )
    objs = [
        node("n1", cpu="4"),
        priority_class("high", 100),
        priority_class("low", 1),
        podgroup("lo", 1, phase="Running", priority_class="low"),
        *[pod(f"lo-{i}", "lo", cpu="2", node_name="n1", priority_class="low") for i in range(2)],
        *waiting("hi", "high"),
    ]
    result = schedule(objs, default_like)
    assert len(result.evictions) == 1
    assert result.pipelined == {"default/hi-0": "n1"}


def test_preemption_policy_never() -> None:
    objs = [*BASE, *running("lo", "low"), *waiting("hi", "high")]
    objs[-1]["spec"]["preemptionPolicy"] = "Never"
    assert schedule(objs, PREEMPT).evictions == []


def test_nominated_preemptor_waits_for_its_earlier_victim() -> None:
    objs = [
        node("n1", cpu="4"),
        priority_class("high", 100),
        priority_class("low", 1),
        podgroup("lo", 1, phase="Running", priority_class="low"),
        pod("lo-0", "lo", cpu="2", node_name="n1", priority_class="low", deleting=True),
        pod("lo-1", "lo", cpu="2", node_name="n1", priority_class="low"),
        *waiting("hi", "high", cpu="4"),
    ]
    objs[4]["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    objs[-1]["status"]["nominatedNodeName"] = "n1"
    objs[-1]["spec"]["priority"] = 100
    assert schedule(objs, PREEMPT).evictions == []
    objs[-1]["status"]["nominatedNodeName"] = "gone"  # nominated node left: not eligible
    assert schedule(objs, PREEMPT).evictions == []
    del objs[-1]["status"]["nominatedNodeName"]
    assert schedule(objs, PREEMPT).evictions == ["default/lo-1"]
