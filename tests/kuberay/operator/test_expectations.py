"""Scale expectations: creates wait to be seen (or time out), deletes wait to be gone."""

from __future__ import annotations

from lahar.kube.cache import Cache
from lahar.kuberay.operator.expectations import ScaleExpectations


def _pod(name: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns"}}


def test_create_and_delete_records() -> None:
    now = [0.0]
    exp = ScaleExpectations(create_timeout=30, clock=lambda: now[0])
    pods = Cache()
    exp.expect_create("ns", "c", "wg", "p1")
    assert not exp.satisfied("ns", "c", "wg", pods)
    assert exp.satisfied("ns", "c", "other", pods)  # groups are independent
    pods.upsert(_pod("p1"))
    assert exp.satisfied("ns", "c", "wg", pods) and exp.pending("ns", "c") == 0
    exp.expect_delete("ns", "c", "wg", "p1")
    now[0] = 10_000  # deletes never time out
    assert not exp.satisfied("ns", "c", "wg", pods)
    pods.remove("ns/p1")
    assert exp.satisfied("ns", "c", "wg", pods)


def test_lost_create_times_out_and_forget_drops_all() -> None:
    now = [0.0]
    exp = ScaleExpectations(create_timeout=30, clock=lambda: now[0])
    pods = Cache()
    exp.expect_create("ns", "c", "", "head-x")
    now[0] = 29.9
    assert not exp.satisfied("ns", "c", "", pods)
    now[0] = 30
    assert exp.satisfied("ns", "c", "", pods)
    exp.expect_delete("ns", "c", "wg", "gone-never")
    pods.upsert(_pod("gone-never"))
    exp.forget("ns", "c")
    assert exp.satisfied("ns", "c", "wg", pods)
