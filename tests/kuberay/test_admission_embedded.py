"""The admission plugin inside the embedded API server's write path (CRD schema
defaults first, then the plugin), with every sample and one invalid object."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lahar.apiserver.admission import AdmissionChain
from lahar.apiserver.errors import APIError
from lahar.apiserver.objects import WriteOptions
from lahar.apiserver.state import ServerState
from lahar.embedded import install_crds
from lahar.kuberay.admission import KubeRayAdmission
from tests.kuberay.helpers import SAMPLES, minimal_job, sample


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerState]:
    """One server for the module (installing the CRDs is the slow part), closed after."""
    path: Path = tmp_path_factory.mktemp("apiserver")
    state = ServerState.open(path, token=None, admission=AdmissionChain([KubeRayAdmission()]))
    try:
        install_crds(state)
        yield state
    finally:
        state.hub.close()
        state.store.close()


def _namespace(state: ServerState, name: str) -> str:
    rt = state.registry.lookup("", "v1", "namespaces")
    assert rt is not None
    state.objects.create(rt, "", {"metadata": {"name": name}}, WriteOptions())
    return name


def _create(state: ServerState, obj: dict, namespace: str) -> dict:
    plural = {"RayCluster": "rayclusters", "RayJob": "rayjobs"}[obj["kind"]]
    rt = state.registry.lookup("ray.io", "v1", plural)
    assert rt is not None
    obj["metadata"]["namespace"] = namespace
    return state.objects.create(rt, namespace, obj, WriteOptions()).object


@pytest.mark.parametrize(
    ("index", "name"), list(enumerate(sorted(p.name for p in SAMPLES.glob("*.yaml"))))
)
def test_every_sample_is_admitted(state: ServerState, index: int, name: str) -> None:
    namespace = _namespace(state, f"sample-{index}")
    obj = sample(name)
    if "generateName" in obj["metadata"] and "name" not in obj["metadata"]:
        obj["metadata"]["name"] = obj["metadata"]["generateName"] + "x"
    stored = _create(state, obj, namespace)
    assert stored["metadata"]["uid"]


def test_invalid_rayjob_gets_a_422_naming_fields(state: ServerState) -> None:
    job = minimal_job(ttlSecondsAfterFinished=30)
    with pytest.raises(APIError) as info:
        _create(state, job, _namespace(state, "invalid"))
    assert info.value.code == 422
    assert [c.field for c in info.value.causes] == ["spec.ttlSecondsAfterFinished"]
