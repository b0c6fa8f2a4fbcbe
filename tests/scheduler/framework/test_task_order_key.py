"""The task sort key pops tasks in exactly the order of the comparison heap."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.actions.common import PriorityQueue
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.conf import default_conf
from lahar.scheduler.framework.session import open_session
from lahar.scheduler.snapshot import build_cluster
from tests.scheduler.builders import conf, node, pod, podgroup

NAMES = st.sampled_from(["w-0", "w-1", "job-worker", "job-x", "a-b"])


@st.composite
def task_sets(draw: st.DrawFn) -> list[dict]:
    n = draw(st.integers(1, 12))
    mode = draw(st.sampled_from(["ordinal", "none", "mixed"]))
    objs = [node("n0"), podgroup("g", 1)]
    for i in range(n):
        ordinal = mode == "ordinal" or (mode == "mixed" and draw(st.booleans()))
        suffix = draw(st.sampled_from([i, i % 3, 7]))
        p = pod(
            f"{draw(NAMES)}-{suffix}" if ordinal else f"{draw(NAMES)}x{i}",
            "g",
            priority=draw(st.integers(0, 3)),
            created=f"2026-01-01T00:00:0{draw(st.integers(0, 3))}Z",
        )
        objs.append(p)
    return objs


def _orders(objs: list[dict], configuration: object) -> tuple[list[str], list[str], bool]:
    cluster = build_cluster(objs)
    ssn = open_session(cluster, configuration)  # type: ignore[arg-type]
    tasks: list[TaskInfo] = sorted(ssn.jobs["default/g"].tasks.values(), key=lambda t: t.uid)
    key = ssn.task_sort_key(tasks)
    plain = PriorityQueue(ssn.compare_tasks, tasks)
    keyed = PriorityQueue(ssn.compare_tasks, tasks, key)
    a = [plain.pop().name for _ in range(len(tasks))]
    b = [keyed.pop().name for _ in range(len(tasks))]
    return a, b, key is not None


@given(task_sets())
def test_keyed_heap_pops_like_the_comparison(objs: list[dict]) -> None:
    plain, keyed, _ = _orders(objs, default_conf())
    assert plain == keyed


def test_no_key_when_ordinals_are_mixed_or_an_order_has_no_key() -> None:
    objs = [node("n0"), podgroup("g", 1), pod("w-a-1", "g"), pod("solo", "g")]
    assert _orders(objs, default_conf())[2] is False
    objs = [node("n0"), podgroup("g", 1), pod("w-a-1", "g"), pod("w-a-2", "g")]
    assert _orders(objs, default_conf())[2] is True
    without_priority = conf("allocate", ["gang"])
    assert _orders(objs, without_priority)[2] is True  # no task-order callback at all
