"""Each validation rule: the field path it names and that the message names the field."""

from __future__ import annotations

from typing import Any

import pytest

from lahar.kuberay.jobvalidation import validate_rayjob
from lahar.kuberay.validation import cluster_warnings, validate_raycluster
from tests.kuberay.helpers import minimal_cluster, minimal_job


def fields(causes: list[Any]) -> list[str]:
    return [c.field for c in causes]


def test_valid_objects_pass() -> None:
    assert validate_raycluster(minimal_cluster()) == []
    assert validate_rayjob(minimal_job()) == []


@pytest.mark.parametrize(
    ("name", "ok"),
    [("a" * 53, True), ("a" * 54, False), ("1abc", False), ("Abc", False), ("abc-", False)],
)
def test_cluster_name(name: str, ok: bool) -> None:
    obj = minimal_cluster()
    obj["metadata"]["name"] = name
    causes = validate_raycluster(obj)
    assert (causes == []) is ok
    if not ok:
        assert set(fields(causes)) == {"metadata.name"}


def test_rayjob_name_limit_is_47() -> None:
    job = minimal_job()
    job["metadata"]["name"] = "j" * 47
    assert validate_rayjob(job) == []
    job["metadata"]["name"] = "j" * 48
    (cause,) = validate_rayjob(job)
    assert cause.field == "metadata.name" and "47" in cause.message


