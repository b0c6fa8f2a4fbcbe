"""PodGroup and Pod admission rules, with Volcano's messages."""

from __future__ import annotations

import pytest

from lahar.volcano.admission import (
    AdmissionDenied,
    mutate_pod,
    mutate_podgroup,
    validate_pod,
    validate_podgroup,
)
from lahar.volcano.admission.podgroups import podgroup_message
from lahar.volcano.admission.pods import ResourceGroup, pod_message
from tests.volcano.helpers import lookup, queue


def pg(queue_name: str = "", **spec: object) -> dict:
    s: dict = dict(spec)
    if queue_name:
        s["queue"] = queue_name
    return {"metadata": {"name": "pg", "namespace": "team"}, "spec": s}


def test_podgroup_queue_defaults() -> None:
    assert mutate_podgroup(pg(), lookup())["spec"]["queue"] == "default"
    ns = {
        "metadata": {"name": "team", "annotations": {"scheduling.volcano.sh/queue-name": "team-q"}}
    }
    assert mutate_podgroup(pg(), lookup(namespaces=[ns]))["spec"]["queue"] == "team-q"
    assert mutate_podgroup(pg("default"), lookup(namespaces=[ns]))["spec"]["queue"] == "team-q"
    assert mutate_podgroup(pg("mine"), lookup(namespaces=[ns]))["spec"]["queue"] == "mine"


def test_podgroup_queue_must_exist_and_be_open() -> None:
    assert podgroup_message("CREATE", pg("q"), lookup()) == (
        'unable to find queue: queue.scheduling.volcano.sh "q" not found'
    )
    assert podgroup_message("CREATE", pg("q"), lookup(queue("q", "Closing"))) == (
        "can only submit PodGroup to queue with state `Open`, queue `q` status is `Closing`"
    )
    assert podgroup_message("CREATE", pg("q"), lookup(queue("q"))) == ""
    # Updates do not re-check the queue: a PodGroup stays editable once its queue closes.
    assert podgroup_message("UPDATE", pg("q"), lookup(queue("q", "Closed"))) == ""


def test_podgroup_network_topology() -> None:
    nt = {"mode": "hard", "highestTierAllowed": 2, "highestTierName": "rack"}
    assert podgroup_message("CREATE", pg("default", networkTopology=nt), lookup()) == (
        "networkTopology: must not specify 'highestTierAllowed' and 'highestTierName' at the same time"
    )
    both = pg(
        "q",
        subGroupPolicy=[{"name": "a", "networkTopology": nt}, {"name": "b", "networkTopology": nt}],
    )
    msg = podgroup_message("CREATE", both, lookup())
    assert msg.startswith(
        'unable to find queue: queue.scheduling.volcano.sh "q" not found; subGroupPolicy a'
    )
    assert "subGroupPolicy b" in msg
    with pytest.raises(AdmissionDenied) as info:
        validate_podgroup("UPDATE", pg("q", networkTopology=nt), lookup())
    assert info.value.webhook == "validatepodgroup.volcano.sh"


def pod(annotations: dict | None = None, scheduler: str = "volcano") -> dict:
    return {
        "metadata": {"name": "p", "namespace": "team", "annotations": annotations or {}},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "i"}]},
    }


def test_pods_of_other_schedulers_are_ignored() -> None:
    assert (
        pod_message(pod({"scheduling.k8s.io/group-name": "x"}, "default-scheduler"), lookup()) == ""
    )


def test_pod_podgroup_must_exist_and_its_queue_be_open() -> None:
    annotated = pod({"scheduling.k8s.io/group-name": "pg"})
    assert pod_message(annotated, lookup()) == (
        'failed to get PodGroup for pod <team/p>: podgroups.scheduling.volcano.sh "pg" not found'
    )
    group = pg("q")
    assert pod_message(annotated, lookup(queue("q", "Closed"), podgroups=[group])).strip() == (
        "failed :  can only submit job to queue with state `Open`, queue `q` status is `Closed`;;"
    )
    assert pod_message(annotated, lookup(queue("q"), podgroups=[group])) == ""


def test_pod_queue_annotation() -> None:
    p = pod({"scheduling.volcano.sh/queue-name": "q"})
    assert (
        pod_message(p, lookup()).strip()
        == 'unable to find job queue: queues.scheduling.volcano.sh "q" not found;'
    )
    assert pod_message(p, lookup(queue("q"))) == ""


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({"volcano.sh/jdb-min-available": "2"}, ""),
        ({"volcano.sh/jdb-max-unavailable": "50%"}, ""),
        (
            {"volcano.sh/jdb-min-available": "0"},
            'invalid value <"0"> for volcano.sh/jdb-min-available, it must be a positive integer',
        ),
        (
            {"volcano.sh/jdb-max-unavailable": "100%"},
            'invalid value <"100%"> for volcano.sh/jdb-max-unavailable, it must be a valid percentage which between 1% ~ 99%',
        ),
        (
            {"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"},
            "not allow configure multiple annotations <[volcano.sh/jdb-min-available volcano.sh/jdb-max-unavailable]> at same time",
        ),
    ],
)
def test_pod_jdb_annotations(annotations: dict, message: str) -> None:
    assert pod_message(pod(annotations), lookup()) == message


def test_validate_pod_only_on_create() -> None:
    bad = pod({"volcano.sh/jdb-min-available": "-3"})
    with pytest.raises(AdmissionDenied):
        validate_pod("CREATE", bad, lookup())
    validate_pod("UPDATE", bad, lookup())


def test_mutate_pod_applies_matching_resource_group() -> None:
    group = ResourceGroup(
        name="gpu",
        namespaces=["team"],
        node_selector={"pool": "gpu"},
        tolerations=[{"key": "gpu", "operator": "Exists"}],
        scheduler_name="volcano",
    )
    out = mutate_pod(pod(scheduler="default-scheduler"), [group])
    assert out["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert out["spec"]["schedulerName"] == "volcano"
    assert out["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    untouched = pod(scheduler="default-scheduler")
    untouched["metadata"]["namespace"] = "other"
    assert mutate_pod(untouched, [group]) == untouched
    assert mutate_pod(untouched) == untouched
