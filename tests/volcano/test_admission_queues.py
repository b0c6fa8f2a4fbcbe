"""Queue admission: defaulting, quantities, state, hierarchy and deletion rules."""

from __future__ import annotations

import pytest

from lahar.volcano.admission import AdmissionDenied, mutate_queue, validate_queue
from lahar.volcano.admission.queues import queue_delete_message, queue_write_message
from tests.volcano.helpers import lookup, queue

H, W = "volcano.sh/hierarchy", "volcano.sh/hierarchy-weights"


def test_mutate_defaults_weight_and_reclaimable() -> None:
    out = mutate_queue(queue("q"))
    assert out["spec"] == {"weight": 1, "reclaimable": True}
    kept = mutate_queue(queue("q", weight=4, reclaimable=False))
    assert kept["spec"] == {"weight": 4, "reclaimable": False}


def test_mutate_prefixes_hierarchy_with_root() -> None:
    q = queue("q")
    q["metadata"]["annotations"] = {H: "eng/ml", W: "2/3"}
    assert mutate_queue(q)["metadata"]["annotations"] == {H: "root/eng/ml", W: "1/2/3"}
    q["metadata"]["annotations"] = {H: "root/eng", W: "1/2"}
    assert mutate_queue(q)["metadata"]["annotations"] == {H: "root/eng", W: "1/2"}


def write(q: dict, *others: dict, op: str = "CREATE", old: dict | None = None) -> str:
    return queue_write_message(op, q, old, lookup(queue("default"), queue("root"), *others))


def test_valid_queue() -> None:
    q = queue(
        "q",
        weight=1,
        capability={"cpu": "8"},
        deserved={"cpu": "4"},
        guarantee={"resource": {"cpu": "2"}},
    )
    assert write(q) == ""


def test_guarantee_needs_deserved() -> None:
    q = queue("q", guarantee={"resource": {"cpu": "2"}})
    assert write(q) == (
        'requestBody.spec.deserved.cpu: Invalid value: "<nil>": deserved[cpu] must be >= guarantee[cpu]=2'
    )


def test_guarantee_above_deserved() -> None:
    q = queue("q", deserved={"memory": "1Gi"}, guarantee={"resource": {"memory": "2Gi"}})
    assert write(q) == (
        'requestBody.spec.deserved.memory: Invalid value: "1Gi": deserved[memory]=1Gi must be >= guarantee[memory]=2Gi'
    )


def test_deserved_above_capability() -> None:
    q = queue("q", capability={"cpu": "2"}, deserved={"cpu": "2500m"})
    assert write(q) == (
        'requestBody.spec.deserved.cpu: Invalid value: "2500m": deserved[cpu]=2500m must be <= capability[cpu]=2'
    )


def test_negative_quantity_and_several_errors_are_bracketed() -> None:
    q = queue("q", capability={"cpu": "-1"}, deserved={"cpu": "1"})
    assert write(q) == (
        '[requestBody.spec.capability.cpu: Invalid value: "-1": must be greater than or equal to 0, '
        'requestBody.spec.deserved.cpu: Invalid value: "1": deserved[cpu]=1 must be <= capability[cpu]=-1]'
    )


def test_state_must_be_open_or_closed() -> None:
    assert write(queue("q", state="Closing")) == (
        'requestBody.spec.state: Invalid value: "Closing": queue state must be in [Open Closed]'
    )
    assert write(queue("q", state="Closed")) == ""


def test_hierarchy_annotations() -> None:
    q = queue("q")
    q["metadata"]["annotations"] = {H: "root/a", W: "1"}
    assert write(q) == (
        'requestBody.metadata.annotations: Invalid value: "root/a": '
        "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights"
    )
    q["metadata"]["annotations"] = {H: "root/a", W: "1/0"}
    assert (
        write(q)
        == 'requestBody.metadata.annotations: Invalid value: "1/0": 0 in the 1/0 must be larger than 0'
    )
    q["metadata"]["annotations"] = {H: "root/a", W: "1/x"}
    assert "x in the 1/x is invalid number" in write(q)
    other = queue("deep")
    other["metadata"]["annotations"] = {H: "root/a/b", W: "1/1/1"}
    q["metadata"]["annotations"] = {H: "root/a", W: "1/1"}
    assert write(q, other) == (
        'requestBody.metadata.annotations: Invalid value: "root/a": '
        "root/a is not allowed to be in the sub path of root/a/b of queue deep"
    )
    sibling = queue("ab")
    sibling["metadata"]["annotations"] = {H: "root/ab", W: "1/1"}
    assert write(q, sibling) == ""  # a prefix of the string, not of the path


