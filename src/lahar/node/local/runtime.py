"""Container runs as shim processes: start, watch, signal, adopt and reap them.

The agent's side of ``shim``. A run is one start of one container: a spec file, the
shim's ``started`` file (the shim's pid and the container's first pid), its CRI log and,
at the end, its ``exit`` file, all under ``<pod dir>/run/<container>.<restart>.*``. The
agent never waits on a child: it watches the shim through a pidfd, so a run started by
an earlier agent (before a crash) is watched exactly like its own.

Stopping signals the container's process group (the container's first process leads
it), SIGTERM first and SIGKILL after the grace period. SIGKILL to the first process
ends its PID namespace, so the kernel kills every process the container left behind.
A pid is trusted only together with its start time, so a recycled pid is never
mistaken for a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ExitStatus:
    exit_code: int
    finished: float
    reason: str = ""
    message: str = ""
    signal: int | None = None


def _start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if fields[0] == b"Z":
        return None  # a zombie has finished
    return int(fields[19])


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


@dataclass
class Run:
    """One container run, started here or adopted."""

    base: Path  # <pod dir>/run/<container>.<restart>
    container: str
    restart: int
    shim_pid: int = 0
    pid: int = 0  # the container's first process, in the host's pid namespace
    pid_start: int | None = None
    started: float = 0.0
    proc: subprocess.Popen[bytes] | None = None

    def file(self, suffix: str) -> Path:
        return self.base.with_name(self.base.name + suffix)

    @property
    def spec_file(self) -> Path:
        return self.file(".spec.json")

    @property
    def started_file(self) -> Path:
        return self.file(".started.json")

    @property
    def exit_file(self) -> Path:
        return self.file(".exit.json")

    def alive(self) -> bool:
        return bool(self.pid) and _start_time(self.pid) == self.pid_start

    def exit_status(self) -> ExitStatus | None:
        data = _read_json(self.exit_file)
        if data is None:
            return None
        return ExitStatus(
            exit_code=int(data.get("exit_code", 128)),
            finished=float(data.get("finished", 0.0)),
            reason=str(data.get("reason", "")),
            message=str(data.get("message", "")),
            signal=data.get("signal"),
        )

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the container's process group (if it is still this run's)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
            if sig == signal.SIGKILL:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)


def run_base(pod_dir: Path, container: str, restart: int) -> Path:
    return pod_dir / "run" / f"{container}.{restart}"


def start(pod_dir: Path, container: str, restart: int, spec: dict[str, Any]) -> Run:
    """Write the spec and start the shim; returns once the container's pid is known."""
    run = Run(run_base(pod_dir, container, restart), container, restart)
    run.base.parent.mkdir(parents=True, exist_ok=True)
    for stale in (run.started_file, run.exit_file):
        stale.unlink(missing_ok=True)
    full = dict(spec, started_file=str(run.started_file), exit_file=str(run.exit_file))
    run.spec_file.write_text(json.dumps(full))
    with open(run.file(".shim.log"), "ab") as shim_log:  # the child keeps its own copy
        run.proc = subprocess.Popen(
            [sys.executable, "-m", "lahar.node.local.shim", str(run.spec_file)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=shim_log,
            close_fds=True,
        )
    run.shim_pid = run.proc.pid
    return run


async def wait_started(run: Run, timeout: float = 30.0) -> bool:
    """Wait until the shim has forked the container (False if the shim failed first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        data = _read_json(run.started_file)
        if data is not None:
            run.pid = int(data["pid"])
            run.started = float(data["at"])
            run.pid_start = _start_time(run.pid)
            # Remember the start time with the pid, so an adopting agent can tell this
            # process from a later one that got the same pid.
            run.file(".pidstart").write_text(str(run.pid_start))
            return True
        if run.exit_file.exists() or (run.proc is not None and run.proc.poll() is not None):
            return False
        await asyncio.sleep(0.01)
    return False


async def wait_exit(run: Run) -> ExitStatus:
    """Wait for the shim to end, then read the exit status it wrote."""
    if run.exit_status() is None and (run.proc is not None or shim_alive(run)):
        await _wait_pid(run.shim_pid, run.proc)
    status = run.exit_status()
    if status is not None:
        return status
    # The shim died without a word (SIGKILL, or a crash): the container was killed with it.
    return ExitStatus(exit_code=137, finished=time.time(), reason="Error", signal=signal.SIGKILL)


async def _wait_pid(pid: int, proc: subprocess.Popen[bytes] | None) -> None:
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        if proc is not None:
            proc.wait()
        return
    done = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)
        if proc is not None:
            proc.wait()


def adopt(pod_dir: Path) -> dict[str, Run]:
    """The latest run of each container under ``pod_dir`` (an earlier agent's, too)."""
    runs: dict[str, Run] = {}
    run_dir = pod_dir / "run"
    if not run_dir.is_dir():
        return runs
    for spec_file in run_dir.glob("*.spec.json"):
        stem = spec_file.name[: -len(".spec.json")]
        container, _, restart_s = stem.rpartition(".")
        if not restart_s.isdigit():
            continue
        run = Run(run_base(pod_dir, container, int(restart_s)), container, int(restart_s))
        data = _read_json(run.started_file)
        if data is not None:
            run.shim_pid, run.pid = int(data["shim"]), int(data["pid"])
            run.started = float(data["at"])
            try:
                run.pid_start = int(run.file(".pidstart").read_text())
            except (OSError, ValueError):
                run.pid_start = _start_time(run.pid)
        current = runs.get(container)
        if current is None or current.restart < run.restart:
            runs[container] = run
    return runs


def shim_alive(run: Run) -> bool:
    return bool(run.shim_pid) and _start_time(run.shim_pid) is not None


async def stop(run: Run, grace: float) -> ExitStatus:
    """SIGTERM, the grace period, then SIGKILL; returns the exit status."""
    if run.exit_status() is not None or not shim_alive(run):
        return await wait_exit(run)
    run.signal(signal.SIGTERM)
    try:
        return await asyncio.wait_for(asyncio.shield(wait_exit(run)), timeout=max(grace, 0.0))
    except TimeoutError:
        run.signal(signal.SIGKILL)
        return await wait_exit(run)


def kill_everything(pod_dir: Path) -> None:
    """SIGKILL every live run of the pod (used when cleaning up after a crash)."""
    run_dir = pod_dir / "run"
    if not run_dir.is_dir():
        return
    for started in run_dir.glob("*.started.json"):
        data = _read_json(started) or {}
        pid = int(data.get("pid", 0))
        if pid and _start_time(pid) is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
