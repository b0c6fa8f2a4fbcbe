"""Subprocesses for the multi-process tests: a real HTTPS ``lahar apiserver`` and
helpers to stop whatever a test started, even when it fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``python args...`` from the repo root in its own session, output to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, *args],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(
    proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM, timeout: float = 10.0
) -> None:
    """Signal ``proc``'s process group and wait; SIGKILL if it does not exit."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    except ProcessLookupError:
        pass


class ApiServerProcess:
    """``python -m lahar.cli.main apiserver --data-dir D --port P`` on a private dir."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    def start(self, port: int = 0, timeout: float = 30.0) -> ApiServerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        self.proc = spawn(
            [
                "-m",
                "lahar.cli.main",
                "apiserver",
                "--data-dir",
                str(self.data_dir),
                "--port",
                str(port),
            ],
            self.data_dir / "apiserver.log",
        )
        deadline = time.monotonic() + timeout
        while not self.kubeconfig.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.data_dir / "apiserver.log").read_text()
                stop(self.proc)
                raise RuntimeError(f"apiserver did not start:\n{log}")
            time.sleep(0.05)
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        self.port = int(cfg["clusters"][0]["cluster"]["server"].rsplit(":", 1)[1])
        return self

    def kill9(self) -> None:
        stop(self.proc, signal.SIGKILL)

    def stop(self) -> None:
        stop(self.proc)
