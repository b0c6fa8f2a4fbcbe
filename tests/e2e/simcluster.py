"""``lahar up`` with simulated nodes, and other lahar components as separate processes.

The end-to-end scheduling and operator tests need capacity (Nodes whose pods really go
Running), sometimes a component in a process of its own (a scheduler or an operator to
kill with SIGKILL), and the API server's own counters. :class:`SimCluster` owns all of
those processes and stops them in reverse order even when a test fails; the
simulated nodes come from ``lahar up --sim-nodes`` when that option exists, otherwise
from a ``lahar node sim`` process against the same kubeconfig.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.cluster import Cluster

REPO = Path(__file__).resolve().parents[2]
BIND_COUNTER = re.compile(
    r'^apiserver_request_total\{([^}]*resource="pods"[^}]*subresource="binding"[^}]*)\} (\S+)$'
)


@functools.cache
def up_has_sim_nodes() -> bool:
    """Whether this ``lahar up`` runs simulated nodes itself (``--sim-nodes``)."""
    out = subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "up", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return "--sim-nodes" in out.stdout


def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Process:
    """One ``lahar ...`` subprocess in its own process group, logging to a file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "lahar.cli.main", *args],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill9()
        return self.proc.returncode


class SimCluster:
    """``lahar up`` plus ``nodes`` simulated nodes of ``cpu``/``memory`` each."""

    def __init__(
        self,
        data_dir: Path,
        *,
        nodes: int = 4,
        cpu: str = "4",
        memory: str = "8Gi",
        up_args: tuple[str, ...] = (),
        sim_args: tuple[str, ...] = ("--ready-delay", "200ms"),
    ) -> None:
        self.data_dir = data_dir
        self.nodes, self.cpu, self.memory = nodes, cpu, memory
        self.sim_args = sim_args
        extra = list(up_args)
        self.embedded_sim = up_has_sim_nodes() and nodes > 0
        if self.embedded_sim:
            extra += ["--sim-nodes", str(nodes), "--sim-node-cpu", cpu, "--sim-node-memory", memory]
        self.cluster = Cluster(data_dir, "up", tuple(extra))
        self.procs: list[Process] = []

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    def start(self) -> SimCluster:
        self.cluster.start()
        if self.nodes and not self.embedded_sim:
            self.spawn(
                "sim",
                "node",
                "sim",
                "--kubeconfig",
                str(self.kubeconfig),
                "--count",
                str(self.nodes),
                "--cpu",
                self.cpu,
                "--memory",
                self.memory,
                *self.sim_args,
            )
        if self.nodes:
            wait_for(lambda: self.ready_nodes() >= self.nodes, 60, f"{self.nodes} Ready nodes")
        return self

    def spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> Process:
        proc = Process(list(args), self.data_dir / f"{name}.log", env)
        self.procs.append(proc)
        return proc

    def scheduler(self, *extra: str) -> Process:
        """A ``lahar scheduler`` process (for ``lahar up --disable scheduler``)."""
        return self.spawn(
            "scheduler",
            "scheduler",
            "--kubeconfig",
            str(self.kubeconfig),
            "--health-port",
            "-1",
            *extra,
        )

    def cleanup(self) -> None:
        for proc in reversed(self.procs):  # the simulator removes its nodes: server still up
            try:
                proc.stop()
            except Exception:  # keep stopping the rest
                proc.kill9()
        self.cluster.cleanup()

    # -- reading the cluster -----------------------------------------------------------

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, **kw)

    def get_json(self, *args: str) -> Any:
        return self.cluster.get_json(*args)

    def ready_nodes(self) -> int:
        items = self.get_json("nodes")["items"]
        return sum(
            1
            for n in items
            for c in (n.get("status") or {}).get("conditions") or ()
            if c.get("type") == "Ready" and c.get("status") == "True"
        )

    def raw(self, path: str) -> str:
        """GET ``path`` from the API server directly (faster than a kubectl process)."""
        ctx = ssl.create_default_context(cafile=str(self.cluster.ca_file()))
        req = urllib.request.Request(
            self.cluster.server_url() + path,
            headers={"Authorization": f"Bearer {self.cluster.token()}"},
        )
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return str(resp.read().decode())

    def binds(self) -> tuple[int, int]:
        """(binding calls answered 201, binding calls answered otherwise), from the API
        server's ``apiserver_request_total``."""
        ok = other = 0
        for line in self.raw("/metrics").splitlines():
            m = BIND_COUNTER.match(line)
            if m:
                if 'code="201"' in m.group(1):
                    ok += int(float(m.group(2)))
                else:
                    other += int(float(m.group(2)))
        return ok, other
