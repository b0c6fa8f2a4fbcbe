"""The HTTPS admission webhook app: AdmissionReview in, AdmissionResponse out."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import jsonpatch
import pytest
import yaml
from starlette.testclient import TestClient

from lahar.volcano.webhook import create_app
from tests.volcano.helpers import job, lookup, queue, task

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(lookup(queue("default"), queue("closed", "Closed"))))


def review(
    op: str, obj: dict | None, *, old: dict | None = None, name: str = "", namespace: str = "ns"
) -> dict:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "abc-123",
            "operation": op,
            "name": name,
            "namespace": namespace,
            "object": obj,
            "oldObject": old,
        },
    }


def test_job_mutation_returns_a_json_patch(client: TestClient) -> None:
    obj = job("j", task("w", 2))
    body = client.post("/jobs/mutate", json=review("CREATE", obj)).json()
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    response = body["response"]
    assert response["uid"] == "abc-123"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    patched = jsonpatch.apply_patch(obj, patch)
    assert patched["spec"]["queue"] == "default"
    assert patched["spec"]["minAvailable"] == 2
    assert patched["spec"]["tasks"][0]["maxRetry"] == 3


def test_job_validation_denies_with_volcano_message(client: TestClient) -> None:
    obj = job("j", task("w", 2), queue="closed", minAvailable=2, maxRetry=3)
    response = client.post("/jobs/validate", json=review("CREATE", obj)).json()["response"]
    assert response == {
        "uid": "abc-123",
        "allowed": False,
        "status": {
            "message": "can only submit job to queue with state `Open`, queue `closed` status is `Closed`;"
        },
    }


def test_job_validation_allows(client: TestClient) -> None:
    obj = job("j", task("w", 2), queue="default", minAvailable=2)
    assert client.post("/jobs/validate", json=review("CREATE", obj)).json()["response"] == {
        "uid": "abc-123",
        "allowed": True,
    }


def test_queue_delete_uses_request_name(client: TestClient) -> None:
    body = review("DELETE", None, old=queue("default"), name="default", namespace="")
    response = client.post("/queues/validate", json=body).json()["response"]
    assert response["allowed"] is False
    assert response["status"]["message"] == "`default` queue can not be deleted"


def test_queue_mutate_and_podgroup_paths(client: TestClient) -> None:
    response = client.post("/queues/mutate", json=review("CREATE", queue("q"))).json()["response"]
    ops = json.loads(base64.b64decode(response["patch"]))
    assert {op["path"] for op in ops} == {"/spec/weight", "/spec/reclaimable"}
    pg = {"metadata": {"name": "pg"}, "spec": {"minMember": 1, "queue": "closed"}}
    response = client.post("/podgroups/validate", json=review("CREATE", pg)).json()["response"]
    assert response["status"]["message"] == (
        "can only submit PodGroup to queue with state `Open`, queue `closed` status is `Closed`"
    )
    response = client.post(
        "/podgroups/mutate", json=review("CREATE", {"metadata": {"name": "pg"}, "spec": {}})
    ).json()
    ops = json.loads(base64.b64decode(response["response"]["patch"]))
    assert ops == [{"op": "add", "path": "/spec/queue", "value": "default"}]


def test_pod_paths(client: TestClient) -> None:
    pod = {
        "metadata": {"name": "p", "annotations": {"volcano.sh/jdb-min-available": "0"}},
        "spec": {"schedulerName": "volcano"},
    }
    response = client.post("/pods/validate", json=review("CREATE", pod)).json()["response"]
    assert response["allowed"] is False
    response = client.post("/pods/mutate", json=review("CREATE", pod)).json()["response"]
    assert response == {"uid": "abc-123", "allowed": True}


def test_bad_bodies_get_400(client: TestClient) -> None:
    assert client.post("/jobs/validate", content=b"not json").status_code == 400
    assert client.post("/jobs/validate", json={"kind": "AdmissionReview"}).status_code == 400
    assert client.get("/healthz").text == "ok"


def test_deploy_configs_point_at_served_paths(client: TestClient) -> None:
    served = {
        "/jobs/validate",
        "/jobs/mutate",
        "/queues/validate",
        "/queues/mutate",
        "/podgroups/validate",
        "/podgroups/mutate",
        "/pods/validate",
        "/pods/mutate",
    }
    seen: dict[str, list[str]] = {}
    for name in ("mutating.yaml", "validating.yaml"):
        for doc in yaml.safe_load_all((ROOT / "deploy/webhooks" / name).read_text()):
            if not doc:
                continue
            for hook in doc["webhooks"]:
                svc = hook["clientConfig"]["service"]
                assert (svc["name"], svc["namespace"]) == ("lahar-admission", "lahar-system")
                seen[svc["path"]] = hook["rules"][0]["operations"]
    assert set(seen) == served
    assert seen["/queues/validate"] == ["CREATE", "UPDATE", "DELETE"]
    assert seen["/jobs/validate"] == ["CREATE", "UPDATE"]
    assert seen["/jobs/mutate"] == ["CREATE"]
