"""End to end with kubectl: ``lahar apiserver`` and ``lahar kube-controllers`` as two
processes, kubectl as the user and the test as the node agent (writing pod status and
node Leases). Both processes are stopped, and their dirs removed, even on failure."""

from __future__ import annotations

import json
import os
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
import yaml

from lahar.kube.leaderelection import micro_time
from tests.e2e.cluster import KUBECTL, Cluster

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")

Obj = dict[str, Any]


class Controllers:
    """A ``lahar kube-controllers`` subprocess on a cluster's kubeconfig."""

    def __init__(self, cluster: Cluster, *args: str) -> None:
        self.log_path = cluster.data_dir / "kube-controllers.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lahar.cli.main",
                "kube-controllers",
                "--kubeconfig",
                str(cluster.kubeconfig),
                *args,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self) -> int | None:
        code = self.proc.poll()
        if code is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                code = self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                code = self.proc.wait(5)
        self._log.close()
        return code


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Cluster, Controllers]]:
    data = Path(tempfile.mkdtemp(prefix="lahar-controllers-e2e-"))
    cluster = Cluster(data / "data", "apiserver")
    ctrl: Controllers | None = None
    try:
        cluster.start()
        ctrl = Controllers(
            cluster,
            "--node-monitor-grace-period=2",
            "--node-startup-grace-period=2",
            "--job-backoff-base=0.2",
            "--pod-gc-period=0.3",
            "--pod-gc-orphan-quarantine=0.5",
            "--terminated-pod-gc-threshold=6",
            "--health-port=-1",
        )
        yield cluster, ctrl
    finally:
        code, log = 0, ""
        try:
            if ctrl is not None:
                code = ctrl.stop()
                log = ctrl.log_path.read_text(errors="replace")
        finally:
            cluster.cleanup()
            shutil.rmtree(data, ignore_errors=True)
        assert code == 0, f"kube-controllers exited {code}:\n{log}"


def wait_for(check: Any, timeout: float = 30.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def pods_of(cluster: Cluster, job: str, ns: str = "default") -> list[Obj]:
    out = cluster.get_json("pods", "-n", ns, "-l", f"job-name={job}")
    return [p for p in out["items"] if not p["metadata"].get("deletionTimestamp")]


def set_phase(cluster: Cluster, name: str, phase: str, ns: str = "default") -> None:
    cluster.kubectl(
        "patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": phase}}),
    )  # fmt: skip


def job_yaml(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                }
            },
            **spec,
        },
    }