def test_parent_rules() -> None:
    assert write(queue("q", parent="q")) == "queue q cannot use itself as parent"
    assert write(queue("q", parent="nope")) == (
        'failed to get parent queue nope of queue q: queue.scheduling.volcano.sh "nope" not found'
    )
    busy = queue("busy")
    busy["status"]["allocated"] = {"cpu": "2", "pods": "3"}
    assert write(queue("q", parent="busy"), busy) == (
        "queue busy cannot be the parent queue of queue q because it has allocated Pods: 3"
    )
    # Once the parent already has children, it is a parent queue: adding more is fine.
    assert write(queue("q", parent="busy"), busy, queue("kid", parent="busy")) == ""


def test_max_depth() -> None:
    chain = [queue("a"), queue("b", parent="a"), queue("c", parent="b"), queue("d", parent="c")]
    q = queue("e", parent="d")
    assert queue_write_message("CREATE", q, None, lookup(*chain)) == ""
    deeper = queue("f", parent="e")
    assert queue_write_message("CREATE", deeper, None, lookup(*chain, q)) == (
        "queue f exceeds the maximum allowed depth of 5"
    )


def test_child_capability_within_ancestors() -> None:
    parent = queue("p", capability={"cpu": "4", "memory": "8Gi"})
    child = queue("c", parent="p", capability={"cpu": "6"})
    assert write(child, parent) == "queue c capability[cpu]=6 exceeds its ancestor's capability=4"


def test_siblings_guarantee_and_deserved_sums() -> None:
    parent = queue("p", deserved={"cpu": "4"}, guarantee={"resource": {"cpu": "2"}})
    sib = queue("s", parent="p", deserved={"cpu": "3"}, guarantee={"resource": {"cpu": "1"}})
    ok = queue("c", parent="p", deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "1"}})
    assert write(ok, parent, sib) == ""
    greedy = queue("c", parent="p", deserved={"cpu": "2"}, guarantee={"resource": {"cpu": "1"}})
    assert write(greedy, parent, sib) == (
        "parent queue p validation failed: sum of children's deserved (cpu 5000.00, memory 0.00) "
        "exceeds parent's deserved limit (cpu 4000.00, memory 0.00)"
    )
    hoarder = queue("c", parent="p", deserved={"cpu": "2"}, guarantee={"resource": {"cpu": "2"}})
    parent["spec"]["deserved"] = {"cpu": "8"}
    assert write(hoarder, parent, sib).startswith(
        "parent queue p validation failed: sum of children's guarantee (cpu 3000.00, memory 0.00)"
    )


def test_parent_capability_below_descendants() -> None:
    parent = queue("p", capability={"cpu": "8"})
    child = queue("c", parent="p", capability={"cpu": "6"})
    shrunk = queue("p", capability={"cpu": "4"})
    assert write(shrunk, parent, child, op="UPDATE", old=parent) == (
        "queue p capability[cpu]=4 is smaller than its descendants' max capability=6"
    )


def test_update_without_resource_change_skips_hierarchy_checks() -> None:
    parent = queue("p", capability={"cpu": "4"})
    child = queue("c", parent="p", capability={"cpu": "6"})  # already inconsistent
    relabelled = queue("c", parent="p", capability={"cpu": "6"}, weight=3)
    assert write(relabelled, parent, child, op="UPDATE", old=child) == ""


def test_root_queue_resources_are_protected() -> None:
    root = queue("root", capability={"cpu": "100"})
    changed = queue("root", capability={"cpu": "50"})
    assert queue_write_message("UPDATE", changed, root, lookup(root)) == (
        "root queue's resource attributes (capability, deserved, guarantee) cannot be modified"
    )


@pytest.mark.parametrize("name", ["default", "root"])
def test_default_and_root_cannot_be_deleted(name: str) -> None:
    assert (
        queue_delete_message(name, lookup(queue("default"), queue("root")))
        == f"`{name}` queue can not be deleted"
    )


def test_delete_rules() -> None:
    busy = queue("busy")
    busy["status"]["allocated"] = {"pods": "2"}
    assert (
        queue_delete_message("busy", lookup(busy))
        == "queue busy cannot be deleted because it has allocated Pods: 2"
    )
    assert queue_delete_message(
        "p", lookup(queue("p"), queue("a", parent="p"), queue("b", parent="p"))
    ) == ("queue p can not be deleted because it has 2 child queues: a, b")
    assert (
        queue_delete_message("ghost", lookup()) == 'queue.scheduling.volcano.sh "ghost" not found'
    )
    pg = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"queue": "q"}}
    assert queue_delete_message("q", lookup(queue("q"), podgroups=[pg])) == (
        "only queue with state `Closed` can be deleted, queue `q` state is `Open`"
    )
    assert queue_delete_message("q", lookup(queue("q", "Closed"), podgroups=[pg])) == ""
    assert queue_delete_message("q", lookup(queue("q"))) == ""


def test_validate_queue_raises() -> None:
    with pytest.raises(AdmissionDenied) as info:
        validate_queue("DELETE", None, queue("default"), "default", lookup())
    assert info.value.full_message() == (
        'admission webhook "validatequeue.volcano.sh" denied the request: `default` queue can not be deleted'
    )
