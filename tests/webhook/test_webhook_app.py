"""The assembled admission app, the cache-backed Lookup and the CLI's argument checks, in-process.

The process test (``test_webhook_process.py``) proves the whole path over HTTPS; these
cover what is awkward to reach that way: readiness before the caches sync, KubeRay's
update rules (metadata-only writes pass, ``managedBy`` is immutable), the PodGroup index
of the Lookup, the generated certificate's names and the usage errors.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from starlette.testclient import TestClient

from lahar.admission_webhook import RAYCLUSTER, create_app, kuberay_review, served_paths
from lahar.cli.main import main
from lahar.cli.webhook import SERVICE_HOST, self_signed
from lahar.kube import client as kclient
from lahar.kube.factory import InformerFactory
from lahar.volcano.cachelookup import CacheLookup
from lahar.volcano.lookup import MemoryLookup
from tests.kuberay.helpers import minimal_cluster
from tests.volcano.helpers import queue

Obj = dict[str, Any]


def review(path: str, request: Obj) -> Obj:
    app = create_app(MemoryLookup(queues=[queue("default")]))
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return TestClient(app).post(path, json=body).json()["response"]  # type: ignore[no-any-return]


def test_served_paths_are_volcanos_and_kuberays() -> None:
    paths = served_paths()
    assert "/jobs/validate" in paths and "/pods/mutate" in paths
    assert "/rayclusters/validate" in paths and "/rayjobs/validate" in paths


def test_readyz_follows_the_ready_check() -> None:
    state = {"synced": False}
    app = create_app(MemoryLookup(), ready=lambda: state["synced"])
    client = TestClient(app)
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 500
    state["synced"] = True
    assert client.get("/readyz").text == "ok"


def test_non_json_body_is_a_bad_request() -> None:
    client = TestClient(create_app(MemoryLookup()))
    assert client.post("/rayjobs/validate", content=b"{").status_code == 400
    assert client.post("/rayjobs/validate", json={"kind": "AdmissionReview"}).status_code == 400


def test_metadata_only_update_of_an_invalid_cluster_is_allowed() -> None:
    bad = minimal_cluster()
    bad["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    old = copy.deepcopy(bad)
    bad["metadata"]["finalizers"] = ["ray.io/gcs-ft-redis-cleanup-finalizer"]
    request = {"uid": "u", "operation": "UPDATE", "object": bad, "oldObject": old}
    assert kuberay_review(request, RAYCLUSTER) == {"uid": "u", "allowed": True}
    create = {"uid": "u", "operation": "CREATE", "object": bad}
    assert kuberay_review(create, RAYCLUSTER)["allowed"] is False


def test_managed_by_is_immutable_over_the_webhook() -> None:
    old = minimal_cluster()
    new = copy.deepcopy(old)
    new["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    response = review(
        "/rayclusters/validate",
        {"uid": "u", "operation": "UPDATE", "object": new, "oldObject": old},
    )
    assert response["allowed"] is False
    causes = response["status"]["details"]["causes"]
    assert {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: field is immutable",
        "field": "spec.managedBy",
    } in causes


def test_delete_is_not_validated_by_kuberay() -> None:
    response = review("/rayjobs/validate", {"uid": "u", "operation": "DELETE", "object": None})
    assert response == {"uid": "u", "allowed": True}


def test_cache_lookup_reads_the_shared_caches() -> None:
    client = kclient.in_process(app=None)
    lookup = CacheLookup(InformerFactory(client))
    assert not lookup.has_synced
    assert sorted(lookup.unsynced()) == [
        "namespaces",
        "podgroups.scheduling.volcano.sh",
        "queues.scheduling.volcano.sh",
    ]
    lookup.queues.upsert(queue("q1"))
    lookup.namespaces.upsert({"metadata": {"name": "ns1"}})
    pg: Obj = {"metadata": {"name": "pg", "namespace": "ns1"}, "spec": {"queue": "q1"}}
    other: Obj = {"metadata": {"name": "pg2", "namespace": "ns2"}, "spec": {"queue": "q2"}}
    lookup.podgroups.upsert(pg)
    lookup.podgroups.upsert(other)
    assert lookup.get_queue("q1") == queue("q1")
    assert lookup.get_queue("nope") is None
    assert [q["metadata"]["name"] for q in lookup.list_queues()] == ["q1"]
    assert lookup.list_podgroups("q1") == [pg]
    assert lookup.list_podgroups("q3") == []
    assert lookup.get_podgroup("ns1", "pg") == pg
    assert lookup.get_podgroup("ns2", "pg") is None
    assert lookup.get_namespace("ns1") == {"metadata": {"name": "ns1"}}
    # A PodGroup moved to another queue leaves the old queue's index.
    moved = {**pg, "spec": {"queue": "q2"}}
    lookup.podgroups.upsert(moved)
    assert lookup.list_podgroups("q1") == []
    assert len(lookup.list_podgroups("q2")) == 2


def test_self_signed_certificate_names_the_service(tmp_path: Path) -> None:
    cert_path, key_path = self_signed(tmp_path)
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = san.get_values_for_type(x509.DNSName)
    assert SERVICE_HOST in names and "localhost" in names
    assert key_path.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--tls-cert-file", "/nonexistent.crt"],
        ["--tls-cert-file", "/nonexistent.crt", "--tls-private-key-file", "/nonexistent.key"],
        ["--port", "70000"],
        ["--sync-timeout", "0"],
    ],
)
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["webhook", "--kubeconfig", "/nonexistent", *args]) == 2
    assert "lahar webhook:" in capsys.readouterr().err
