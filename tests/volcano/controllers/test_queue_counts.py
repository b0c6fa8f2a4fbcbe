"""The queue controller counts PodGroups per phase by an index: the counts always equal
a plain count over the queue's PodGroups, through adds, phase changes, queue moves and
deletes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lahar.kube.cache import Cache
from lahar.volcano.controllers.queue import (
    BY_QUEUE,
    BY_QUEUE_PHASE,
    COUNTED_PHASES,
    count_podgroups,
    podgroup_queue,
    podgroup_queue_phase,
)

QUEUES = ("default", "q1", None)
PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed", None)


def pg(name: str, queue: str | None, phase: str | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns"}, "spec": {}}
    if queue:
        obj["spec"]["queue"] = queue
    if phase:
        obj["status"] = {"phase": phase}
    return obj


_change = st.tuples(
    st.sampled_from(["upsert", "delete"]),
    st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from(QUEUES),
    st.sampled_from(PHASES),
)


@given(changes=st.lists(_change, max_size=30))
def test_index_counts_equal_a_plain_count(changes: list[tuple[str, str, Any, Any]]) -> None:
    cache = Cache({BY_QUEUE: podgroup_queue, BY_QUEUE_PHASE: podgroup_queue_phase})
    for op, name, queue, phase in changes:
        if op == "upsert":
            cache.upsert(pg(name, queue, phase))
        else:
            cache.remove(f"ns/{name}")
        for q in ("default", "q1"):
            by_index = {p: cache.index_count(BY_QUEUE_PHASE, f"{q}/{p}") for p in COUNTED_PHASES}
            assert by_index == count_podgroups(cache.by_index(BY_QUEUE, q))
            assert cache.index_count(BY_QUEUE, q) == len(cache.by_index(BY_QUEUE, q))
