"""What every benchmark shares: machine facts, percentiles, a server subprocess."""

from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


def machine() -> dict[str, Any]:
    mem_kb = 0
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem_kb = int(line.split()[1])
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


class ServerProcess:
    """A ``lahar apiserver`` on a temp data dir and a free loopback port."""

    def __init__(self, *extra: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lahar-bench-"))
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def __enter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lahar.cli.main",
                "apiserver",
                "--data-dir",
                str(self.dir),
                "--port",
                "0",
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while not self.kubeconfig.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("the benchmark's API server did not start")
            time.sleep(0.05)
        time.sleep(0.3)
        return self

    def server(self) -> str:
        return yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class EmbeddedStack:
    """An in-process embedded cluster for the whole-stack benchmarks: the API server
    (with lahar's CRDs and admission), an in-process client, shared informers and a
    fleet of simulated nodes (not started). Components are added by the benchmark."""

    tmp: Path
    server: Any
    client: Any
    informers: Any
    fleet: Any


def embedded_stack(prefix: str, nodes: int) -> EmbeddedStack:
    from lahar.apiserver.server import APIServer
    from lahar.embedded import admission_chain, install_crds, install_volcano_admission
    from lahar.kube import client as kclient
    from lahar.kube.factory import InformerFactory
    from lahar.node.sim import SimFleet, SimOptions

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    server = APIServer(tmp / "data", port=0, admission=admission_chain())
    install_volcano_admission(server.state)
    install_crds(server.state)
    client = kclient.in_process(server.app, token=server.creds.token, field_manager="bench")
    informers = InformerFactory(client)
    fleet = SimFleet(
        client,
        SimOptions(count=nodes, cpu="32", memory="128Gi", pods=110),
        informers=informers,
        logs=server.state.logs,
    )
    return EmbeddedStack(tmp, server, client, informers, fleet)
