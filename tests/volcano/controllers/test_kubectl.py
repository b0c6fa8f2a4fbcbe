"""End to end with real processes: ``lahar up`` plus ``lahar controllers`` as a
subprocess, driven with kubectl (the test plays the scheduler and the node by patching
status) and ``lahar queue``. Both processes are stopped and the temp dir removed even when
the test fails."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import KUBECTL, Cluster

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl not installed")

JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "e2e", "namespace": "default"},
    "spec": {
        "minAvailable": 2,
        "schedulerName": "volcano",
        "queue": "default",
        "plugins": {"svc": [], "env": []},
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}],
                    }
                },
            }
        ],
    },
}


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.2)


@pytest.fixture
def stack() -> Iterator[tuple[Cluster, subprocess.Popen[bytes]]]:
    data = Path(tempfile.mkdtemp(prefix="lahar-vc-e2e-"))
    # The controllers run as their own process here, so `lahar up` must not run them too.
    cluster = Cluster(data / "up", "up", ("--disable", "volcano-controllers"))
    proc: subprocess.Popen[bytes] | None = None
    log = None
    try:
        cluster.start()
        log = open(data / "controllers.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lahar.cli.main",
                "controllers",
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--leader-elect",
                "-v",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        yield cluster, proc
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if log is not None:
            log.close()
        cluster.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def _get(cluster: Cluster, *args: str) -> Any:
    res = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else None


def _lahar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_vcjob_with_kubectl(stack: tuple[Cluster, subprocess.Popen[bytes]]) -> None:
    cluster, proc = stack
    queue = wait_for(
        lambda: (_get(cluster, "queue", "default") or {}).get("status", {}).get("state") == "Open",
        what="the default queue to be Open",
    )
    assert queue
    cluster.apply_yaml(JOB)
    job = wait_for(lambda: _get(cluster, "vcjob", "e2e"), what="the job")
    pg_name = f"e2e-{job['metadata']['uid']}"
    wait_for(lambda: _get(cluster, "podgroup", pg_name), what="the PodGroup")
    # play the scheduler: enqueue the gang
    cluster.kubectl(
        "patch", "podgroup", pg_name, "--type", "merge", "-p", '{"status":{"phase":"Inqueue"}}'
    )
    pods = wait_for(
        lambda: (
            len((_get(cluster, "pods", "-l", "volcano.sh/job-name=e2e") or {}).get("items", []))
            == 2
        ),
        what="two pods",
    )
    assert pods
    assert _get(cluster, "service", "e2e")["spec"]["clusterIP"] == "None"
    # play the node: the pods run
    for name in ("e2e-worker-0", "e2e-worker-1"):
        cluster.kubectl(
            "patch",
            "pod",
            name,
            "--subresource",
            "status",
            "--type",
            "merge",
            "-p",
            '{"status":{"phase":"Running"}}',
        )
    wait_for(
        lambda: (
            (_get(cluster, "vcjob", "e2e") or {}).get("status", {}).get("state", {}).get("phase")
            == "Running"
        ),
        what="the job to run",
    )

    # queues: create one, close it with the CLI (empty: Closed at once), reopen it
    cluster.apply_yaml(
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"}}
    )
    wait_for(
        lambda: (_get(cluster, "queue", "q1") or {}).get("status", {}).get("state") == "Open",
        what="q1 to open",
    )
    kubeconfig = str(cluster.kubeconfig)

    def q1_state() -> str:
        return (_get(cluster, "queue", "q1") or {}).get("status", {}).get("state", "")

    cluster.apply_yaml(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg1", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "q1"},
        }
    )
    # Pending until the scheduler's enqueue action admits it, Inqueue after: either counts.
    wait_for(
        lambda: (
            sum(
                ((_get(cluster, "queue", "q1") or {}).get("status") or {}).get(k, 0)
                for k in ("pending", "inqueue")
            )
            == 1
        ),
        what="q1 to count the PodGroup",
    )
    closing = _lahar("queue", "close", "q1", "--kubeconfig", kubeconfig)
    assert closing.returncode == 0, closing.stderr
    wait_for(lambda: q1_state() == "Closing", what="q1 to be Closing")
    again = _lahar("queue", "close", "q1", "--kubeconfig", kubeconfig)
    assert "already closing" in again.stdout
    # Volcano's admission refuses edits of a Closing queue; `lahar queue open` copes
    opened = _lahar("queue", "open", "q1", "--kubeconfig", kubeconfig, "--wait", "30")
    assert opened.returncode == 0, opened.stderr
    assert "queue/q1 is Open" in opened.stdout
    cluster.kubectl("delete", "podgroup", "pg1")
    closed = _lahar("queue", "close", "q1", "--kubeconfig", kubeconfig, "--wait", "30")
    assert closed.returncode == 0, closed.stderr
    assert "queue/q1 is Closed" in closed.stdout

    # without a wish annotation, direct status edits stick (as in Volcano's newer releases)
    cluster.kubectl("annotate", "queue", "q1", "lahar.dev/queue-state-")
    for state in ("Open", "Closed"):
        cluster.kubectl(
            "patch",
            "queue",
            "q1",
            "--subresource",
            "status",
            "--type",
            "merge",
            "-p",
            json.dumps({"status": {"state": state}}),
        )
        time.sleep(1.0)
        assert q1_state() == state
    missing = _lahar("queue", "close", "nope", "--kubeconfig", kubeconfig)
    assert missing.returncode == 1
    assert proc.poll() is None, "lahar controllers exited"
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(15) == 0
    log = (cluster.data_dir.parent / "controllers.log").read_text()
    assert "Traceback" not in log, log
