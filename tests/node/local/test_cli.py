"""``lahar node local`` and ``lahar up`` without the privileges the local node needs.

``setpriv --bounding-set=-all`` runs the command as root with no capabilities at all,
which is what an unprivileged user looks like to the privilege check.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SETPRIV = shutil.which("setpriv")
LAHAR = [sys.executable, "-m", "lahar.cli.main"]

needs_setpriv = pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is missing")


@needs_setpriv
def test_node_local_says_what_it_needs_and_stops(tmp_path: Path) -> None:
    state = tmp_path / "state"
    res = subprocess.run(
        [SETPRIV, "--bounding-set=-all", "--", *LAHAR, "node", "local", "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2, res.stderr
    assert "CAP_NET_ADMIN" in res.stderr and "CAP_SYS_ADMIN" in res.stderr
    assert "Traceback" not in res.stderr
    assert not state.exists()  # it touched nothing


@needs_setpriv
def test_up_runs_without_the_local_node_and_says_why(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = [*LAHAR, "up", "--data-dir", str(data), "--port", "0"]
    proc = subprocess.Popen(
        [SETPRIV, "--bounding-set=-all", "--", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _ready(data) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.2)
        assert _ready(data)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "running without the local node, which needs:" in err
    assert "CAP_NET_ADMIN" in err and "Traceback" not in err


def _ready(data: Path) -> bool:
    if not (data / "kubeconfig").exists():
        return False
    kubeconfig = str(data / "kubeconfig")
    res = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "get", "--raw", "/readyz"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return res.stdout.strip() == "ok"


def test_bad_local_node_tag_is_a_usage_error(tmp_path: Path) -> None:
    res = subprocess.run(
        [*LAHAR, "node", "local", "--state-dir", str(tmp_path), "--tag", "no-dashes-here"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "1-12 letters, digits or underscores" in res.stderr and "Traceback" not in res.stderr
