"""The Volcano adapter (kuberay-semantics.md §5.2): sizing, fields, child metadata."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lahar.kuberay import volcano
from tests.kuberay.helpers import minimal_cluster, minimal_job


def _spec_example(gpu: bool = True, hosts: int = 1) -> dict[str, Any]:
    """The spec's worked example: head 256m/256Mi (limits 500m/512Mi), 2 workers of
    256m/256Mi (limits 500m/512Mi, optionally 1 GPU as a limit), replicas 2, 1..4."""
    res = {
        "requests": {"cpu": "256m", "memory": "256Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    worker_res = copy.deepcopy(res)
    if gpu:
        worker_res["limits"]["nvidia.com/gpu"] = "1"
    spec = minimal_cluster()["spec"]
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] = res
    group = spec["workerGroupSpecs"][0]
    group.update(replicas=2, minReplicas=1, maxReplicas=4, numOfHosts=hosts)
    group["template"]["spec"]["containers"][0]["resources"] = worker_res
    return spec


def test_worked_example_with_gpu() -> None:
    members, res = volcano.cluster_sizing(_spec_example())
    assert members == 3
    assert res.to_list() == {"cpu": "768m", "memory": "768Mi", "nvidia.com/gpu": "2"}


def test_worked_example_multi_host() -> None:
    members, res = volcano.cluster_sizing(_spec_example(hosts=2))
    assert members == 5
    assert res.to_list() == {"cpu": "1280m", "memory": "1280Mi", "nvidia.com/gpu": "4"}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("HTTPMode", {"cpu": "768m", "memory": "768Mi"}),
        ("InteractiveMode", {"cpu": "768m", "memory": "768Mi"}),
        ("K8sJobMode", {"cpu": "1268m", "memory": "968Mi"}),
        ("SidecarMode", {"cpu": "1268m", "memory": "968Mi"}),
    ],
)
def test_rayjob_worked_example(mode: str, expected: dict[str, str]) -> None:
    job = minimal_job(submissionMode=mode, rayClusterSpec=_spec_example(gpu=False))
    job["metadata"]["uid"] = "u1"
    pg = volcano.podgroup_for_rayjob(job)
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"] == expected
    assert pg["metadata"]["name"] == "ray-job-pg"


def test_user_submitter_template_resources_count() -> None:
    template = {"spec": {"containers": [{"name": "s", "resources": {"limits": {"cpu": "2"}}}]}}
    job = minimal_job(submitterPodTemplate=template)
    pg = volcano.podgroup_for_rayjob(job)
    assert pg["spec"]["minResources"] == {"cpu": "4", "memory": "3Gi"}


def test_quirk_raw_replicas_for_resources_clamped_for_members() -> None:
    spec = minimal_cluster()["spec"]
    spec["workerGroupSpecs"][0].update(replicas=9, minReplicas=0, maxReplicas=2)
    members, res = volcano.cluster_sizing(spec)
    assert members == 3  # clamped to 2
    assert res.to_list() == {"cpu": "10", "memory": "11Gi"}  # 1 + 9 workers' resources


def test_quirk_explicit_zero_hosts_and_suspended_groups() -> None:
    spec = minimal_cluster()["spec"]
    spec["workerGroupSpecs"][0].update(numOfHosts=0, replicas=3, maxReplicas=5)
    assert volcano.cluster_sizing(spec)[0] == 1
    spec["workerGroupSpecs"][0].update(numOfHosts=1, suspend=True)
    members, res = volcano.cluster_sizing(spec)
    assert members == 1 and res.to_list() == {"cpu": "1", "memory": "2Gi"}


def test_autoscaling_uses_min_replicas() -> None:
    spec = minimal_cluster(enableInTreeAutoscaling=True)["spec"]
    spec["workerGroupSpecs"][0].update(replicas=3, minReplicas=1, maxReplicas=5)
    members, res = volcano.cluster_sizing(spec)
    assert members == 2
    assert res.to_list() == {"cpu": "2", "memory": "3Gi"}


def test_podgroup_fields_from_labels_and_annotations() -> None:
    cluster = minimal_cluster()
    cluster["metadata"].update(
        uid="u",
        labels={
            "volcano.sh/queue-name": "q1",
            "ray.io/priority-class-name": "high",
            "volcano.sh/network-topology-mode": "hard",
            "volcano.sh/network-topology-highest-tier-allowed": "2",
        },
        annotations={"a": "b"},
    )
    pg = volcano.podgroup_for_cluster(cluster)
    assert pg["spec"]["queue"] == "q1"
    assert pg["spec"]["priorityClassName"] == "high"
    assert pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert pg["metadata"]["annotations"] == {"a": "b"}
    assert pg["metadata"]["ownerReferences"][0]["uid"] == "u"
    cluster["metadata"]["labels"]["volcano.sh/network-topology-highest-tier-allowed"] = "x"
    with pytest.raises(volcano.VolcanoError, match="highest-tier-allowed"):
        volcano.podgroup_for_cluster(cluster)


def test_cluster_selector_rayjob_is_refused() -> None:
    job = minimal_job(clusterSelector={"ray.io/cluster": "c"})
    del job["spec"]["rayClusterSpec"]
    with pytest.raises(volcano.VolcanoError, match="existing RayCluster"):
        volcano.podgroup_for_rayjob(job)


def test_completion_recomputes_instead_of_deleting() -> None:
    live = minimal_cluster()
    live["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    assert volcano.completion_sizing(live) == {
        "minMember": 3,
        "minResources": {"cpu": "3", "memory": "4Gi"},
    }
    live["spec"]["workerGroupSpecs"][0]["suspend"] = True  # DeleteWorkers
    assert volcano.completion_sizing(live) == {
        "minMember": 1,
        "minResources": {"cpu": "1", "memory": "2Gi"},
    }
    live["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert volcano.completion_sizing(live) == {"minMember": 0, "minResources": {}}
    assert volcano.completion_sizing(None) == {"minMember": 0, "minResources": {}}


def test_needs_update_is_quota_equality() -> None:
    existing = {"spec": {"minMember": 3, "minResources": {"cpu": "1000m", "memory": "1Gi"}}}
    assert not volcano.needs_update(
        existing, {"minMember": 3, "minResources": {"cpu": "1", "memory": "1024Mi"}}
    )
    assert volcano.needs_update(
        existing, {"minMember": 2, "minResources": {"cpu": "1", "memory": "1Gi"}}
    )
    assert volcano.needs_update({"spec": {"minMember": 3}}, {"minMember": 3, "minResources": {}})


def test_child_metadata() -> None:
    parent = {
        "metadata": {
            "name": "c",
            "labels": {"volcano.sh/queue-name": "q", "ray.io/priority-class-name": ""},
        }
    }
    pod: dict[str, Any] = {"kind": "Pod", "metadata": {}, "spec": {}}
    volcano.add_child_metadata(parent, pod, "g")
    assert pod["metadata"]["labels"] == {"volcano.sh/queue-name": "q"}
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "ray-c-pg",
        "volcano.sh/task-spec": "g",
    }
    assert pod["spec"]["schedulerName"] == "volcano"
