"""The load of ``lahar bench e2e``: a client process of its own that creates the pods.

In a cluster, pods come from users and controllers, not from the scheduler's process.
Creating them on the components' event loop made the benchmark's load and the system
under test share one interpreter lock: every session slowed the creates, and the
creates slowed every session. So the split-process benchmark creates its pods here,
in a child process with its own connection pool, and reports this process's CPU time
apart (``cpu_ms_per_pod.load``).

Run as ``python -m lahar.bench.loadgen KUBECONFIG BODIES OUT CONCURRENCY``: it reads
the pod bodies (a JSON list), connects, prints ``ready``, waits for a line on stdin,
creates the pods with at most ``CONCURRENCY`` requests in flight, and writes to
``OUT`` each pod's create time and its own CPU seconds. Times are
``time.perf_counter()``, CLOCK_MONOTONIC on Linux: one clock for every process of the
machine, so the parent compares them with its own bind times.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["LoadProcess"]


class LoadProcess:
    """The child process, from the parent's side: start, go, collect, close."""

    def __init__(self, kubeconfig: Path, bodies: list[dict[str, Any]], workdir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.bodies_path = workdir / "load-bodies.json"
        self.out_path = workdir / "load-out.json"
        self.bodies_path.write_text(json.dumps(bodies))
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self, concurrency: int) -> None:
        """Start the child; return once it is connected and waits for the go."""
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "lahar.bench.loadgen",
            str(self.kubeconfig),
            str(self.bodies_path),
            str(self.out_path),
            str(concurrency),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert self._proc.stdout is not None
        line = await asyncio.wait_for(self._proc.stdout.readline(), 60)
        if line.strip() != b"ready":
            raise RuntimeError("the load process did not start")

    async def run(self) -> tuple[dict[str, float], float]:
        """Create every pod; returns (pod name -> create time, CPU seconds)."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
        if await proc.wait() != 0:
            raise RuntimeError(f"the load process failed (exit code {proc.returncode})")
        got = json.loads(self.out_path.read_text())
        return {str(k): float(v) for k, v in got["created"].items()}, float(got["cpu_seconds"])

    async def close(self) -> None:
        """Stop the child if it still runs (a benchmark that failed midway)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def _create_all(kubeconfig: str, bodies_path: str, out: str, concurrency: int) -> None:
    from lahar.kube import client as kclient
    from lahar.kube import rest

    bodies: list[dict[str, Any]] = json.loads(Path(bodies_path).read_text())
    client = kclient.from_kubeconfig(
        kubeconfig, field_manager="bench-load", max_connections=concurrency
    )
    created: dict[str, float] = {}
    try:
        await rest.request(client, "GET", "/version")  # connect (and handshake) before the go
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        cpu = time.process_time()
        sem = asyncio.Semaphore(concurrency)

        async def create(body: dict[str, Any]) -> None:
            md = body["metadata"]
            async with sem:
                created[md["name"]] = time.perf_counter()
                await rest.request(
                    client, "POST", f"/api/v1/namespaces/{md['namespace']}/pods", body=body
                )

        await asyncio.gather(*(create(b) for b in bodies))
        cpu = time.process_time() - cpu
    finally:
        await client.close()
    Path(out).write_text(json.dumps({"created": created, "cpu_seconds": cpu}))


def main(argv: list[str]) -> None:
    from lahar import eventloop

    eventloop.install()
    kubeconfig, bodies, out, concurrency = argv
    asyncio.run(_create_all(kubeconfig, bodies, out, int(concurrency)))


if __name__ == "__main__":
    main(sys.argv[1:])
