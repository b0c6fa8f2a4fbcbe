"""Without the privileges or tools it needs, the pod network says exactly what is missing
and creates nothing. Checked by running the check in a child process that has dropped
root (setpriv) or has an empty PATH; this runs whether or not the tests run as root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

PROBE = """
from pathlib import Path
from lahar.node.local.network import PodNetwork, PodNetworkError, check_privileges
print(check_privileges())
try:
    PodNetwork(Path("/nonexistent/lahar-state"), bridge="ltnopriv0", cidr="10.250.7.0/24",
               owner_tag="ltnopriv").ensure()
except PodNetworkError as err:
    print("REFUSED", err)
else:
    print("CREATED")
"""


def _probe(prefix: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_without_capabilities_it_explains_and_stops() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv (util-linux) to drop privileges in a child")
    out = _probe(
        [
            setpriv,
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]
    )
    assert "CAP_NET_ADMIN" in out and "CAP_SYS_ADMIN" in out
    assert "REFUSED" in out and "CREATED" not in out
    assert subprocess.run(["ip", "link", "show", "ltnopriv0"], capture_output=True).returncode != 0


def test_without_tools_it_names_them() -> None:
    out = _probe([], env={**os.environ, "PATH": "/nonexistent"})
    assert "ip: the iproute2 binary" in out
    assert "nft or iptables" in out
    assert "REFUSED" in out
