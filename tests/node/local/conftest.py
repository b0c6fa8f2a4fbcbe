"""Fixtures for the pod network tests: a PodNetwork with a unique bridge, owner tag and
CIDR per test, and helpers that run small TCP servers and clients in pod namespaces.

Everything a test creates (namespaces, veths, bridge, nft table, servers, temp dir) is
removed in `finally`, pass or fail. The tests need root: without it they are skipped
with the exact list of what is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lahar.node.local.network import (
    PodEndpoint,
    PodNetwork,
    check_privileges,
    free_cidr,
    netns_exec_argv,
)

SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8)
print("ready", flush=True)
while True:
    c, peer = s.accept()
    c.sendall(f"{sys.argv[3]} from {peer[0]}".encode()); c.close()
"""

CLIENT = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
print(c.recv(200).decode())
"""


@pytest.fixture
def require_root() -> None:
    problem = check_privileges()
    if problem:
        pytest.skip(f"the pod network tests need root privileges and tools: {problem}")


@pytest.fixture
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lahar-net-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _purge(tag: str, bridge: str) -> None:
    """Belt and braces: remove anything named after this test's tag or bridge."""
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir("/run/netns"):
            if name.startswith(tag):
                subprocess.run(["ip", "netns", "delete", name], capture_output=True)
    out = subprocess.run(["ip", "-j", "link"], capture_output=True, text=True).stdout
    for link in json.loads(out or "[]"):
        if str(link.get("ifalias", "")).startswith(tag) or link["ifname"] == bridge:
            subprocess.run(["ip", "link", "delete", link["ifname"]], capture_output=True)
    subprocess.run(["nft", "delete", "table", "ip", f"{tag}_{bridge}_nat"], capture_output=True)


@pytest.fixture
def net_factory(require_root: None, state_dir: Path) -> Iterator[tuple[str, str, str, Path]]:
    """(tag, bridge, cidr, state_dir) unique to this test; purged afterwards."""
    suffix = secrets.token_hex(3)
    tag, bridge = f"lt{suffix}", f"ltb{suffix}"
    forward_before = Path("/proc/sys/net/ipv4/ip_forward").read_text()
    try:
        yield tag, bridge, free_cidr(), state_dir
    finally:
        _purge(tag, bridge)
        Path("/proc/sys/net/ipv4/ip_forward").write_text(forward_before)


@pytest.fixture
def net(net_factory: tuple[str, str, str, Path]) -> Iterator[PodNetwork]:
    tag, bridge, cidr, state = net_factory
    network = PodNetwork(state, bridge=bridge, cidr=cidr, owner_tag=tag)
    try:
        network.ensure()
        yield network
    finally:
        network.teardown()


class Processes:
    """Servers started by a test; all are killed (by process group) at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def serve(self, argv_prefix: list[str], host: str, port: int, label: str) -> None:
        proc = subprocess.Popen(
            [*argv_prefix, sys.executable, "-c", SERVER, host, str(port), label],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line

    def close(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(timeout=10)
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()


@pytest.fixture
def procs() -> Iterator[Processes]:
    p = Processes()
    try:
        yield p
    finally:
        p.close()


def fetch_in(endpoint: PodEndpoint | None, host: str, port: int) -> str:
    """Connect to host:port from the pod's namespace (or the host if None); the greeting."""
    argv = [sys.executable, "-c", CLIENT, host, str(port)]
    if endpoint is not None:
        argv = netns_exec_argv(endpoint, argv)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def fetch(host: str, port: int, attempts: int = 50) -> str:
    """Connect from the test process itself, retrying briefly."""
    for _ in range(attempts):
        try:
            with socket.create_connection((host, port), timeout=2) as conn:
                return conn.recv(200).decode()
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"cannot reach {host}:{port}")


def host_listeners() -> set[str]:
    """Local addresses of the TCP listeners in the root namespace (`ss -ltn`)."""
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    return {line.split()[3] for line in out.splitlines() if line.strip()}
