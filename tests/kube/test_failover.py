"""Leader election between processes against a real HTTPS API server process.

Two elector processes share a Lease. The leader is killed with SIGKILL: the other
takes over only once the lease has expired, and the two leadership intervals never
overlap. Then a third process stands by and the leader shuts down cleanly: the Lease
is released and the standby takes over at once, still without overlap.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kube.elector_main import TIMING
from tests.kube.procs import ApiServerProcess, spawn, stop


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[ApiServerProcess]:
    srv = ApiServerProcess(tmp_path / "api")
    try:
        yield srv.start()
    finally:
        srv.stop()


def events(path: Path) -> list[tuple[str, float]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        name, _, when = line.partition(" ")
        rows.append((name, float(when)))
    return rows


def first(path: Path, name: str) -> float | None:
    return next((t for n, t in events(path) if n == name), None)


def wait_for(path: Path, name: str, timeout: float = 20.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = first(path, name)
        if t is not None:
            return t
        time.sleep(0.02)
    raise AssertionError(f"{path.name}: no {name!r} within {timeout}s: {events(path)}")


def acts(path: Path) -> list[float]:
    return [t for n, t in events(path) if n == "act"]


def test_failover_between_processes(apiserver: ApiServerProcess, tmp_path: Path) -> None:
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs = {name: tmp_path / f"{name}.events" for name in ("a", "b", "c")}

    def start(name: str) -> None:
        procs[name] = spawn(
            ["-m", "tests.kube.elector_main", str(apiserver.kubeconfig), str(logs[name]), name],
            tmp_path / f"{name}.out",
        )

    try:
        start("a")
        a_acquired = wait_for(logs["a"], "acquired")
        start("b")
        wait_for(logs["b"], "started")
        time.sleep(TIMING["lease_duration"] * 1.5)  # b stands by while a renews
        assert first(logs["b"], "acquired") is None

        killed = time.time()
        stop(procs["a"], signal.SIGKILL)
        b_acquired = wait_for(logs["b"], "acquired")
        a_last = max(acts(logs["a"]))
        assert a_acquired < a_last <= killed < b_acquired
        # b waited for the lease to expire: at least the duration since a's last renewal,
        # which was at most one retry period before the kill
        waited = b_acquired - killed
        assert waited >= TIMING["lease_duration"] - TIMING["retry_period"] - 0.5, waited
        assert waited < TIMING["lease_duration"] + 3.0, waited

        start("c")
        wait_for(logs["c"], "started")
        time.sleep(TIMING["lease_duration"] * 1.5)
        assert first(logs["c"], "acquired") is None
        stop(procs["b"], signal.SIGTERM)  # clean: releases the lease
        assert procs["b"].returncode == 0
        b_stopped = wait_for(logs["b"], "stopped")
        c_acquired = wait_for(logs["c"], "acquired")
        assert max(acts(logs["b"])) <= b_stopped < c_acquired
        assert c_acquired - b_stopped < TIMING["lease_duration"]  # no wait for expiry
        # no two leaders at any time: the act lines of one process never fall inside
        # another's leadership
        intervals = {
            "a": (a_acquired, killed),
            "b": (b_acquired, b_stopped),
            "c": (c_acquired, float("inf")),
        }
        for x, (x0, x1) in intervals.items():
            for y, (y0, y1) in intervals.items():
                if x < y:
                    assert x1 <= y0 or y1 <= x0, (x, y, intervals)
    finally:
        for proc in procs.values():
            stop(proc)
