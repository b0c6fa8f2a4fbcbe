"""Volcano's admission through the embedded chain (``lahar.volcano.embedded``), with the
controllers keeping queue state: what is refused, and with which message."""

from __future__ import annotations

import pytest

from lahar.kube import rest
from lahar.volcano.controllers.common import PODGROUPS, PODS, QUEUES, VCJOBS
from lahar.volcano.controllers.queue import DESIRED_STATE_KEY
from lahar.volcano.embedded import StoreLookup
from tests.volcano.controllers.conftest import VC, eventually
from tests.volcano.controllers.test_job import vcjob
from tests.volcano.controllers.test_queue import queue


async def _refused(vc: VC, coro: object) -> str:
    with pytest.raises(rest.ApiError) as info:
        await coro  # type: ignore[misc]
    assert info.value.status.code == 400
    return info.value.status.message


async def _state_is(vc: VC, name: str, state: str) -> bool:
    return await vc.queue_state(name) == state


async def test_job_with_duplicate_tasks_is_refused(vc: VC) -> None:
    job = vcjob("twins")
    job["spec"]["tasks"].append(dict(job["spec"]["tasks"][0]))
    message = await _refused(vc, vc.create(VCJOBS, job))
    assert message.startswith('admission webhook "validatejob.volcano.sh" denied the request: ')
    assert "duplicated task name worker;" in message


async def test_job_in_a_missing_queue_is_refused(vc: VC) -> None:
    message = await _refused(vc, vc.create(VCJOBS, vcjob("lost", queue="nowhere")))
    assert message.startswith('admission webhook "validatejob.volcano.sh" denied the request: ')
    assert "nowhere" in message


async def test_invalid_queue_is_refused(vc: VC) -> None:
    bad = queue("greedy", deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "2"}})
    message = await _refused(vc, vc.create(QUEUES, bad, None))
    assert message.startswith('admission webhook "validatequeue.volcano.sh" denied the request: ')
    assert "deserved[cpu]=1 must be >= guarantee[cpu]=2" in message
    message = await _refused(vc, vc.delete_strict(QUEUES, "default"))
    assert message.endswith("`default` queue can not be deleted")


async def test_closed_queue_refuses_new_jobs_and_podgroups(vc: VC) -> None:
    await vc.create(QUEUES, queue("shut"), None)
    await eventually(lambda: _state_is(vc, "shut", "Open"))
    await vc.create(VCJOBS, vcjob("before", queue="shut"))

    async def has_podgroup() -> bool:
        return any(pg["spec"].get("queue") == "shut" for pg in await vc.list(PODGROUPS))

    await eventually(has_podgroup)
    await vc.patch(
        QUEUES, "shut", {"metadata": {"annotations": {DESIRED_STATE_KEY: "Closed"}}}, None
    )
    # the job's PodGroup keeps the queue Closing until the job is gone
    await eventually(lambda: _state_is(vc, "shut", "Closing"))
    message = await _refused(vc, vc.create(VCJOBS, vcjob("after", queue="shut")))
    assert message == (
        'admission webhook "validatejob.volcano.sh" denied the request: can only submit job to '
        "queue with state `Open`, queue `shut` status is `Closing`;"
    )
    await vc.delete(VCJOBS, "before")
    await eventually(lambda: _state_is(vc, "shut", "Closed"), timeout=15)
    pg = {"metadata": {"name": "pg"}, "spec": {"minMember": 1, "queue": "shut"}}
    message = await _refused(vc, vc.create(PODGROUPS, pg))
    assert "can only submit PodGroup to queue with state `Open`" in message


async def test_pod_pointing_at_a_missing_podgroup_is_refused(vc: VC) -> None:
    pod = {
        "metadata": {
            "name": "orphan",
            "annotations": {"scheduling.k8s.io/group-name": "missing"},
        },
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }
    message = await _refused(vc, vc.create(PODS, pod))
    assert "failed to get PodGroup for pod <default/orphan>" in message


async def test_store_lookup_reads_the_store(vc: VC) -> None:
    await vc.create(PODGROUPS, {"metadata": {"name": "pg1"}, "spec": {"minMember": 1}})
    lookup = StoreLookup(vc.server.state.store)
    assert lookup.get_queue("default")["metadata"]["name"] == "default"
    assert {q["metadata"]["name"] for q in lookup.list_queues()} >= {"default", "root"}
    assert [pg["metadata"]["name"] for pg in lookup.list_podgroups("default")] == ["pg1"]
    assert lookup.get_podgroup("default", "pg1") is not None
    assert lookup.get_namespace("default") is not None
    assert lookup.get_namespace("nope") is None
