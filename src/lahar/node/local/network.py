"""The pod network: a bridge, one network namespace per pod, and outbound NAT.

This is what a CNI plugin does for a kubelet, done directly with iproute2. Every pod
gets a named network namespace (`<owner>-<12 chars of its uid>`) joined to a bridge by
a veth pair, an address from the pod CIDR on its `eth0`, and a default route via the
bridge's gateway address. Inside its namespace a pod has its own loopback and its own
ports, so KubeRay's fixed ports (6379, 8265, 10001, ...) work unchanged for any number
of clusters and Ray's wildcard listeners bind nothing on the host's interfaces. Pods
reach each other and the host over the bridge, and the outside world through one
masquerade rule (see `nat`) with IPv4 forwarding on.

Nothing may outlive a pod, the agent's stop, or a crash of the agent. Everything
created is tagged: namespace names carry the owner prefix, host-side veths carry the
alias `<owner>:<pod uid>`, the NAT rule and the previous `ip_forward` value are
recorded in a state file, and addresses are persisted by `ipam`. A restarted agent
calls `cleanup_orphans(live_uids)` to remove whatever belongs to pods that are gone;
`teardown()` removes all of it.

Processes run in a pod's namespace through `netns_exec_argv`: `ip netns exec NAME
argv...` enters the namespace (and a private mount namespace with the pod's own /sys
and /etc/netns/NAME files) and then execs argv, so the pid the agent starts with
`start_new_session=True` is the pod's process and its process-group leader.

DNS: `ip netns exec` bind-mounts /etc/netns/NAME/resolv.conf over /etc/resolv.conf if
it exists; otherwise pods use the host's resolv.conf, which works as long as the name
server is not a loopback address of the host (the NAT rule carries pod traffic to it).
With both in place, `pip install` inside a pod reaches PyPI exactly as the host does.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lahar.node.local import nat
from lahar.node.local.ipam import AddressPool
from lahar.node.local.privileges import explain, missing_privileges, nat_tool

IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")


class PodNetworkError(RuntimeError):
    """The pod network cannot be set up (missing privileges, clashing routes, ...)."""


@dataclass(frozen=True)
class PodEndpoint:
    """A pod's place on the network."""

    pod_uid: str
    netns_name: str
    ip: str
    veth_host: str


def routes() -> list[ipaddress.IPv4Network]:
    """The destinations of this machine's IPv4 routes (the default route left out)."""
    nets = []
    for route in _ip_json("-4", "route", "show"):
        dst = str(route.get("dst", "default"))
        if dst != "default":
            nets.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
    return nets


def free_cidr(exclude: tuple[ipaddress.IPv4Network, ...] = ()) -> str:
    """A random 10.x.y.0/24 (x in 100..249) that overlaps no route of this machine nor
    ``exclude``: a pod CIDR for a second, short-lived node (tests, benchmarks)."""
    import secrets

    taken = [*routes(), *exclude]
    for _ in range(200):
        net = ipaddress.IPv4Network(
            f"10.{secrets.randbelow(150) + 100}.{secrets.randbelow(256)}.0/24"
        )
        if not any(net.overlaps(t) for t in taken):
            return str(net)
    raise PodNetworkError("no free /24 in 10.100.0.0-10.249.255.0")


def check_privileges() -> str:
    """Empty if the pod network can be built; otherwise exactly what is missing."""
    return explain(missing_privileges())


def netns_exec_argv(endpoint: PodEndpoint, argv: list[str]) -> list[str]:
    """The argv that runs `argv` inside the pod's network namespace (same pid, via exec)."""
    return ["ip", "netns", "exec", endpoint.netns_name, *argv]


def _run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise PodNetworkError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def _ip_json(*args: str) -> list[dict[str, Any]]:
    out = _run(["ip", "-j", *args]).stdout.strip()
    return json.loads(out) if out else []