def _group(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["workerGroupSpecs"][0]


def test_min_greater_than_max() -> None:
    obj = minimal_cluster()
    _group(obj).update(minReplicas=5, maxReplicas=2, replicas=3)
    (cause,) = validate_raycluster(obj)
    assert cause.field == "spec.workerGroupSpecs[0].minReplicas"
    assert "minReplicas" in cause.message and "maxReplicas" in cause.message


@pytest.mark.parametrize("key", ["replicas", "minReplicas", "maxReplicas", "numOfHosts"])
def test_negative_counts(key: str) -> None:
    obj = minimal_cluster()
    _group(obj)[key] = -1
    assert f"spec.workerGroupSpecs[0].{key}" in fields(validate_raycluster(obj))


def test_missing_min_max_rejected_and_zero_hosts_accepted() -> None:
    obj = minimal_cluster()
    del _group(obj)["minReplicas"]
    assert fields(validate_raycluster(obj)) == ["spec.workerGroupSpecs[0].minReplicas"]
    obj = minimal_cluster()
    _group(obj)["numOfHosts"] = 0  # quirk 3: accepted
    assert validate_raycluster(obj) == []


def test_replicas_outside_range_is_a_warning_not_an_error() -> None:
    obj = minimal_cluster()
    _group(obj).update(replicas=9, maxReplicas=4)
    assert validate_raycluster(obj) == []
    (warning,) = cluster_warnings(obj["spec"])
    assert warning.startswith("spec.workerGroupSpecs[0].replicas")


def test_duplicate_group_names() -> None:
    obj = minimal_cluster()
    obj["spec"]["workerGroupSpecs"].append(dict(_group(obj)))
    (cause,) = validate_raycluster(obj)
    assert cause.field == "spec.workerGroupSpecs[1].groupName"
    assert cause.reason == "FieldValueDuplicate"


def test_containers_required() -> None:
    obj = minimal_cluster()
    obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    assert fields(validate_raycluster(obj)) == ["spec.headGroupSpec.template.spec.containers"]


def test_group_resources_conflict_and_labels_param() -> None:
    obj = minimal_cluster()
    head = obj["spec"]["headGroupSpec"]
    head["resources"] = {"cpu": "1"}
    head["rayStartParams"] = {"num-cpus": "1", "labels": "a=b"}
    assert sorted(fields(validate_raycluster(obj))) == [
        "spec.headGroupSpec.rayStartParams.labels",
        "spec.headGroupSpec.resources",
    ]


def test_idle_timeout_and_priority_need_autoscaler_v2() -> None:
    obj = minimal_cluster()
    _group(obj).update(idleTimeoutSeconds=30, priority=1)
    got = fields(validate_raycluster(obj))
    assert "spec.workerGroupSpecs[0].idleTimeoutSeconds" in got
    assert got.count("spec.workerGroupSpecs[0].priority") == 2  # needs v2 and Ray >= 2.56
    obj["spec"].update(
        enableInTreeAutoscaling=True, autoscalerOptions={"version": "v2"}, rayVersion="2.56.0"
    )
    assert validate_raycluster(obj) == []


def test_autoscaler_v2_restart_policy_and_env_conflict() -> None:
    obj = minimal_cluster(enableInTreeAutoscaling=True, autoscalerOptions={"version": "v2"})
    obj["spec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = "Always"
    head = obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [{"name": "RAY_enable_autoscaler_v2", "value": "1"}]
    assert sorted(fields(validate_raycluster(obj))) == [
        "spec.autoscalerOptions.version",
        "spec.headGroupSpec.template.spec.restartPolicy",
    ]


def test_suspended_group_with_autoscaling() -> None:
    obj = minimal_cluster(enableInTreeAutoscaling=True)
    _group(obj)["suspend"] = True
    assert fields(validate_raycluster(obj)) == ["spec.workerGroupSpecs[0].suspend"]


def test_managed_by() -> None:
    obj = minimal_cluster(managedBy="someone-else")
    (cause,) = validate_raycluster(obj)
    assert cause.field == "spec.managedBy" and cause.reason == "FieldValueNotSupported"
    assert validate_raycluster(minimal_cluster(managedBy="kueue.x-k8s.io/multikueue")) == []


def test_gcs_ft_options_with_legacy_annotations() -> None:
    obj = minimal_cluster(gcsFaultToleranceOptions={"redisAddress": "r:6379"})
    obj["metadata"]["annotations"] = {
        "ray.io/ft-enabled": "true",
        "ray.io/external-storage-namespace": "x",
    }
    assert sorted(fields(validate_raycluster(obj))) == [
        "metadata.annotations[ray.io/external-storage-namespace]",
        "metadata.annotations[ray.io/ft-enabled]",
    ]


def test_upgrade_strategy_on_rayjob_clusters() -> None:
    obj = minimal_cluster(upgradeStrategy={"type": "Recreate"})
    assert validate_raycluster(obj) == []
    obj["metadata"]["labels"] = {"ray.io/originated-from-crd": "RayJob"}
    assert fields(validate_raycluster(obj)) == ["spec.upgradeStrategy"]
    job = minimal_job()
    job["spec"]["rayClusterSpec"]["upgradeStrategy"] = {"type": "Recreate"}
    assert fields(validate_rayjob(job)) == ["spec.rayClusterSpec.upgradeStrategy"]


def test_rayjob_cluster_spec_paths_are_nested() -> None:
    job = minimal_job()
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    (cause,) = validate_rayjob(job)
    assert cause.field == "spec.rayClusterSpec.workerGroupSpecs[0].minReplicas"


def test_cluster_spec_or_selector_required_and_empty_selector_name() -> None:
    job = minimal_job()
    del job["spec"]["rayClusterSpec"]
    assert fields(validate_rayjob(job)) == ["spec.rayClusterSpec"]
    job["spec"]["clusterSelector"] = {"ray.io/cluster": ""}
    assert fields(validate_rayjob(job)) == ["spec.clusterSelector[ray.io/cluster]"]


def test_ttl_rules() -> None:
    job = minimal_job(ttlSecondsAfterFinished=10)
    (cause,) = validate_rayjob(job)
    assert (
        cause.field == "spec.ttlSecondsAfterFinished"
        and "shutdownAfterJobFinishes" in cause.message
    )
    assert (
        validate_rayjob(minimal_job(ttlSecondsAfterFinished=10, shutdownAfterJobFinishes=True))
        == []
    )
    assert fields(validate_rayjob(minimal_job(ttlSecondsAfterFinished=-1))) == [
        "spec.ttlSecondsAfterFinished"
    ]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            {"submissionMode": "SidecarMode", "clusterSelector": {"ray.io/cluster": "c"}},
            "spec.clusterSelector",
        ),
        (
            {
                "suspend": True,
                "shutdownAfterJobFinishes": True,
                "clusterSelector": {"ray.io/cluster": "c"},
            },
            "spec.suspend",
        ),
        ({"backoffLimit": 1, "clusterSelector": {"ray.io/cluster": "c"}}, "spec.backoffLimit"),
        (
            {
                "clusterSelector": {"ray.io/cluster": "c"},
                "deletionStrategy": {
                    "deletionRules": [
                        {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED"}}
                    ]
                },
            },
            "spec.deletionStrategy.deletionRules[0].policy",
        ),
    ],
)
def test_cluster_selector_conflicts(spec: dict[str, Any], field: str) -> None:
    assert field in fields(validate_rayjob(minimal_job(**spec)))


def test_submission_mode_rules() -> None:
    assert fields(validate_rayjob(minimal_job(submissionMode="Bogus"))) == ["spec.submissionMode"]
    sidecar = minimal_job(
        submissionMode="SidecarMode",
        submitterConfig={"backoffLimit": 1},
        submitterPodTemplate={"spec": {}},
    )
    sidecar["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = (
        "Always"
    )
    assert sorted(fields(validate_rayjob(sidecar))) == [
        "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy",
        "spec.submitterConfig",
        "spec.submitterPodTemplate",
    ]
    assert fields(
        validate_rayjob(minimal_job(submissionMode="InteractiveMode", backoffLimit=2))
    ) == ["spec.backoffLimit"]


