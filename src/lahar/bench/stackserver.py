"""The API server of the whole-stack benchmarks, in a process of its own.

``lahar bench e2e`` and ``lahar bench operator`` measure what one machine sustains.
With every component and the API server on one event loop, one core does all the
work while the other idles (CPython runs one thread at a time), and the figures
measure the loop, not the stack. So the benchmark runs the API server as it runs in a
split-process setup: here, in a child process, with lahar's CRDs and the admission
chain of ``lahar up``, listening on loopback with TLS and a bearer token; the
components reach it over HTTPS through the client seam, exactly as they would reach a
real cluster.

Run as ``python -m lahar.bench.stackserver DATA_DIR``: it writes ``DATA_DIR/kubeconfig``
once it listens and serves until SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import uvloop
import yaml


def main(data_dir: str) -> None:
    from lahar import gctune
    from lahar.apiserver.server import APIServer
    from lahar.embedded import admission_chain, install_crds, install_volcano_admission

    gctune.tune()
    server = APIServer(Path(data_dir), port=0, admission=admission_chain())
    install_volcano_admission(server.state)
    install_crds(server.state)
    server.bind()  # writes the kubeconfig: the parent waits for it
    uvloop.run(server.serve())  # what uvicorn itself would pick; its socket I/O is cheaper


class StackServer:
    """The child process: start it, wait until it answers ``/readyz``, stop it."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = data_dir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def server(self) -> str:
        return str(yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["server"])

    def start(self, timeout: float = 60.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lahar.bench.stackserver", str(self.dir)],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while not self.kubeconfig.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the benchmark's API server did not start")
            time.sleep(0.05)

    async def wait_ready(self, client: object, timeout: float = 60.0) -> None:
        """Until the server answers (it writes its kubeconfig just before serving)."""
        from lahar.kube import rest

        deadline = time.monotonic() + timeout
        while True:
            try:
                await rest.http_client(client).get("/readyz")  # type: ignore[arg-type]
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    def cpu_seconds(self) -> float:
        """CPU time (user + system, all threads) the child has used so far."""
        if self.proc is None:
            return 0.0
        try:
            with open(f"/proc/{self.proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


if __name__ == "__main__":
    main(sys.argv[1])
