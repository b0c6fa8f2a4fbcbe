"""Building the session snapshot from Kubernetes objects."""

from __future__ import annotations

import pytest
import yaml

from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.snapshot import SnapshotError, build_cluster, load_documents
from tests.scheduler.builders import node, pod, podgroup, priority_class, queue

S = TaskStatus


def test_kind_list_and_multi_document() -> None:
    listing = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node("a"), node("b")]})
    multi = yaml.safe_dump_all([node("c"), None, podgroup("g")])
    objs = load_documents([("l.yaml", listing), ("m.yaml", multi)])
    assert [o["metadata"]["name"] for o in objs] == ["a", "b", "c", "g"]


def test_implicit_default_and_root_queues() -> None:
    cluster = build_cluster([node("n"), podgroup("g"), pod("g-0", "g")])
    assert cluster.queues["default"].implicit and cluster.queues["default"].reclaimable
    assert not cluster.queues["root"].reclaimable
    assert "default/g" in cluster.jobs


def test_podgroup_with_missing_queue_left_out() -> None:
    cluster = build_cluster([node("n"), podgroup("g", queue="nope"), pod("g-0", "g")])
    assert cluster.jobs == {}
    assert cluster.skipped_jobs == {"default/g": "queue nope does not exist"}


def test_task_defaults_and_statuses() -> None:
    objs = [
        node("n"),
        priority_class("high", 1000),
        podgroup("g", priority_class="high"),
        pod("g-0", "g"),
        pod("g-1", "g", node_name="n", phase="Pending"),
        pod("g-2", "g", node_name="n", deleting=True),
        pod("g-3", "g", priority_class="high", annotations={"volcano.sh/preemptable": "nah"}),
        pod("g-4", "g", annotations={"volcano.sh/task-priority": "7"}),
    ]
    cluster = build_cluster(objs)
    job = cluster.jobs["default/g"]
    tasks = {t.name: t for t in job.tasks.values()}
    assert job.priority == 1000
    assert tasks["g-0"].priority == 1 and tasks["g-0"].preemptable  # Volcano defaults
    assert tasks["g-1"].status == S.BOUND  # Pending with nodeName
    assert tasks["g-2"].status == S.RELEASING
    assert tasks["g-3"].priority == 1000 and not tasks["g-3"].preemptable
    assert tasks["g-4"].priority == 7
    assert tasks["g-0"].resreq[2] == 1  # pods: 1 always
    # node accounting: bound + releasing both use the node; releasing counted apart
    assert cluster.nodes.used[0][0] == 2000 and cluster.nodes.releasing[0][0] == 1000


def test_other_schedulers_pods_use_node_but_are_not_scheduled() -> None:
    objs = [
        node("n", cpu="4"),
        pod("sys", cpu="3", node_name="n", scheduler="default-scheduler"),
        pod("waiting", cpu="1", scheduler="default-scheduler"),
        pod("orphan", cpu="1"),
    ]
    cluster = build_cluster(objs)
    assert cluster.nodes.idle[0][0] == 1000
    assert cluster.jobs == {}
    assert "default/orphan" in cluster.skipped_pods
    assert "default/waiting" not in cluster.skipped_pods


def test_init_containers_and_overhead() -> None:
    p = pod("p", "g", cpu="1", memory=None)
    p["spec"]["initContainers"] = [
        {"name": "i", "resources": {"requests": {"cpu": "3"}}},
        {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"cpu": "500m"}}},
    ]
    p["spec"]["overhead"] = {"cpu": "100m"}
    cluster = build_cluster([node("n"), podgroup("g"), p])
    (task,) = cluster.jobs["default/g"].tasks.values()
    assert task.resreq[0] == 3000 + 100  # max(1 + 0.5 sidecar, 3) + overhead


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        (pod("bad", "g", cpu="two"), "Pod default/bad: spec.containers[0].resources.cpu"),
        (node("n2", cpu="-1"), "Node n2: status.allocatable.cpu"),
        (queue("q", capability={"memory": "1Qi"}), "Queue q: spec.capability.memory"),
        ({"kind": "PodGroup", "metadata": {"name": "x"}, "spec": {"minMember": "2"}}, "minMember"),
        ({"kind": "Node", "metadata": {}}, "Node without metadata.name"),
    ],
)
def test_bad_objects_are_named(obj: dict, fragment: str) -> None:
    with pytest.raises(SnapshotError) as info:
        build_cluster([node("n"), podgroup("g"), obj])
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [5]}},
        {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": "nope"}},
        {"kind": "Node", "metadata": {"name": "x"}, "spec": 7},
        {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"guarantee": 3}},
    ],
)
def test_malformed_objects_are_named_without_traceback(obj: dict) -> None:
    with pytest.raises(SnapshotError) as info:
        build_cluster([node("n"), obj])
    assert obj["metadata"]["name"] in str(info.value)