def test_suspend_needs_shutdown_and_negative_backoff_and_deadlines() -> None:
    assert fields(validate_rayjob(minimal_job(suspend=True))) == ["spec.suspend"]
    assert fields(validate_rayjob(minimal_job(backoffLimit=-1))) == ["spec.backoffLimit"]
    assert fields(validate_rayjob(minimal_job(activeDeadlineSeconds=0))) == [
        "spec.activeDeadlineSeconds"
    ]
    assert fields(validate_rayjob(minimal_job(preRunningDeadlineSeconds=0))) == [
        "spec.preRunningDeadlineSeconds"
    ]


def test_runtime_env_and_metadata_version() -> None:
    assert fields(validate_rayjob(minimal_job(runtimeEnvYAML="a: [b"))) == ["spec.runtimeEnvYAML"]
    job = minimal_job(metadata={"k": "v"})
    job["spec"]["rayClusterSpec"]["rayVersion"] = "2.5.1"
    assert fields(validate_rayjob(job)) == ["spec.metadata"]


def _rule(policy: str, ttl: int = 0, **cond: Any) -> dict[str, Any]:
    return {"policy": policy, "condition": {**cond, "ttlSeconds": ttl}}


def test_deletion_rules() -> None:
    ok = {
        "deletionRules": [
            _rule("DeleteWorkers", 10, jobStatus="FAILED"),
            _rule("DeleteCluster", 20, jobStatus="FAILED"),
        ]
    }
    assert validate_rayjob(minimal_job(deletionStrategy=ok)) == []
    bad_order = {
        "deletionRules": [
            _rule("DeleteCluster", 30, jobStatus="FAILED"),
            _rule("DeleteSelf", 10, jobStatus="FAILED"),
        ]
    }
    assert fields(validate_rayjob(minimal_job(deletionStrategy=bad_order))) == [
        "spec.deletionStrategy.deletionRules[1].condition.ttlSeconds"
    ]
    dup = {
        "deletionRules": [
            _rule("DeleteSelf", jobStatus="FAILED"),
            _rule("DeleteSelf", 5, jobStatus="FAILED"),
        ]
    }
    assert fields(validate_rayjob(minimal_job(deletionStrategy=dup))) == [
        "spec.deletionStrategy.deletionRules[1]"
    ]
    both = {
        "deletionRules": [_rule("DeleteSelf", jobStatus="FAILED", jobDeploymentStatus="Failed")]
    }
    assert fields(validate_rayjob(minimal_job(deletionStrategy=both))) == [
        "spec.deletionStrategy.deletionRules[0].condition"
    ]
    neither = {"deletionRules": [_rule("DeleteSelf")]}
    assert fields(validate_rayjob(minimal_job(deletionStrategy=neither))) == [
        "spec.deletionStrategy.deletionRules[0].condition"
    ]
    wrong = {"deletionRules": [_rule("DeleteSelf", jobDeploymentStatus="Complete")]}
    assert fields(validate_rayjob(minimal_job(deletionStrategy=wrong))) == [
        "spec.deletionStrategy.deletionRules[0].condition.jobDeploymentStatus"
    ]
    negative = {"deletionRules": [_rule("DeleteSelf", -1, jobStatus="FAILED")]}
    assert fields(validate_rayjob(minimal_job(deletionStrategy=negative))) == [
        "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds"
    ]
    with_shutdown = minimal_job(deletionStrategy=ok, shutdownAfterJobFinishes=True)
    assert fields(validate_rayjob(with_shutdown)) == ["spec.deletionStrategy.deletionRules"]
    mixed = {**ok, "onSuccess": {"policy": "DeleteCluster"}}
    assert fields(validate_rayjob(minimal_job(deletionStrategy=mixed))) == [
        "spec.deletionStrategy.deletionRules"
    ]
    workers = minimal_job(
        deletionStrategy={"deletionRules": [_rule("DeleteWorkers", jobStatus="FAILED")]}
    )
    workers["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    assert fields(validate_rayjob(workers)) == ["spec.deletionStrategy.deletionRules[0].policy"]


def test_legacy_deletion_policy() -> None:
    missing = {"onSuccess": {"policy": "DeleteCluster"}}
    assert fields(validate_rayjob(minimal_job(deletionStrategy=missing))) == [
        "spec.deletionStrategy.onFailure.policy"
    ]
    none_with_shutdown = {
        "onSuccess": {"policy": "DeleteNone"},
        "onFailure": {"policy": "DeleteCluster"},
    }
    job = minimal_job(deletionStrategy=none_with_shutdown, shutdownAfterJobFinishes=True)
    assert fields(validate_rayjob(job)) == ["spec.deletionStrategy.onSuccess.policy"]


def test_messages_name_their_field() -> None:
    job = minimal_job(ttlSecondsAfterFinished=-1, backoffLimit=-2)
    for cause in validate_rayjob(job):
        leaf = cause.field.rsplit(".", 1)[-1]
        assert leaf in cause.message, cause
