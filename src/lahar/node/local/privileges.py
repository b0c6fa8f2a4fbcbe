"""What the local node needs from the machine before it may touch the network.

Creating namespaces, veths, a bridge and NAT rules needs CAP_NET_ADMIN (links, routes,
nftables), CAP_SYS_ADMIN (`ip netns add` bind-mounts the namespace and `ip netns exec`
unshares a mount namespace), the `ip` binary of iproute2, and either `nft` or
`iptables`. The agent asks `missing_privileges()` first and, if anything is listed,
prints the list and stops instead of failing half-way through a set-up.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


@dataclass(frozen=True)
class Requirement:
    """One missing thing and how to provide it."""

    name: str
    why: str
    fix: str

    def __str__(self) -> str:
        return f"{self.name}: {self.why} ({self.fix})"


def effective_capabilities() -> int:
    """The calling process's effective capability set, as a bit mask (0 if unreadable)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def nat_tool() -> str | None:
    """`nft` if present (preferred), else `iptables`, else None."""
    for tool in ("nft", "iptables"):
        if shutil.which(tool):
            return tool
    return None


def missing_privileges() -> list[Requirement]:
    """Everything the pod network needs that this process lacks; empty when all is there."""
    missing: list[Requirement] = []
    caps = effective_capabilities()
    if not caps & (1 << CAP_NET_ADMIN):
        missing.append(
            Requirement(
                "CAP_NET_ADMIN",
                "needed to create the bridge, veth pairs, addresses, routes and NAT rules",
                "run as root or grant the capability, e.g. setcap/ambient capabilities",
            )
        )
    if not caps & (1 << CAP_SYS_ADMIN):
        missing.append(
            Requirement(
                "CAP_SYS_ADMIN",
                "needed by `ip netns add` (bind mount of the namespace) and `ip netns exec`",
                "run as root or grant the capability",
            )
        )
    if shutil.which("ip") is None:
        missing.append(
            Requirement(
                "ip", "the iproute2 binary manages links and namespaces", "install iproute2"
            )
        )
    if nat_tool() is None:
        missing.append(
            Requirement(
                "nft or iptables",
                "needed for the masquerade rule that gives pods outbound access",
                "install nftables (preferred) or iptables",
            )
        )
    return missing


def explain(missing: list[Requirement]) -> str:
    """A message the agent prints before it stops; empty when nothing is missing."""
    if not missing:
        return ""
    lines = ["the local pod network cannot be set up; missing:"]
    lines += [f"  - {req}" for req in missing]
    return "\n".join(lines)
