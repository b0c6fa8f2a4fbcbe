"""What every pod worker of the local node shares: the agent's side of the seam.

A :class:`NodeContext` is built once by the agent and handed to each
:class:`~lahar.node.local.pods.PodWorker`: the client and the per-pod write queue, the
event recorder, the pod network (None for host-network-only operation), where pod
directories live, the "image" environment every container starts from, and the
lookups a pod needs (ConfigMaps, Secrets, its /etc/hosts).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightkube

from lahar.kube.cache import Cache
from lahar.kube.events import EventRecorder
from lahar.node.local.env import Lookups
from lahar.node.local.network import PodNetwork
from lahar.node.writer import WriteQueue

Obj = dict[str, Any]

# Host variables a container inherits, as if its image had set them: how to reach the
# package index (Ray's runtime_env pip installs), certificates and the locale.
INHERITED = re.compile(
    r"(PIP_.*|UV_.*|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy|SSL_CERT_.*|REQUESTS_CA_BUNDLE"
    r"|CURL_CA_BUNDLE|LANG|LC_.*|TZ)"
)
# Ray's default drain on SIGTERM is 30 s, as long as a pod's whole grace period: a head
# being deleted would always be killed. Five seconds lets it stop cleanly in time.
RAY_DEFAULTS = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "5", "RAY_USAGE_STATS_ENABLED": "0"}


def image_env(
    path_prepend: list[str] | None = None,
    host_env: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment every container starts from (what an image's ENV would give).

    PATH puts the directories of ``path_prepend`` (default: the directory of the running
    Python, where lahar and Ray are installed) before the host's PATH.
    """
    host = dict(os.environ if host_env is None else host_env)
    first = path_prepend if path_prepend is not None else [str(Path(sys.executable).parent)]
    rest = host.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    parts = [p for p in first if p] + [p for p in rest.split(":") if p and p not in first]
    env = {k: v for k, v in host.items() if INHERITED.fullmatch(k)}
    env.update(RAY_DEFAULTS)
    env["PATH"] = ":".join(parts)
    env["HOME"] = host.get("HOME", "/root")
    env.update(extra or {})
    return env


@dataclass
class NodeContext:
    client: lightkube.AsyncClient
    writer: WriteQueue
    events: EventRecorder
    network: PodNetwork | None
    node_name: str
    host_ip: str
    root: Path  # <state dir>/pods
    base_env: dict[str, str]
    lookups: Lookups
    pods: Cache  # the pod informer's cache
    hosts_for: Callable[[Obj, str], str]  # (pod, its IP) -> /etc/hosts
    # Container paths the other pods here mount volumes at (pod uid to leave out).
    paths_in_use: Callable[[str], set[str]] = lambda _uid: set()
    allocatable: dict[str, str] = field(default_factory=dict)
    # Host paths under /tmp that containers need anyway (see sandbox.kept_under_tmp).
    keep_paths: list[str] = field(default_factory=list)
    stop_grace: float = 5.0  # the longest a container gets when the agent itself stops

    def pod_dir(self, uid: str) -> Path:
        return self.root / uid
