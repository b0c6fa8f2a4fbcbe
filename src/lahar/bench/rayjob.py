"""``lahar bench rayjob``: apply to SUCCEEDED for a small RayJob on real Ray.

What a user waits for: ``kubectl apply`` of a RayJob (1 head + 1 worker, a trivial
entrypoint, no runtime_env) until its status says jobDeploymentStatus Complete and
jobStatus SUCCEEDED, on an embedded cluster whose local node runs the pods as real
processes. The cluster is a ``lahar up`` subprocess on a temp data dir with a bridge,
pod CIDR and owner tag of its own, so the benchmark never touches another ``lahar up``
on the machine. Each run's RayJob is deleted and its pods waited out before the next,
so runs do not overlap. KubeRay's ``ray-job.sample.yaml`` (whose runtime_env pip
install dominates) is timed separately.

Figures: ``median_seconds``, ``min_seconds``, ``runs``, ``sample_seconds`` (null when
skipped), plus the parameters and the machine.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from lahar.bench.common import machine
from lahar.node.local.network import free_cidr

ENTRYPOINT = 'python -c "import ray; ray.init(); print(ray.get(ray.remote(lambda: 42).remote()))"'
DEFAULT_SAMPLE = Path(__file__).resolve().parents[4] / "shared/samples/kuberay"
SAMPLE_NAME = "ray-job.sample.yaml"


def small_rayjob(name: str, entrypoint: str = ENTRYPOINT, cpu: str = "1") -> dict[str, Any]:
    """A RayJob with 1 head and 1 worker, each requesting ``cpu``; no runtime_env."""

    def group(container: str) -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {
                        "name": container,
                        "image": "rayproject/ray:2.60.0",
                        "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                    }
                ]
            }
        }

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": entrypoint,
            "shutdownAfterJobFinishes": False,
            "rayClusterSpec": {
                "rayVersion": "2.60.0",
                "headGroupSpec": {"rayStartParams": {}, "template": group("ray-head")},
                "workerGroupSpecs": [
                    {
                        "groupName": "small",
                        "replicas": 1,
                        "minReplicas": 1,
                        "maxReplicas": 1,
                        "rayStartParams": {},
                        "template": group("ray-worker"),
                    }
                ],
            },
        },
    }


class UpProcess:
    """``lahar up`` with the local node on a temp data dir, driven with kubectl."""

    def __init__(self, cpu: str | None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lahar-bench-rayjob-"))
        suffix = secrets.token_hex(3)
        self.tag, self.bridge, self.cidr = f"lb{suffix}", f"lbb{suffix}", free_cidr()
        self.cpu = cpu
        self.proc: subprocess.Popen[bytes] | None = None
        self.kubectl_bin = shutil.which("kubectl")
        if self.kubectl_bin is None:
            raise RuntimeError("lahar bench rayjob needs kubectl on PATH")

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def __enter__(self) -> UpProcess:
        argv = [sys.executable, "-m", "lahar.cli.main", "up", "--data-dir", str(self.dir)]
        argv += ["--port", "0", "--local-node-bridge", self.bridge, "--local-node-tag", self.tag]
        argv += ["--local-node-cidr", self.cidr]
        if self.cpu:
            argv += ["--local-node-cpu", self.cpu]
        with open(self.dir / "up.log", "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                text = (self.dir / "up.log").read_text(errors="replace")[-2000:]
                self.__exit__()
                raise RuntimeError(f"lahar up did not start:\n{text}")
            if self.kubeconfig.exists():
                ok = self.kubectl("get", "--raw", "/readyz", check=False)
                nodes = self.kubectl("get", "nodes", "-o", "name", check=False)
                if ok.stdout.strip() == "ok" and nodes.stdout.strip():
                    return self
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        assert self.kubectl_bin is not None
        argv = [self.kubectl_bin, "--kubeconfig", str(self.kubeconfig), *args]
        res = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
        if check and res.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
        return res

    def status(self, name: str) -> dict[str, Any]:
        out = self.kubectl("get", "rayjob", name, "-o", "json").stdout
        return dict(json.loads(out).get("status") or {})

    def time_to_success(self, manifest: str, name: str, timeout: float) -> float:
        """Seconds from apply to Complete/SUCCEEDED (raises if it ends otherwise)."""
        start = time.monotonic()
        self.kubectl("apply", "-f", "-", stdin=manifest)
        while time.monotonic() - start < timeout:
            st = self.status(name)
            deployment, job = st.get("jobDeploymentStatus"), st.get("jobStatus")
            if deployment == "Complete" and job == "SUCCEEDED":
                return time.monotonic() - start
            if deployment in ("Failed", "Complete") or job in ("FAILED", "STOPPED"):
                raise RuntimeError(f"RayJob {name} ended {deployment}/{job}: {st.get('message')}")
            time.sleep(0.2)
        raise RuntimeError(f"RayJob {name} did not succeed within {timeout:.0f} s")

    def delete_and_wait(self, name: str, timeout: float = 120) -> None:
        """Delete the RayJob and everything it made; return once no pod is left."""
        self.kubectl("delete", "rayjob", name, "--wait=false", "--ignore-not-found")
        self.kubectl("delete", "raycluster", "--all", "--wait=false")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.kubectl("get", "pods", "-o", "name").stdout.strip():
                return
            time.sleep(0.5)
        raise RuntimeError(f"the pods of RayJob {name} were not gone within {timeout:.0f} s")


def run(
    *, runs: int = 3, sample: Path | None = None, cpu: str | None = "8", timeout: float = 300
) -> dict[str, Any]:
    """Time ``runs`` small RayJobs and, unless ``sample`` is None, the sample RayJob."""
    times: list[float] = []
    sample_seconds: float | None = None
    with UpProcess(cpu) as up:
        for i in range(runs):
            name = f"bench-{i}"
            manifest = yaml.safe_dump(small_rayjob(name))
            times.append(round(up.time_to_success(manifest, name, timeout), 3))
            up.delete_and_wait(name)
        if sample is not None:
            text = sample.read_text()
            names = [
                d["metadata"]["name"]
                for d in yaml.safe_load_all(text)
                if d and d.get("kind") == "RayJob"
            ]
            if len(names) != 1:
                raise RuntimeError(f"{sample} must hold exactly one RayJob")
            sample_seconds = round(up.time_to_success(text, names[0], timeout), 3)
            up.delete_and_wait(names[0])
    return {
        "median_seconds": round(statistics.median(times), 3) if times else None,
        "min_seconds": min(times) if times else None,
        "sample_seconds": sample_seconds,
        "runs": times,
        "parameters": {
            "runs": runs,
            "sample": str(sample) if sample is not None else None,
            "local_node_cpu": cpu,
            "entrypoint": ENTRYPOINT,
            "pods": "1 head + 1 worker, 1 CPU and 1Gi each; K8sJobMode submitter",
        },
        "machine": machine(),
    }


def default_sample() -> Path | None:
    """KubeRay's ray-job.sample.yaml next to the checkout, if it is there."""
    path = DEFAULT_SAMPLE / SAMPLE_NAME
    return path if path.is_file() else None
