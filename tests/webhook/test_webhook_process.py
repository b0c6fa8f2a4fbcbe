"""``lahar webhook`` as a process: AdmissionReviews over HTTPS against a real API server.

A ``lahar apiserver`` subprocess stands in for the cluster (CRDs applied with kubectl,
a ``default`` Queue made Open through the status subresource), and ``lahar webhook``
runs against its kubeconfig with a generated self-signed certificate, which the client
here trusts explicitly. The reviews cover Volcano's validation (a message from the rules,
a missing queue seen through the informer caches), its mutation (a JSONPatch) and
KubeRay's validation (a denial naming the field, an allowed RayJob).
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.kube.procs import REPO, ApiServerProcess, spawn, stop
from tests.kuberay.helpers import minimal_cluster
from tests.volcano.helpers import job, task

Obj = dict[str, Any]

pytestmark = pytest.mark.skipif(
    subprocess.run(["which", "kubectl"], capture_output=True).returncode != 0,
    reason="kubectl is not installed",
)


@dataclass
class Webhook:
    url: str
    context: ssl.SSLContext
    kubeconfig: Path

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, context=self.context, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def review(self, path: str, request: Obj) -> Obj:
        body = json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        ).encode()
        req = urllib.request.Request(
            self.url + path, data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, context=self.context, timeout=10) as resp:
            out = json.loads(resp.read())
        assert out["kind"] == "AdmissionReview"
        assert out["response"]["uid"] == request["uid"]
        return out["response"]  # type: ignore[no-any-return]


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for_line(log: Path, pattern: str, proc: subprocess.Popen[bytes]) -> re.Match[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text() if log.exists() else "")
        if found:
            return found
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"no {pattern!r} in the webhook's output:\n{log.read_text()}")


QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1}
"""


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    root = tmp_path_factory.mktemp("webhook")
    api = ApiServerProcess(root / "api")
    proc: subprocess.Popen[bytes] | None = None
    try:
        api.start()
        kc = api.kubeconfig
        kubectl(kc, "apply", "--server-side", "-f", "deploy/crds/")
        deadline = time.monotonic() + 30
        while True:  # the CRDs are served once established
            done = subprocess.run(
                ["kubectl", "--kubeconfig", str(kc), "apply", "-f", "-"],
                input=QUEUE,
                capture_output=True,
                text=True,
                timeout=60,
            )
            if done.returncode == 0:
                break
            assert time.monotonic() < deadline, done.stderr
            time.sleep(0.2)
        kubectl(
            kc,
            "patch",
            "queue",
            "default",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"state":"Open"}}',
        )
        log = root / "webhook.log"
        proc = spawn(
            ["-m", "lahar.cli.main", "webhook", "--kubeconfig", str(kc), "--port", "0"], log
        )
        cert = wait_for_line(log, r"self-signed certificate for \S+: (\S+)", proc).group(1)
        url = wait_for_line(log, r"serving on (https://\S+)", proc).group(1)
        context = ssl.create_default_context(cafile=cert)
        yield Webhook(url, context, kc)
    finally:
        stop(proc)
        api.stop()


def vcjob_request(obj: Obj, uid: str, operation: str = "CREATE") -> Obj:
    md = obj["metadata"]
    return {
        "uid": uid,
        "kind": {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"},
        "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
        "operation": operation,
        "namespace": md["namespace"],
        "name": md["name"],
        "object": obj,
    }


def rayjob(**spec: Any) -> Obj:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj", "namespace": "ns1"},
        "spec": {"entrypoint": "python -c 'print(1)'", **spec},
    }


def rayjob_request(obj: Obj, uid: str) -> Obj:
    return {
        "uid": uid,
        "kind": {"group": "ray.io", "version": "v1", "kind": "RayJob"},
        "resource": {"group": "ray.io", "version": "v1", "resource": "rayjobs"},
        "operation": "CREATE",
        "namespace": "ns1",
        "name": obj["metadata"]["name"],
        "object": obj,
    }


def test_probes_answer_over_https(webhook: Webhook) -> None:
    assert webhook.get("/healthz") == (200, "ok")
    assert webhook.get("/readyz") == (200, "ok")


def test_invalid_vcjob_is_denied_with_volcanos_message(webhook: Webhook) -> None:
    obj = job("j1", task("w", 2), namespace="default", queue="default", minAvailable=5)
    resp = webhook.review("/jobs/validate", vcjob_request(obj, "u-1"))
    assert resp["allowed"] is False
    assert (
        "job 'minAvailable' should not be greater than total replicas in tasks"
        in (resp["status"]["message"])
    )


