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


# Connections from the benchmark's process to its API server (watches hold some), shared
# by its components. The server serves one request at a time anyway; measured on ``lahar
# bench e2e``, a pool per component (4 x 128) let ~170 requests wait in flight and cost
# the component process more CPU per pod: 590 pods/s against 750 with this shared pool.
POOL = 48


@dataclass
class EmbeddedStack:
    """The cluster of the whole-stack benchmarks: the API server (with lahar's CRDs and
    admission), a client, shared informers and a fleet of simulated nodes (not
    started). Components are added by the benchmark.

    Split (the default), the API server runs in a child process
    (:mod:`lahar.bench.stackserver`) and the client reaches it over HTTPS: two cores at
    work, as in a split-process deployment. Otherwise it runs in this process, on this
    event loop, behind the in-process transport (one core, as ``lahar up`` runs it)."""

    tmp: Path
    server: Any  # a StackServer (split) or an APIServer (in-process)
    client: Any
    informers: Any
    fleet: Any
    split: bool

    async def metrics_text(self) -> str:
        """The API server's Prometheus metrics (``GET /metrics``)."""
        if not self.split:
            return str(self.server.state.metrics.render(self.server.state)[0].decode())
        from lahar.kube import rest

        resp = await rest.http_client(self.client).get("/metrics")
        return str(resp.text)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far by the API server's process and by this one (the
        components and the load); in-process, all of it is this process's."""
        own = time.process_time()
        if not self.split:
            return {"process": own}
        return {"apiserver": self.server.cpu_seconds(), "components": own}

    async def close(self) -> None:
        """Stop the client and the server and remove the temp dir (informers and the
        fleet are stopped by the benchmark first)."""
        try:
            await self.client.close()
        finally:
            if self.split:
                self.server.stop()
            else:
                await self.server.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


async def embedded_stack(prefix: str, nodes: int, *, split: bool = True) -> EmbeddedStack:
    from lahar.kube import client as kclient
    from lahar.kube.factory import InformerFactory
    from lahar.node.sim import SimFleet, SimOptions

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    logs = None
    if split:
        from lahar.bench.stackserver import StackServer

        server: Any = StackServer(tmp / "data")
        server.start()
        try:
            client = kclient.from_kubeconfig(
                server.kubeconfig, field_manager="bench", max_connections=POOL
            )
            await server.wait_ready(client)
        except BaseException:
            server.stop()
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    else:
        from lahar.apiserver.server import APIServer
        from lahar.embedded import admission_chain, install_crds, install_volcano_admission

        server = APIServer(tmp / "data", port=0, admission=admission_chain())
        install_volcano_admission(server.state)
        install_crds(server.state)
        client = kclient.in_process(server.app, token=server.creds.token, field_manager="bench")
        logs = server.state.logs
    informers = InformerFactory(client)
    fleet = SimFleet(
        client,
        SimOptions(count=nodes, cpu="32", memory="128Gi", pods=110),
        informers=informers,
        logs=logs,
    )
    return EmbeddedStack(tmp, server, client, informers, fleet, split)
