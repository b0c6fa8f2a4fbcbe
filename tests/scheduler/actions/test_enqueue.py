"""enqueue: admission of PodGroups by min resources (§4.1, §5.3)."""

from __future__ import annotations

from tests.scheduler.builders import conf, node, pod, podgroup, queue, schedule

ENQ = conf("enqueue", ["priority", "gang"], ["overcommit", "proportion"])


def pg(name: str, cpu: str, q: str = "default", created: str = "2026-01-01T00:00:00Z"):
    return [
        podgroup(name, 1, queue=q, min_resources={"cpu": cpu}, created=created),
        pod(f"{name}-0", name, cpu=cpu),
    ]


def phase(result, name: str) -> str:
    return result.pod_groups[f"default/{name}"]["phase"]


def test_job_without_min_resources_always_admitted() -> None:
    objs = [node("n1", cpu="1"), podgroup("g", 1), pod("g-0", "g", cpu="100")]
    assert phase(schedule(objs, ENQ), "g") == "Inqueue"


def test_queue_capability_rejects() -> None:
    objs = [node("n1", cpu="10"), queue("q", capability={"cpu": "2"}), *pg("g", "3", "q")]
    result = schedule(objs, ENQ)
    assert phase(result, "g") == "Pending"
    assert "quota insufficient" in result.pod_groups["default/g"]["message"]


def test_overcommit_factor_limits_admission() -> None:
    only_overcommit = conf("enqueue", ["priority", "gang"], ["overcommit"])
    objs = [node("n1", cpu="10"), *pg("a", "8"), *pg("b", "5", created="2026-01-02T00:00:00Z")]
    result = schedule(objs, only_overcommit)
    assert phase(result, "a") == "Inqueue"
    assert phase(result, "b") == "Pending"  # 8 + 5 > 10 * 1.2
    assert "overused" in result.pod_groups["default/b"]["message"]
    factor = conf(
        "enqueue",
        ["priority", "gang"],
        [{"name": "overcommit", "arguments": {"overcommit-factor": 1.5}}],
    )
    assert phase(schedule(objs, factor), "b") == "Inqueue"  # 13 <= 15


def test_proportion_bounds_admission_by_real_capability() -> None:
    objs = [node("n1", cpu="10"), *pg("a", "8"), *pg("b", "4", created="2026-01-02T00:00:00Z")]
    result = schedule(objs, ENQ)
    assert phase(result, "b") == "Pending"  # overcommit permits 12 <= 12, proportion rejects
    assert "queue default resource quota insufficient" in result.pod_groups["default/b"]["message"]


def test_closed_queue_rejects_jobs_with_min_resources() -> None:
    objs = [node("n1", cpu="10"), queue("q", state="Closed"), *pg("g", "1", "q")]
    result = schedule(objs, ENQ)
    assert phase(result, "g") == "Pending"
    assert "queue q is Closed" in result.pod_groups["default/g"]["message"]
