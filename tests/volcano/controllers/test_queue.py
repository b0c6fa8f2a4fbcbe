"""The queue controller: default queues, the Open/Closing/Closed machine, counts."""

from __future__ import annotations

import asyncio

import pytest

from lahar.volcano import constants as c
from lahar.volcano.controllers.common import PODGROUPS, QUEUES
from lahar.volcano.controllers.queue import (
    CLOSED_BY_PARENT_KEY,
    DESIRED_STATE_KEY,
    next_state,
)
from tests.volcano.controllers.conftest import VC, eventually

Obj = dict


def queue(name: str, **spec: object) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": dict(spec),
    }


def podgroup(name: str, queue_name: str) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": 1, "queue": queue_name},
    }


@pytest.mark.parametrize(
    ("current", "action", "has_pgs", "expected"),
    [
        ("", c.SYNC_QUEUE, False, "Open"),
        ("Open", c.CLOSE_QUEUE, True, "Closing"),
        ("Open", c.CLOSE_QUEUE, False, "Closed"),
        ("Unknown", c.CLOSE_QUEUE, False, "Closed"),
        ("Closed", c.CLOSE_QUEUE, True, "Closed"),
        ("Closing", c.CLOSE_QUEUE, True, "Closing"),
        ("Closing", c.SYNC_QUEUE, False, "Closed"),
        ("Closed", c.SYNC_QUEUE, False, "Closed"),
        ("Closed", c.OPEN_QUEUE, True, "Open"),
        ("Closing", c.OPEN_QUEUE, True, "Open"),
    ],
)
def test_state_machine(current: str, action: str, has_pgs: bool, expected: str) -> None:
    assert next_state(current, action, has_pgs) == expected


def test_unknown_state_is_an_error() -> None:
    with pytest.raises(ValueError):
        next_state("Sleeping", c.SYNC_QUEUE, False)


async def test_default_and_root_queues_are_created_open(vc: VC) -> None:
    default = await vc.get(QUEUES, "default", None)
    assert default["spec"]["reclaimable"] is True
    assert default["spec"]["weight"] == 1
    await eventually(lambda: _state_is(vc, "root", "Open"))
    root = await vc.get(QUEUES, "root", None)
    assert root["spec"]["reclaimable"] is False
    await eventually(lambda: _parent_is(vc, "default", "root"))


async def _parent_is(vc: VC, name: str, parent: str) -> bool:
    q = await vc.get(QUEUES, name, None)
    return (q or {}).get("spec", {}).get("parent") == parent


async def _state_is(vc: VC, name: str, state: str) -> bool:
    return await vc.queue_state(name) == state


async def _status(vc: VC, name: str) -> Obj:
    return ((await vc.get(QUEUES, name, None)) or {}).get("status") or {}


async def test_close_with_podgroups_goes_through_closing(vc: VC) -> None:
    await vc.create(QUEUES, queue("q"), None)
    await eventually(lambda: _state_is(vc, "q", "Open"))
    await vc.create(PODGROUPS, podgroup("a", "q"))
    await vc.create(PODGROUPS, podgroup("b", "q"))
    await vc.set_podgroup_phase("b", "Running")

    async def counted() -> bool:
        s = await _status(vc, "q")
        return s.get("pending") == 1 and s.get("running") == 1 and s.get("inqueue") == 0

    await eventually(counted)
    # the scheduler's allocated survives our status writes
    await vc.patch(QUEUES, "q", {"status": {"allocated": {"cpu": "1"}}}, None, "status")

    await vc.patch(QUEUES, "q", {"metadata": {"annotations": {DESIRED_STATE_KEY: "Closed"}}}, None)
    await eventually(lambda: _state_is(vc, "q", "Closing"))
    await vc.delete(PODGROUPS, "a")
    await vc.delete(PODGROUPS, "b")
    await eventually(lambda: _state_is(vc, "q", "Closed"))
    status = await _status(vc, "q")
    assert status["allocated"] == {"cpu": "1"}
    assert (status["pending"], status["running"]) == (0, 0)

    await vc.patch(QUEUES, "q", {"metadata": {"annotations": {DESIRED_STATE_KEY: "Open"}}}, None)
    await eventually(lambda: _state_is(vc, "q", "Open"))


async def test_empty_queue_closes_at_once_and_a_direct_status_write_sticks(vc: VC) -> None:
    await vc.create(QUEUES, queue("e"), None)
    await eventually(lambda: _state_is(vc, "e", "Open"))
    await vc.patch(QUEUES, "e", {"status": {"state": "Closed"}}, None, "status")
    await eventually(lambda: _state_is(vc, "e", "Closed"))
    await vc.patch(QUEUES, "e", {"status": {"state": "Open"}}, None, "status")
    await eventually(lambda: _state_is(vc, "e", "Open"))


async def test_closing_a_parent_closes_its_children(vc: VC) -> None:
    await vc.create(QUEUES, queue("parent"), None)
    await eventually(lambda: _state_is(vc, "parent", "Open"))
    await vc.create(QUEUES, queue("child", parent="parent"), None)
    await eventually(lambda: _state_is(vc, "child", "Open"))
    await vc.patch(
        QUEUES, "parent", {"metadata": {"annotations": {DESIRED_STATE_KEY: "Closed"}}}, None
    )
    await eventually(lambda: _state_is(vc, "child", "Closed"))
    child = await vc.get(QUEUES, "child", None)
    assert child["metadata"]["annotations"][CLOSED_BY_PARENT_KEY] == "true"
    await vc.patch(
        QUEUES, "parent", {"metadata": {"annotations": {DESIRED_STATE_KEY: "Open"}}}, None
    )
    await eventually(lambda: _state_is(vc, "child", "Open"))

    async def unmarked() -> bool:
        q = await vc.get(QUEUES, "child", None)
        return CLOSED_BY_PARENT_KEY not in (q["metadata"].get("annotations") or {})

    await eventually(unmarked)


async def test_count_writes_are_coalesced_and_converge(vc: VC) -> None:
    await vc.create(QUEUES, queue("busy"), None)
    await eventually(lambda: _state_is(vc, "busy", "Open"))
    for i in range(12):
        await vc.create(PODGROUPS, podgroup(f"c{i}", "busy"))
    for i in range(0, 12, 2):
        await vc.set_podgroup_phase(f"c{i}", "Running")

    async def latest() -> bool:
        s = await _status(vc, "busy")
        return s.get("pending") == 6 and s.get("running") == 6

    await eventually(latest)
    await asyncio.sleep(0.7)  # a coalesced write still due would land by now
    after = await vc.get(QUEUES, "busy", None) or {}
    assert (after["status"]["pending"], after["status"]["running"]) == (6, 6)
    await vc.set_podgroup_phase("c1", "Running")  # a lone change after a quiet spell
    await eventually(lambda: _running_is(vc, "busy", 7), timeout=2.0)


async def _running_is(vc: VC, name: str, running: int) -> bool:
    return (await _status(vc, name)).get("running") == running