def condition(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c["type"] == kind:
            return c  # type: ignore[no-any-return]
    return None


def test_kubectl_create_job_completes(env: tuple[Cluster, Controllers]) -> None:
    cluster, _ = env
    cluster.kubectl("create", "job", "j", "--image=busybox", "--", "true")
    (pod,) = wait_for(lambda: pods_of(cluster, "j"))
    assert pod["metadata"]["ownerReferences"][0]["name"] == "j"
    set_phase(cluster, pod["metadata"]["name"], "Succeeded")
    res = cluster.kubectl("wait", "--for=condition=complete", "job/j", "--timeout=30s")
    assert "condition met" in res.stdout
    job = cluster.get_json("job", "j")
    assert job["status"]["succeeded"] == 1 and job["status"]["completionTime"]
    events = cluster.get_json("events", "--field-selector", "involvedObject.name=j")
    reasons = {e["reason"] for e in events["items"]}
    assert {"SuccessfulCreate", "Completed"} <= reasons
    # the Lease shows who acts
    lease = cluster.get_json("lease", "-n", "kube-system", "lahar-controller-manager")
    assert lease["spec"]["holderIdentity"]


def test_backoff_limit(env: tuple[Cluster, Controllers]) -> None:
    cluster, _ = env
    cluster.apply_yaml(job_yaml("b", backoffLimit=1))
    failed: set[str] = set()
    for _ in range(2):
        (pod,) = wait_for(
            lambda: [p for p in pods_of(cluster, "b") if p["metadata"]["name"] not in failed]
        )
        set_phase(cluster, pod["metadata"]["name"], "Failed")
        failed.add(pod["metadata"]["name"])
    cluster.kubectl("wait", "--for=condition=failed", "job/b", "--timeout=30s")
    job = cluster.get_json("job", "b")
    assert condition(job, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert condition(job, "FailureTarget")["status"] == "True"  # type: ignore[index]
    assert job["status"]["failed"] == 2


def test_active_deadline(env: tuple[Cluster, Controllers]) -> None:
    cluster, _ = env
    cluster.apply_yaml(job_yaml("d", activeDeadlineSeconds=2))
    wait_for(lambda: pods_of(cluster, "d"))
    cluster.kubectl("wait", "--for=condition=failed", "job/d", "--timeout=30s")
    job = cluster.get_json("job", "d")
    assert condition(job, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    wait_for(lambda: not pods_of(cluster, "d"))


def test_ttl_after_finished(env: tuple[Cluster, Controllers]) -> None:
    cluster, _ = env
    cluster.apply_yaml(job_yaml("t", ttlSecondsAfterFinished=2))
    (pod,) = wait_for(lambda: pods_of(cluster, "t"))
    set_phase(cluster, pod["metadata"]["name"], "Succeeded")
    cluster.kubectl("wait", "--for=condition=complete", "job/t", "--timeout=30s")
    cluster.kubectl("wait", "--for=delete", "job/t", "--timeout=30s")
    wait_for(lambda: not cluster.get_json("pods", "-l", "job-name=t")["items"])


def test_silent_node_is_tainted_and_its_pods_evicted(env: tuple[Cluster, Controllers]) -> None:
    cluster, _ = env
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "test",
        "lastHeartbeatTime": micro_time()[:19] + "Z",
        "lastTransitionTime": micro_time()[:19] + "Z",
    }
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    cluster.kubectl(
        "patch", "node", "n1", "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"conditions": [ready]}}),
    )  # fmt: skip
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "n1", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 2, "renewTime": micro_time()},
    }
    cluster.apply_yaml(lease)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "victim", "namespace": "default"},
        "spec": {
            "nodeName": "n1",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "busybox"}],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 1,
                }
            ],
        },
    }
    cluster.apply_yaml(pod)
    set_phase(cluster, "victim", "Running")
    # no more renewals: the node goes Unknown and gets the unreachable taints
    node = wait_for(lambda: _tainted(cluster, "n1"), timeout=30)
    assert condition(node, "Ready")["status"] == "Unknown"  # type: ignore[index]
    keys = {(t["key"], t["effect"]) for t in node["spec"]["taints"]}
    assert keys == {
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    }
    cluster.kubectl("wait", "--for=delete", "pod/victim", "--timeout=30s")
    # back: heartbeat and Ready again, the taints go
    lease["spec"]["renewTime"] = micro_time()
    cluster.apply_yaml(lease)
    ready["lastHeartbeatTime"] = micro_time()[:19] + "Z"
    cluster.kubectl(
        "patch", "node", "n1", "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"conditions": [ready]}}),
    )  # fmt: skip
    wait_for(
        lambda: not (cluster.get_json("node", "n1").get("spec") or {}).get("taints"), timeout=30
    )


def test_pod_gc(env: tuple[Cluster, Controllers]) -> None:
    cluster, _ = env
    cluster.kubectl("create", "namespace", "gc")
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"done-{i}", "namespace": "gc"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
        for i in range(8)
    ]
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "orphan", "namespace": "gc"},
            "spec": {"nodeName": "ghost", "containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    cluster.apply_yaml(docs)
    for i in range(8):
        set_phase(cluster, f"done-{i}", "Succeeded", ns="gc")
    cluster.kubectl("wait", "--for=delete", "pod/orphan", "-n", "gc", "--timeout=30s")

    def terminated() -> int:
        items = cluster.get_json("pods", "-A")["items"]
        return sum(1 for p in items if p["status"].get("phase") in ("Succeeded", "Failed"))

    wait_for(lambda: terminated() <= 6, timeout=30)


def _tainted(cluster: Cluster, name: str) -> Obj | None:
    node = cluster.get_json("node", name)
    return node if (node.get("spec") or {}).get("taints") else None


def test_leader_lease_is_yaml_readable(env: tuple[Cluster, Controllers]) -> None:
    cluster, _ = env
    text = cluster.kubectl("get", "lease", "-n", "kube-system", "-o", "yaml").stdout
    names = [i["metadata"]["name"] for i in yaml.safe_load(text)["items"]]
    assert "lahar-controller-manager" in names
