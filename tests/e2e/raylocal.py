"""Helpers of the real-Ray end-to-end tests (``test_ray_local``): a ``lahar up`` with
the local node on a bridge, CIDR and owner tag of its own, RayJob manifests, waiting on
RayJob status, and finding what a pod left on the machine (processes, namespaces,
veths, bridges, nft tables).

Processes of a pod are found through its PID namespace: the shim records the
container's first pid (``<data>/node-local/pods/<uid>/run/*.started.json``) and every
process of the container shares that pid's namespace, so a namespace recorded while
the pod ran identifies every one of its processes afterwards, whatever their names.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lahar.bench.rayjob import free_cidr, small_rayjob
from tests.e2e.cluster import Cluster

T = TypeVar("T")
TERMINAL_JOB = ("SUCCEEDED", "FAILED", "STOPPED")
TERMINAL_DEPLOYMENT = ("Complete", "Failed")

__all__ = ["small_rayjob"]


class Prefixes:
    """Names of everything this module's clusters create, for the leak checks."""

    def __init__(self) -> None:
        suffix = secrets.token_hex(3)
        self.tag = f"lt{suffix}"  # owner tag prefix: netns names, veth aliases
        self.bridge = f"ltb{suffix}"  # bridge name prefix (and so nft table names)
        self.count = 0
        self.pidns: set[str] = set()  # PID namespaces of every pod seen
        self.names: dict[Cluster, tuple[str, str]] = {}  # owner tag and bridge

    def cluster(self, data_dir: Path, *extra: str) -> Cluster:
        """A (not yet started) ``lahar up`` with the local node, named uniquely."""
        self.count += 1
        tag, bridge = f"{self.tag}{self.count}", f"{self.bridge}{self.count}"
        args = ("--local-node-bridge", bridge, "--local-node-cidr", free_cidr())
        args = (*args, "--local-node-tag", tag, *extra)
        c = Cluster(data_dir, "up", args, local_node=True)
        self.names[c] = (tag, bridge)
        return c

    def leftovers(self, root: Path, cluster: Cluster | None = None) -> dict[str, list[str]]:
        """Whatever of this module (or of one of its clusters) is still on the machine."""
        tag, bridge = self.names[cluster] if cluster is not None else (self.tag, self.bridge)
        out: dict[str, list[str]] = {}
        with contextlib.suppress(FileNotFoundError):
            out["netns"] = sorted(n for n in os.listdir("/run/netns") if n.startswith(tag))
        links = json.loads(_run(["ip", "-j", "link"]) or "[]")
        out["links"] = sorted(
            link["ifname"]
            for link in links
            if link["ifname"].startswith(bridge) or str(link.get("ifalias", "")).startswith(tag)
        )
        out["nft"] = [t for t in _run(["nft", "list", "tables"]).splitlines() if tag in t]
        out["processes"] = [
            f"{pid}: {cmd[:160]}"
            for pid, cmd in processes()
            if str(root) in cmd or pid_namespace(pid) in self.pidns
        ]
        out["dirs"] = [str(root)] if root.exists() else []
        return {k: v for k, v in out.items() if v}

    def record(self, cluster: Cluster) -> dict[str, str]:
        """PID namespace of each running pod (by uid), remembered for the leak checks."""
        found = pod_pid_namespaces(cluster.data_dir)
        self.pidns |= set(found.values())
        return found


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


def processes() -> list[tuple[int, str]]:
    """(pid, command line) of every process on the machine."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            out.append((int(entry), raw.replace(b"\0", b" ").decode(errors="replace")))
    return out


def pid_namespace(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pod_pid_namespaces(data_dir: Path) -> dict[str, str]:
    """uid -> PID namespace of each pod's live containers (from the shims' files).

    A pid is trusted only while its shim (whose command line names the pod's uid) is
    alive and is its parent, so a recycled pid is never taken for a container."""
    found: dict[str, str] = {}
    for started in (data_dir / "node-local" / "pods").glob("*/run/*.started.json"):
        uid = started.parts[-3]
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(started.read_text())
            pid, shim = int(data.get("pid", 0)), int(data.get("shim", 0))
            shim_cmd = Path(f"/proc/{shim}/cmdline").read_bytes().decode(errors="replace")
            if not pid or uid not in shim_cmd or _ppid(pid) != shim:
                continue
            ns = pid_namespace(pid)
            if ns and ns != pid_namespace(os.getpid()):
                found.setdefault(uid, ns)
    return found


def in_namespaces(namespaces: set[str]) -> list[str]:
    return [f"{pid}: {cmd[:160]}" for pid, cmd in processes() if pid_namespace(pid) in namespaces]


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, every: float = 1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def rayjob_status(c: Cluster, ns: str, name: str) -> dict[str, Any]:
    return dict(c.get_json("rayjob", name, "-n", ns).get("status") or {})


def wait_terminal(c: Cluster, ns: str, name: str, timeout: float) -> dict[str, Any]:
    """The RayJob's status once both its job and its deployment are terminal."""

    def done() -> dict[str, Any] | None:
        st = rayjob_status(c, ns, name)
        ended = st.get("jobDeploymentStatus") in TERMINAL_DEPLOYMENT
        return st if ended and st.get("jobStatus") in TERMINAL_JOB else None

    try:
        return wait_for(f"RayJob {ns}/{name} to end", done, timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; status: {rayjob_status(c, ns, name)}") from None


def pods(c: Cluster, ns: str, selector: str | None = None) -> list[dict[str, Any]]:
    args = ["pods", "-n", ns] + (["-l", selector] if selector else [])
    return list(c.get_json(*args)["items"])


def delete_all(c: Cluster, ns: str, timeout: float = 120) -> None:
    """Delete every RayJob and RayCluster of ``ns`` and wait until its pods are gone."""
    c.kubectl("delete", "rayjob,raycluster", "--all", "-n", ns, "--wait=false", check=False)
    wait_for(f"the pods of {ns} to be gone", lambda: not pods(c, ns) or None, timeout)


def ray_status(head_ip: str) -> str:
    """``ray status`` from the host against the head's GCS (reached over the bridge)."""
    ray = Path(os.environ.get("VIRTUAL_ENV", "")) / "bin" / "ray"
    if not ray.exists():
        import sys

        ray = Path(sys.executable).parent / "ray"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(
        [str(ray), "status", "--address", f"{head_ip}:6379"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    return proc.stdout + proc.stderr


def listed_nodes(status_text: str) -> int:
    """How many live nodes ``ray status`` lists (its "Active:" and "Idle:" sections,
    as ``1 node_<id>`` or, with KubeRay's node types, ``1 headgroup``)."""
    count, live = 0, False
    for line in status_text.splitlines():
        stripped = line.strip()
        if stripped in ("Active:", "Idle:"):
            live = True
        elif stripped.endswith(":"):
            live = False
        elif live and re.fullmatch(r"\d+ \S+", stripped):
            count += int(stripped.split()[0])
    return count
