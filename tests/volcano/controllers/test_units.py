"""Pieces of the controllers: expectations, merge patches, the embedded entry point."""

from __future__ import annotations

import asyncio
import contextlib

from lahar.kube.factory import InformerFactory
from lahar.volcano.controllers import run_volcano_controllers
from lahar.volcano.controllers.common import QUEUES, merge_diff
from lahar.volcano.controllers.expectations import Expectations
from tests.volcano.controllers.conftest import VC, eventually


def test_expectations_wait_for_adds_and_deletes() -> None:
    now = [0.0]
    exp = Expectations(ttl=10, clock=lambda: now[0])
    assert exp.satisfied("job")
    exp.expect("job", adds=["p0", "p1"], deletes=["uid-old"])
    assert not exp.satisfied("job")
    exp.observed_add("job", "p0")
    exp.observed_delete("job", "uid-old")
    assert not exp.satisfied("job")
    exp.lower("job", adds=["p1"])  # that create failed
    assert exp.satisfied("job")


def test_expectations_expire() -> None:
    now = [0.0]
    exp = Expectations(ttl=10, clock=lambda: now[0])
    exp.expect("job", adds=["p0"])
    now[0] = 9.9
    assert not exp.satisfied("job")
    now[0] = 10.0
    assert exp.satisfied("job")
    assert exp.pending("job") == (set(), set())


def test_merge_diff() -> None:
    old = {"minMember": 2, "minTaskMember": {"a": 1, "b": 1}, "minResources": {"cpu": "2"}}
    new = {"minMember": 3, "minTaskMember": {"a": 2}, "minResources": {"cpu": "2"}}
    assert merge_diff(old, new) == {"minMember": 3, "minTaskMember": {"a": 2, "b": None}}
    assert merge_diff(old, old) == {}
    assert merge_diff(None, {"x": 1}) == {"x": 1}


def test_merge_diff_without_removals() -> None:
    live = {"clusterIP": "None", "type": "ClusterIP", "selector": {"a": "1"}}
    desired = {"clusterIP": "None", "selector": {"a": "2"}}
    assert merge_diff(live, desired, remove=False) == {"selector": {"a": "2"}}


async def test_run_with_a_shared_informer_factory(bare: VC) -> None:
    """The embedded form: one factory shared with other components of the process."""
    factory = InformerFactory(bare.client)
    task = asyncio.create_task(run_volcano_controllers(bare.client, informers=factory))
    try:
        await eventually(lambda: _open(bare))
        assert factory.cache(QUEUES).get("default") is not None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await factory.stop()


async def _open(vc: VC) -> bool:
    return await vc.queue_state("default") == "Open"
