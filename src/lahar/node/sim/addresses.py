"""Addresses of simulated nodes and their pods (and what each node has left).

Node number ``i`` of a fleet gets a fixed InternalIP and a /24 pod CIDR derived from
``i``, so a restarted simulator gives its nodes the same addresses, and pods get IPs
from their node's range, handed out and taken back as they start and end (a pod that
is already running keeps the IP its status reports).
"""

from __future__ import annotations


def node_ips(index: int) -> tuple[str, str]:
    """(InternalIP, pod CIDR) of the simulated node number ``index``: node IPs from
    10.0.0.0/16, a /24 of pod IPs each from 10.64.0.0/10 (up to 16,384 nodes)."""
    if not 0 <= index < 16384:
        raise ValueError("at most 16384 simulated nodes per agent")
    return f"10.0.{index // 250}.{index % 250 + 2}", f"10.{64 + (index >> 8)}.{index & 255}.0/24"


class SimNode:
    """One simulated node's addresses and the pod IPs it handed out."""

    __slots__ = (
        "_next",
        "_used",
        "allocatable",
        "host_ip",
        "index",
        "name",
        "pod_prefix",
        "requested",
    )

    def __init__(
        self,
        name: str,
        index: int,
        host_ip: str,
        pod_cidr: str,
        allocatable: dict[str, int] | None = None,
    ) -> None:
        self.name = name
        self.index = index
        self.host_ip = host_ip
        self.allocatable = allocatable or {}  # milli-units, for admission
        self.requested: dict[str, int] = {}  # what its admitted pods take
        self.pod_prefix = pod_cidr.rsplit(".", 1)[0] + "."  # a /24
        self._used: set[int] = set()
        self._next = 2

    def allocate_ip(self) -> str:
        for _ in range(253):
            host, self._next = self._next, self._next % 254 + 1
            if host not in self._used and host != 1:
                self._used.add(host)
                return f"{self.pod_prefix}{host}"
        return f"{self.pod_prefix}254"  # every address in use: share one (pods beyond 253)

    def reserve_ip(self, ip: str) -> bool:
        if not ip.startswith(self.pod_prefix):
            return False
        host = ip[len(self.pod_prefix) :]
        if not host.isdigit():
            return False
        self._used.add(int(host))
        return True

    def release_ip(self, ip: str | None) -> None:
        if ip and ip.startswith(self.pod_prefix):
            host = ip[len(self.pod_prefix) :]
            if host.isdigit():
                self._used.discard(int(host))