class PodNetwork:
    """One bridge and its pods, owned by one agent (identified by `owner_tag`)."""

    def __init__(
        self,
        state_dir: Path,
        *,
        bridge: str = "lahar0",
        cidr: str = "10.244.0.0/16",
        owner_tag: str = "lahar",
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]{1,12}", owner_tag):
            raise ValueError("owner_tag must be 1-12 letters, digits or underscores")
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", bridge):
            raise ValueError(f"invalid bridge name {bridge!r}")
        self.bridge = bridge
        self.owner_tag = owner_tag
        self.state_dir = Path(state_dir)
        self.pool = AddressPool(cidr, self.state_dir / f"{bridge}-addresses.json")
        self.network = self.pool.network
        self.gateway = str(self.pool.gateway)
        self._state_path = self.state_dir / f"{bridge}-network.json"
        self._netns_re = re.compile(rf"{re.escape(owner_tag)}-[0-9a-z]{{12}}")

    # -- names --------------------------------------------------------------------
    def netns_name(self, pod_uid: str) -> str:
        short = re.sub(r"[^0-9a-z]", "", pod_uid.lower())[:12].ljust(12, "0")
        return f"{self.owner_tag}-{short}"

    def _veth_base(self, pod_uid: str) -> str:
        return "lv" + hashlib.sha1(f"{self.owner_tag}/{pod_uid}".encode()).hexdigest()[:11]

    def veth_host_name(self, pod_uid: str) -> str:
        return self._veth_base(pod_uid) + "h"

    def _alias(self, pod_uid: str) -> str:
        return f"{self.owner_tag}:{pod_uid}"

    # -- state ----------------------------------------------------------------------
    def _load_state(self) -> dict[str, object]:
        try:
            return dict(json.loads(self._state_path.read_text()))
        except FileNotFoundError:
            return {}

    def _save_state(self, state: dict[str, object]) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._state_path.with_name(self._state_path.name + ".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self._state_path)

    # -- the bridge -------------------------------------------------------------------
    def _check_routes(self) -> None:
        for route in _ip_json("-4", "route", "show"):
            dst, dev = str(route.get("dst", "")), route.get("dev")
            if dst == "default" or dev == self.bridge:
                continue
            try:
                other = ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False)
            except ValueError:
                continue
            if other.overlaps(self.network):
                raise PodNetworkError(
                    f"pod CIDR {self.network} overlaps the route {dst} via {dev}; pick another"
                )

    def bridge_exists(self) -> bool:
        return _run(["ip", "link", "show", "dev", self.bridge], check=False).returncode == 0

    def ensure(self) -> None:
        """Create the bridge with the gateway address, turn forwarding on, add NAT."""
        problem = check_privileges()
        if problem:
            raise PodNetworkError(problem)
        self._check_routes()
        state = self._load_state()
        state.update(bridge=self.bridge, cidr=str(self.network))
        self._save_state(state)
        if not self.bridge_exists():
            _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        _run(["ip", "link", "set", "dev", self.bridge, "alias", f"{self.owner_tag}:bridge"])
        gw = f"{self.gateway}/{self.network.prefixlen}"
        addrs = _ip_json("-4", "addr", "show", "dev", self.bridge)
        have = {
            f"{a.get('local')}/{a.get('prefixlen')}"
            for link in addrs
            for a in link.get("addr_info", [])
        }
        if gw not in have:
            _run(["ip", "addr", "add", gw, "dev", self.bridge])
        _run(["ip", "link", "set", "dev", self.bridge, "up"])
        if IP_FORWARD.read_text().strip() != "1":
            if "ip_forward_prev" not in state:
                state["ip_forward_prev"] = IP_FORWARD.read_text().strip()
                self._save_state(state)
            IP_FORWARD.write_text("1\n")
        tool = nat_tool()
        assert tool is not None  # check_privileges saw to it
        rule = nat.add_masquerade(tool, self.owner_tag, self.bridge, str(self.network))
        state["nat"] = rule.to_dict()
        self._save_state(state)

    def nat_rule(self) -> nat.NatRule | None:
        """The NAT rule recorded as added by this network, if any."""
        data = self._load_state().get("nat")
        return nat.NatRule.from_dict(data) if isinstance(data, dict) else None

    # -- pods -------------------------------------------------------------------------
    def netns_exists(self, name: str) -> bool:
        return Path("/run/netns", name).exists()

    def link_exists(self, name: str) -> bool:
        return _run(["ip", "link", "show", "dev", name], check=False).returncode == 0

    def endpoint(self, pod_uid: str) -> PodEndpoint | None:
        """The pod's endpoint if it is attached."""
        ip = self.pool.get(pod_uid)
        name, veth = self.netns_name(pod_uid), self.veth_host_name(pod_uid)
        if ip is None or not self.netns_exists(name) or not self.link_exists(veth):
            return None
        return PodEndpoint(pod_uid, name, ip, veth)

    def attach(self, pod_uid: str) -> PodEndpoint:
        """Give the pod a namespace, a veth on the bridge, an address and a default route."""
        existing = self.endpoint(pod_uid)
        if existing is not None:
            return existing
        self._remove_pod_links(pod_uid)  # leftovers of a half-done attach
        ip = self.pool.allocate(pod_uid)
        name, veth = self.netns_name(pod_uid), self.veth_host_name(pod_uid)
        peer = self._veth_base(pod_uid) + "p"
        try:
            _run(["ip", "netns", "add", name])
            _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", peer, "netns", name])
            _run(["ip", "link", "set", "dev", veth, "alias", self._alias(pod_uid)])
            _run(["ip", "link", "set", "dev", veth, "master", self.bridge, "up"])
            inside = ["ip", "-n", name]
            _run([*inside, "link", "set", "dev", peer, "name", "eth0"])
            _run([*inside, "addr", "add", f"{ip}/{self.network.prefixlen}", "dev", "eth0"])
            _run([*inside, "link", "set", "dev", "lo", "up"])
            _run([*inside, "link", "set", "dev", "eth0", "up"])
            _run([*inside, "route", "add", "default", "via", self.gateway, "dev", "eth0"])
        except BaseException:
            self.detach(pod_uid)
            raise
        return PodEndpoint(pod_uid, name, ip, veth)

    def _remove_pod_links(self, pod_uid: str) -> None:
        name = self.netns_name(pod_uid)
        # The kernel may still hold the namespace file busy for a moment after the pod's
        # last process ended: try again briefly before giving up (cleanup_orphans and
        # teardown come back for anything left).
        for _ in range(20):
            _run(["ip", "netns", "delete", name], check=False)
            if not self.netns_exists(name):
                break
            time.sleep(0.1)
        # Deleting one end of a veth deletes both, even if a process still holds the
        # namespace open after its name was removed.
        _run(["ip", "link", "delete", "dev", self.veth_host_name(pod_uid)], check=False)

    def detach(self, pod_uid: str) -> None:
        """Remove the pod's namespace, veth and address; a pod already gone is fine."""
        self._remove_pod_links(pod_uid)
        self.pool.release(pod_uid)

    # -- recovery and teardown --------------------------------------------------------------
    def tagged_netns(self) -> list[str]:
        """Names of the namespaces that belong to this owner."""
        try:
            names = os.listdir("/run/netns")
        except FileNotFoundError:
            return []
        return sorted(n for n in names if self._netns_re.fullmatch(n))

    def tagged_veths(self) -> dict[str, str]:
        """Host-side veths of this owner: interface name -> pod uid."""
        prefix = f"{self.owner_tag}:"
        found: dict[str, str] = {}
        for link in _ip_json("link", "show", "type", "veth"):
            alias = str(link.get("ifalias", ""))
            if alias.startswith(prefix):
                found[str(link["ifname"])] = alias[len(prefix) :]
        return found

    def cleanup_orphans(self, live_pod_uids: set[str] | list[str]) -> list[str]:
        """Remove every namespace, veth and address of this owner whose pod is not live.

        Returns the names of what was removed.
        """
        live = set(live_pod_uids)
        live_netns = {self.netns_name(u) for u in live}
        removed: list[str] = []
        for name in self.tagged_netns():
            if name not in live_netns:
                _run(["ip", "netns", "delete", name], check=False)
                removed.append(name)
        for veth, uid in self.tagged_veths().items():
            if uid not in live:
                _run(["ip", "link", "delete", "dev", veth], check=False)
                removed.append(veth)
        for uid in self.pool.allocations:
            if uid not in live:
                self.pool.release(uid)
        return removed

    def _other_bridges(self) -> list[str]:
        """Bridges of other agents on this machine (they still need forwarding on)."""
        return [
            str(link["ifname"])
            for link in _ip_json("link", "show", "type", "bridge")
            if str(link.get("ifalias", "")).endswith(":bridge") and link["ifname"] != self.bridge
        ]

    def teardown(self) -> None:
        """Remove every pod, the bridge and the NAT rule, and restore `ip_forward`."""
        self.cleanup_orphans(set())
        state = self._load_state()
        rule = self.nat_rule()
        if rule is None and nat_tool() == "nft":
            # State lost: the table named after us is still ours alone.
            rule = nat.NatRule("nft", table=nat.nft_table_name(self.owner_tag, self.bridge))
        if rule is not None:
            nat.remove(rule)
        if self.bridge_exists():
            _run(["ip", "link", "delete", "dev", self.bridge, "type", "bridge"], check=False)
        prev = state.get("ip_forward_prev")
        if isinstance(prev, str) and prev != "1" and not self._other_bridges():
            IP_FORWARD.write_text(prev + "\n")
        self.pool.clear()
        self._state_path.unlink(missing_ok=True)
