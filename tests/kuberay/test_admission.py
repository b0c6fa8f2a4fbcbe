"""The admission plugin: denies invalid RayClusters/RayJobs with a 422 naming fields."""

from __future__ import annotations

import pytest

from lahar.apiserver.admission import AdmissionChain, AdmissionRequest
from lahar.apiserver.errors import APIError
from lahar.apiserver.resources import ResourceType
from lahar.kuberay.admission import KubeRayAdmission
from tests.kuberay.helpers import minimal_cluster, minimal_job

CLUSTERS = ResourceType(
    "ray.io", "v1", "RayCluster", "rayclusters", "raycluster", True, builtin=False
)
JOBS = ResourceType("ray.io", "v1", "RayJob", "rayjobs", "rayjob", True, builtin=False)
PODS = ResourceType("", "v1", "Pod", "pods", "pod", True)


def _request(
    resource: ResourceType, obj: dict, op: str = "CREATE", old: dict | None = None
) -> AdmissionRequest:
    return AdmissionRequest(op, resource, "ns1", obj["metadata"]["name"], obj, old)


def test_valid_objects_are_admitted() -> None:
    chain = AdmissionChain([KubeRayAdmission()])
    assert chain.run(_request(CLUSTERS, minimal_cluster())) == []
    assert chain.run(_request(JOBS, minimal_job())) == []


def test_invalid_rayjob_is_denied_with_causes() -> None:
    job = minimal_job(ttlSecondsAfterFinished=5)
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["minReplicas"] = 7
    with pytest.raises(APIError) as info:
        KubeRayAdmission().validate(_request(JOBS, job))
    err = info.value
    assert err.code == 422 and err.kind == "RayJob" and err.group == "ray.io"
    assert {c.field for c in err.causes} == {
        "spec.ttlSecondsAfterFinished",
        "spec.rayClusterSpec.workerGroupSpecs[0].minReplicas",
    }
    assert 'RayJob.ray.io "job" is invalid' in err.message


def test_warning_for_replicas_outside_range() -> None:
    obj = minimal_cluster()
    obj["spec"]["workerGroupSpecs"][0]["replicas"] = 10
    request = _request(CLUSTERS, obj)
    KubeRayAdmission().validate(request)
    assert request.warnings and "replicas" in request.warnings[0]


def test_managed_by_is_immutable_and_metadata_only_updates_pass() -> None:
    old = minimal_cluster()
    new = minimal_cluster(managedBy="kueue.x-k8s.io/multikueue")
    with pytest.raises(APIError) as info:
        KubeRayAdmission().validate(_request(CLUSTERS, new, "UPDATE", old))
    assert [c.field for c in info.value.causes] == ["spec.managedBy"]
    bad = minimal_cluster()
    bad["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    relabelled = minimal_cluster()
    relabelled["spec"] = bad["spec"]
    relabelled["metadata"]["finalizers"] = []
    KubeRayAdmission().validate(_request(CLUSTERS, relabelled, "UPDATE", bad))


def test_other_resources_and_subresources_are_ignored() -> None:
    bad = minimal_cluster()
    bad["metadata"]["name"] = "X" * 80
    KubeRayAdmission().validate(_request(PODS, bad))
    request = _request(CLUSTERS, bad)
    request.subresource = "status"
    KubeRayAdmission().validate(request)
    KubeRayAdmission().mutate(_request(CLUSTERS, bad))
