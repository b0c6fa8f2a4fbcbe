"""``lahar apiserver`` and ``lahar scheduler`` as real processes, driven by kubectl.

A PodGroup and three pods created with kubectl get bound. Then a larger batch (10
gangs of 20 pods) is released at once, the scheduler is killed with SIGKILL while it
binds them (one bind at a time, to make the window wide), and a new scheduler process
finishes the work. The API server's own request counter proves that every pod was
bound exactly once (201 answers == pods), and every node stays within its capacity.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import KUBECTL, Cluster

REPO = Path(__file__).resolve().parents[3]
CRDS = REPO / "deploy" / "crds"
BIND_201 = re.compile(
    r'^apiserver_request_total\{[^}]*resource="pods"[^}]*subresource="binding"[^}]*\} (\S+)$'
)

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")


class SchedulerProcess:
    """``lahar scheduler --kubeconfig ...`` in its own process group, always stopped."""

    def __init__(self, kubeconfig: Path, log: Path, *extra: str) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "lahar.cli.main",
                    "scheduler",
                    "--kubeconfig",
                    str(kubeconfig),
                    "--schedule-period",
                    "200ms",
                    "--health-port",
                    "0",
                    "-v",
                    *extra,
                ],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill9(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill9()
        return self.proc.returncode


@pytest.fixture
def apiserver() -> Iterator[Cluster]:
    data = Path(tempfile.mkdtemp(prefix="lahar-sched-proc-"))
    cluster = Cluster(data / "data", "apiserver")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def nodes(count: int, cpu: str) -> list[dict[str, Any]]:
    alloc = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {"capacity": alloc, "allocatable": alloc},
        }
        for i in range(count)
    ]


def podgroup(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": size},
    }


def pods(group: str, size: int, cpu: str = "100m") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{group}-{i}",
                "namespace": "default",
                "annotations": {"scheduling.k8s.io/group-name": group},
            },
            "spec": {
                "schedulerName": "volcano",
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                    }
                ],
            },
        }
        for i in range(size)
    ]


def placements(cluster: Cluster) -> dict[str, str]:
    items = cluster.get_json("pods", "-n", "default")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in items}


def binds_accepted(cluster: Cluster) -> tuple[int, int]:
    """(binding calls answered 201, other answers) from the server's /metrics."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    ok = other = 0
    for line in text.splitlines():
        m = BIND_201.match(line)
        if m:
            count = int(float(m.group(1)))
            if 'code="201"' in line:
                ok += count
            else:
                other += count
    return ok, other


def wait_for(check: Any, timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def test_kubectl_pods_bound_and_a_killed_scheduler_binds_nothing_twice(
    apiserver: Cluster,
) -> None:
    c = apiserver
    c.kubectl("apply", "-f", str(CRDS / "scheduling.volcano.sh_podgroups.yaml"))
    c.kubectl("apply", "-f", str(CRDS / "scheduling.volcano.sh_queues.yaml"))
    c.kubectl(
        "wait",
        "--for=condition=Established",
        "crd/podgroups.scheduling.volcano.sh",
        "--timeout=30s",
    )
    c.apply_yaml(nodes(4, "16"))
    log = c.data_dir / "scheduler.log"
    first = SchedulerProcess(c.kubeconfig, log, "--bind-workers", "1")
    second: SchedulerProcess | None = None
    try:
        # kubectl: a PodGroup and three pods, bound by the running scheduler
        c.apply_yaml([podgroup("small", 3), *pods("small", 3)])
        wait_for(lambda: all(placements(c).values()), 60, "the small gang to be bound")
        assert binds_accepted(c)[0] == 3

        # a larger batch: pods first (no PodGroup yet: skipped), then the PodGroups at once
        batch = [p for g in range(10) for p in pods(f"job{g}", 20)]
        c.apply_yaml(batch)
        time.sleep(0.5)
        assert binds_accepted(c)[0] == 3
        c.apply_yaml([podgroup(f"job{g}", 20) for g in range(10)])
        total = 3 + len(batch)
        wait_for(lambda: binds_accepted(c)[0] >= 3 + 15, 60, "binds to start", 0.05)
        first.kill9()
        at_kill = binds_accepted(c)[0]
        assert at_kill < total, "the scheduler finished before it could be killed"

        second = SchedulerProcess(c.kubeconfig, log)
        wait_for(lambda: all(placements(c).values()), 120, "every pod to be bound")
        time.sleep(1.0)  # a few more sessions: nothing must be bound again
        ok, other = binds_accepted(c)
        assert ok == total, f"{ok} binds accepted for {total} pods"
        assert other == 0, f"{other} binding calls were refused"
        per_node: dict[str, int] = {}
        for node in placements(c).values():
            per_node[node] = per_node.get(node, 0) + 100
        assert all(milli <= 16000 for milli in per_node.values()), per_node
        # every gang complete, and the PodGroups say Running once the pods are bound
        groups = c.get_json("podgroups", "-n", "default")["items"]
        assert len(groups) == 11
        wait_for(
            lambda: all(
                (g.get("status") or {}).get("phase") == "Running"
                for g in c.get_json("podgroups", "-n", "default")["items"]
            ),
            30,
            "every PodGroup Running",
        )
        assert second.stop() == 0
        text = log.read_text()
        assert "lahar scheduler running; health and metrics: http://127.0.0.1:" in text
        assert "Traceback" not in text, text[-3000:]
    finally:
        first.kill9()
        if second is not None:
            second.kill9()
