"""The admission rules as plugins of the embedded server's admission chain."""

from __future__ import annotations

import pytest

from lahar.apiserver.admission import AdmissionChain, AdmissionRequest
from lahar.apiserver.errors import APIError
from lahar.apiserver.resources import ResourceType
from lahar.volcano.admission import volcano_admission_plugins
from tests.volcano.helpers import job, lookup, queue, task

JOBS = ResourceType("batch.volcano.sh", "v1alpha1", "Job", "jobs", "job", True, builtin=False)
QUEUES = ResourceType(
    "scheduling.volcano.sh", "v1beta1", "Queue", "queues", "queue", False, builtin=False
)
PODGROUPS = ResourceType(
    "scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", "podgroup", True, builtin=False
)
PODS = ResourceType("", "v1", "Pod", "pods", "pod", True)
BATCH_JOBS = ResourceType("batch", "v1", "Job", "jobs", "job", True)


def chain(*queues: dict) -> AdmissionChain:
    return AdmissionChain(list(volcano_admission_plugins(lookup(*queues))))


def test_job_create_is_defaulted_then_validated() -> None:
    obj = job("j", task("w", 2))
    request = AdmissionRequest("CREATE", JOBS, "ns", "j", obj)
    chain(queue("default")).run(request)
    assert obj["spec"]["queue"] == "default"
    assert obj["spec"]["minAvailable"] == 2


def test_denial_is_a_webhook_style_status() -> None:
    obj = job("j", task("w", 2), queue="closed")
    request = AdmissionRequest("CREATE", JOBS, "ns", "j", obj)
    with pytest.raises(APIError) as info:
        chain(queue("closed", "Closed")).run(request)
    status = info.value.to_status()
    assert status["code"] == 400
    assert status["message"] == (
        'admission webhook "validatejob.volcano.sh" denied the request: can only submit job to '
        "queue with state `Open`, queue `closed` status is `Closed`;"
    )


def test_status_subresource_and_other_groups_are_left_alone() -> None:
    obj = job("j", task("w", 2), queue="closed")
    chain(queue("closed", "Closed")).run(
        AdmissionRequest("UPDATE", JOBS, "ns", "j", obj, obj, subresource="status")
    )
    batch = {"metadata": {"name": "j"}, "spec": {}}
    chain().run(AdmissionRequest("CREATE", BATCH_JOBS, "ns", "j", batch))
    assert batch == {"metadata": {"name": "j"}, "spec": {}}


def test_queue_delete_through_the_chain() -> None:
    request = AdmissionRequest("DELETE", QUEUES, "", "default", None, queue("default"))
    with pytest.raises(APIError, match="`default` queue can not be deleted"):
        chain().run(request)


def test_queue_create_defaults() -> None:
    obj = queue("q")
    chain().run(AdmissionRequest("CREATE", QUEUES, "", "q", obj))
    assert obj["spec"] == {"weight": 1, "reclaimable": True}


def test_podgroup_and_pod() -> None:
    pg = {"metadata": {"name": "pg"}, "spec": {"minMember": 1}}
    chain().run(AdmissionRequest("CREATE", PODGROUPS, "ns", "pg", pg))
    assert pg["spec"]["queue"] == "default"
    pod = {
        "metadata": {"annotations": {"scheduling.k8s.io/group-name": "missing"}},
        "spec": {"schedulerName": "volcano"},
    }
    with pytest.raises(APIError) as info:
        chain().run(AdmissionRequest("CREATE", PODS, "ns", "p", pod))
    assert info.value.message == (
        'admission webhook "validatepod.volcano.sh" denied the request: failed to get PodGroup for '
        'pod <ns/p>: podgroups.scheduling.volcano.sh "missing" not found'
    )
