"""Running a real ``lahar`` server process for end-to-end tests, and kubectl against it.

Every process a test starts is stopped, and every temp dir removed, even when the
test fails: the fixtures own them and clean up in ``finally``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "kuberay"


class KubectlError(AssertionError):
    pass


class Cluster:
    """A ``lahar apiserver`` or ``lahar up`` subprocess on a private data dir."""

    def __init__(
        self,
        data_dir: Path,
        command: str = "apiserver",
        extra: tuple[str, ...] = (),
        *,
        local_node: bool = False,
    ) -> None:
        self.data_dir = data_dir
        self.command = command
        # `lahar up` runs the local node by default; only the tests about it want one
        # (it owns a bridge and pod namespaces, and real processes run on it).
        if command == "up" and not local_node:
            extra = ("--no-local-node", *extra)
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self.cache_dir = Path(tempfile.mkdtemp(prefix="lahar-kubectl-cache-"))
        self.log_path = data_dir / f"{command}.log"

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    def start(self, timeout: float = 30.0) -> Cluster:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lahar.cli.main",
                self.command,
                "--data-dir",
                str(self.data_dir),
                "--port",
                "0",
                *self.extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"lahar {self.command} exited early:\n{self.log_path.read_text()}"
                )
            if self.kubeconfig.exists():
                try:
                    if self.kubectl("get", "--raw", "/readyz", check=False).stdout.strip() == "ok":
                        return self
                except subprocess.TimeoutExpired:
                    pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(
            f"lahar {self.command} did not become ready:\n{self.log_path.read_text()}"
        )

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int | None:
        code = None
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                code = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                code = self.proc.wait(5)
        elif self.proc is not None:
            code = self.proc.returncode
        if getattr(self, "_log", None):
            self._log.close()
        return code

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def kill(self) -> None:
        """SIGKILL the lahar process alone (not its group), as a crash would: what it
        started in sessions of their own (the local node's shims) lives on."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        if getattr(self, "_log", None):
            self._log.close()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        cmd = [
            KUBECTL,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache_dir),
            *args,
        ]
        res = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise KubectlError(
                f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stderr}\n{res.stdout}"
            )
        return res

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def apply_yaml(self, docs: Any, *extra: str) -> subprocess.CompletedProcess[str]:
        text = yaml.safe_dump_all(docs if isinstance(docs, list) else [docs])
        return self.kubectl("apply", "-f", "-", *extra, input=text)

    def token(self) -> str:
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        return cfg["users"][0]["user"]["token"]

    def server_url(self) -> str:
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        return cfg["clusters"][0]["cluster"]["server"]

    def ca_file(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"
