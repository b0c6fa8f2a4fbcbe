"""``lahar apiserver`` and ``lahar node sim`` as separate processes, judged by kubectl:
three Ready nodes, a pod with ``nodeName`` runs, ``kubectl logs`` is served from the
simulator's loopback endpoint, SIGTERM removes the nodes. Every process and temp dir is
removed even when the test fails."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube.procs import ApiServerProcess, spawn, stop

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  nodeName: sim-1
  restartPolicy: Never
  containers:
  - name: main
    image: example/hello:1
"""


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[ApiServerProcess]:
    srv = ApiServerProcess(tmp_path / "api")
    try:
        yield srv.start()
    finally:
        srv.stop()


@pytest.fixture
def kubectl(apiserver: ApiServerProcess) -> Iterator[Callable[..., str]]:
    cache = Path(tempfile.mkdtemp(prefix="lahar-kubectl-cache-"))

    def run(*args: str, input: str | None = None) -> str:
        cmd = [KUBECTL, "--kubeconfig", str(apiserver.kubeconfig), "--cache-dir", str(cache)]
        out = subprocess.run([*cmd, *args], input=input, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {out.stderr}")
        return out.stdout

    try:
        yield run
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.1)


@pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")
def test_sim_nodes_as_a_process(
    apiserver: ApiServerProcess, kubectl: Callable[..., str], tmp_path: Path
) -> None:
    log = tmp_path / "sim.log"
    sim = spawn(
        [
            "-m",
            "lahar.cli.main",
            "node",
            "sim",
            "--kubeconfig",
            str(apiserver.kubeconfig),
            "--count",
            "3",
            "--cpu",
            "4",
            "--memory",
            "16Gi",
            "--ready-delay",
            "200ms",
            "--heartbeat",
            "1s",
        ],
        log,
    )
    try:
        wait_for(
            lambda: sim.poll() is not None or "nodes registered" in log.read_text(),
            what="the simulator to register its nodes",
        )
        assert sim.poll() is None, log.read_text()

        def ready_nodes() -> list[str]:
            items = json.loads(kubectl("get", "nodes", "-o", "json"))["items"]
            return sorted(
                n["metadata"]["name"]
                for n in items
                if any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in n["status"].get("conditions", [])
                )
            )

        assert wait_for(lambda: ready_nodes() == ["sim-0", "sim-1", "sim-2"], what="3 Ready nodes")
        table = kubectl("get", "nodes")
        assert table.count(" Ready ") == 3 and "v1.32.0-lahar-sim" in table

        kubectl("apply", "-f", "-", input=POD)
        wait_for(
            lambda: kubectl("get", "pod", "hello", "-o", "jsonpath={.status.phase}") == "Running",
            what="the pod to run",
        )
        assert kubectl("logs", "hello") == "simulated container main of default/hello\n"

        stop(sim, signal.SIGTERM)
        assert sim.returncode == 0, log.read_text()
        assert json.loads(kubectl("get", "nodes", "-o", "json"))["items"] == []
        leases = kubectl("get", "leases", "-n", "kube-node-lease", "-o", "json")
        assert json.loads(leases)["items"] == []
    finally:
        stop(sim)