def test_valid_vcjob_into_the_open_queue_is_allowed(webhook: Webhook) -> None:
    obj = job("j2", task("w", 2), namespace="default", queue="default", minAvailable=2)
    resp = webhook.review("/jobs/validate", vcjob_request(obj, "u-2"))
    assert resp == {"uid": "u-2", "allowed": True}


def test_job_into_a_missing_queue_is_denied_from_the_caches(webhook: Webhook) -> None:
    obj = job("j3", task("w", 2), namespace="default", queue="nowhere", minAvailable=2)
    resp = webhook.review("/jobs/validate", vcjob_request(obj, "u-3"))
    assert resp["allowed"] is False
    assert (
        'unable to find job queue: queue.scheduling.volcano.sh "nowhere" not found'
        in (resp["status"]["message"])
    )


def test_a_queue_created_later_reaches_the_cache(webhook: Webhook) -> None:
    kubectl(webhook.kubeconfig, "apply", "-f", "-", stdin=QUEUE.replace("default", "late"))
    kubectl(
        webhook.kubeconfig,
        "patch",
        "queue",
        "late",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"state":"Open"}}',
    )
    obj = job("j4", task("w", 1), namespace="default", queue="late", minAvailable=1)
    deadline = time.monotonic() + 15
    while True:
        resp = webhook.review("/jobs/validate", vcjob_request(obj, "u-4"))
        if resp["allowed"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert resp["allowed"] is True, resp


def test_mutating_review_returns_a_json_patch(webhook: Webhook) -> None:
    obj = job("j5", task("w", 3), namespace="default")
    resp = webhook.review("/jobs/mutate", vcjob_request(obj, "u-5"))
    assert resp["allowed"] is True
    assert resp["patchType"] == "JSONPatch"
    patched = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(resp["patch"])))
    assert patched["spec"]["queue"] == "default"
    assert patched["spec"]["minAvailable"] == 3


def test_invalid_rayjob_is_denied_naming_the_field(webhook: Webhook) -> None:
    resp = webhook.review("/rayjobs/validate", rayjob_request(rayjob(), "u-6"))
    assert resp["allowed"] is False
    status = resp["status"]
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('RayJob.ray.io "rj" is invalid: spec.rayClusterSpec: ')
    fields = [c.get("field") for c in status["details"]["causes"]]
    assert "spec.rayClusterSpec" in fields


def test_valid_rayjob_is_allowed(webhook: Webhook) -> None:
    obj = rayjob(rayClusterSpec=minimal_cluster()["spec"])
    resp = webhook.review("/rayjobs/validate", rayjob_request(obj, "u-7"))
    assert resp["allowed"] is True, resp
    assert "status" not in resp


def test_invalid_raycluster_is_denied(webhook: Webhook) -> None:
    obj = minimal_cluster()
    obj["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9  # above maxReplicas (4)
    request = {
        "uid": "u-8",
        "kind": {"group": "ray.io", "version": "v1", "kind": "RayCluster"},
        "resource": {"group": "ray.io", "version": "v1", "resource": "rayclusters"},
        "operation": "CREATE",
        "namespace": "ns1",
        "name": "demo",
        "object": obj,
    }
    resp = webhook.review("/rayclusters/validate", request)
    assert resp["allowed"] is False
    assert "spec.workerGroupSpecs[0]" in resp["status"]["message"]


def test_deployment_webhook_configurations_use_served_paths(webhook: Webhook) -> None:
    # Every path a webhook configuration under deploy/ names answers an AdmissionReview.
    for path in sorted((REPO / "deploy" / "webhooks").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or not doc.get("kind", "").endswith("WebhookConfiguration"):
                continue
            for hook in doc["webhooks"]:
                svc_path = hook["clientConfig"]["service"]["path"]
                resp = webhook.review(svc_path, {"uid": "u-9", "operation": "CONNECT"})
                assert resp["allowed"] is True, (path.name, svc_path)


def test_sigterm_stops_the_webhook_cleanly(webhook: Webhook, tmp_path: Path) -> None:
    log = tmp_path / "second.log"
    proc = spawn(
        [
            "-m",
            "lahar.cli.main",
            "webhook",
            "--kubeconfig",
            str(webhook.kubeconfig),
            "--port",
            "0",
        ],
        log,
    )
    try:
        wait_for_line(log, r"serving on https://", proc)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(15) == 0, log.read_text()
    finally:
        stop(proc)


def test_missing_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "webhook", "--kubeconfig", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 2, done.stderr
    assert "--kubeconfig /nonexistent" in done.stderr
