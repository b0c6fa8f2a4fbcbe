"""The pod network, for real: namespaces, veths, a bridge and nft NAT on this machine.

Nothing here leaves the machine: "outside" is a network namespace the test creates and
joins to the host by its own veth, with no route back to the pod CIDR, so a pod can
only get replies from it through the masquerade rule. PyPI reachability works the same
way with eth0 in place of that veth (the rule matches any interface but the bridge).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lahar.node.local import nat
from lahar.node.local.network import PodNetwork, netns_exec_argv
from tests.node.local.conftest import (
    CLIENT,
    Processes,
    fetch,
    fetch_in,
    free_cidr,
    host_listeners,
)

PORT = 6379


def _netns() -> set[str]:
    try:
        return set(os.listdir("/run/netns"))
    except FileNotFoundError:
        return set()


def _links() -> set[str]:
    out = subprocess.run(["ip", "-j", "link"], capture_output=True, text=True, check=True).stdout
    return {link["ifname"] for link in json.loads(out)}


def _nft_tables() -> str:
    return subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout


def test_two_pods_same_fixed_port(net: PodNetwork, procs: Processes) -> None:
    a, b = net.attach("pod-a-0001"), net.attach("pod-b-0002")
    assert a.ip != b.ip
    assert a.netns_name != b.netns_name
    assert {a.ip, b.ip} <= {str(h) for h in net.network.hosts()}
    # The same wildcard port in both pods: KubeRay's fixed ports need nothing more.
    procs.serve(netns_exec_argv(a, []), "0.0.0.0", PORT, "A")
    procs.serve(netns_exec_argv(b, []), "0.0.0.0", PORT, "B")
    assert fetch(a.ip, PORT).startswith("A from ")
    assert fetch(b.ip, PORT).startswith("B from ")
    # Pod to pod by IP, and the peer sees the pod's own address (no NAT on the bridge).
    assert fetch_in(a, b.ip, PORT) == f"B from {a.ip}"
    assert fetch_in(b, a.ip, PORT) == f"A from {b.ip}"
    # Each pod's loopback is its own.
    assert fetch_in(a, "127.0.0.1", PORT) == "A from 127.0.0.1"
    # Nothing listens on that port in the root namespace, and no listener was added.
    after = host_listeners()
    assert not any(local.endswith(f":{PORT}") for local in after)


def test_pod_reaches_host_through_gateway(net: PodNetwork, procs: Processes) -> None:
    a = net.attach("pod-gw-0001")
    procs.serve([], net.gateway, 18080, "host")
    assert fetch_in(a, net.gateway, 18080) == f"host from {a.ip}"


def test_outbound_masquerade(net: PodNetwork, procs: Processes) -> None:
    """A pod reaches a network beyond the bridge; replies come back only through NAT."""
    rule = net.nat_rule()
    assert rule is not None and nat.present(rule)
    outside_cidr = free_cidr(exclude=(net.network,))
    base = outside_cidr.rsplit(".", 1)[0]
    ns, veth = f"{net.owner_tag}out", f"{net.owner_tag}o"
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(
            ["ip", "link", "add", veth, "type", "veth", "peer", "name", "up0", "netns", ns],
            check=True,
        )
        subprocess.run(["ip", "link", "set", veth, "alias", f"{net.owner_tag}out"], check=True)
        subprocess.run(["ip", "addr", "add", f"{base}.1/24", "dev", veth], check=True)
        subprocess.run(["ip", "link", "set", veth, "up"], check=True)
        inside = ["ip", "-n", ns]
        subprocess.run([*inside, "addr", "add", f"{base}.2/24", "dev", "up0"], check=True)
        subprocess.run([*inside, "link", "set", "up0", "up"], check=True)
        subprocess.run([*inside, "link", "set", "lo", "up"], check=True)
        # The outside namespace has no route to the pod CIDR at all.
        pod = net.attach("pod-out-0001")
        procs.serve(["ip", "netns", "exec", ns], f"{base}.2", 18081, "outside")
        # The server sees the host's address on that link: the pod was masqueraded.
        assert fetch_in(pod, f"{base}.2", 18081) == f"outside from {base}.1"
        # Without the rule the reply has no way back: the rule is what does it.
        nat.remove(rule)
        failed = subprocess.run(
            netns_exec_argv(pod, [sys.executable, "-c", CLIENT, f"{base}.2", "18081"]),
            capture_output=True,
            timeout=30,
        )
        assert failed.returncode != 0
        net.ensure()
        assert fetch_in(pod, f"{base}.2", 18081) == f"outside from {base}.1"
    finally:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        subprocess.run(["ip", "link", "delete", veth], capture_output=True)


def test_detach_removes_netns_and_veth(net: PodNetwork) -> None:
    a = net.attach("pod-detach-01")
    assert a.netns_name in _netns() and a.veth_host in _links()
    assert net.attach("pod-detach-01") == a  # idempotent
    net.detach("pod-detach-01")
    assert a.netns_name not in _netns()
    assert a.veth_host not in _links()
    assert net.pool.get("pod-detach-01") is None
    net.detach("pod-detach-01")  # already gone is fine


def test_addresses_survive_restart_and_orphans_are_cleaned(
    net_factory: tuple[str, str, str, Path],
) -> None:
    tag, bridge, cidr, state = net_factory
    first = PodNetwork(state, bridge=bridge, cidr=cidr, owner_tag=tag)
    try:
        first.ensure()
        keep, lose = first.attach("pod-keep-0001"), first.attach("pod-lose-0002")
        del first  # the agent "crashes": the object is gone, the kernel state is not
        second = PodNetwork(state, bridge=bridge, cidr=cidr, owner_tag=tag)
        assert second.pool.get("pod-keep-0001") == keep.ip
        second.ensure()  # idempotent on an existing bridge
        removed = second.cleanup_orphans({"pod-keep-0001"})
        assert lose.netns_name in removed
        assert lose.netns_name not in _netns() and lose.veth_host not in _links()
        assert second.endpoint("pod-keep-0001") == keep
        assert second.pool.allocations == {"pod-keep-0001": keep.ip}
        # A new pod does not get the kept pod's address.
        assert second.attach("pod-new-0003").ip != keep.ip
        second.cleanup_orphans(set())
        assert not any(n.startswith(tag) for n in _netns())
        assert second.tagged_veths() == {}
        assert second.pool.allocations == {}
    finally:
        PodNetwork(state, bridge=bridge, cidr=cidr, owner_tag=tag).teardown()


def test_teardown_removes_bridge_and_exactly_its_nat(
    net_factory: tuple[str, str, str, Path],
) -> None:
    tag, bridge, cidr, state = net_factory
    tables_before = _nft_tables()
    forward_before = Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
    network = PodNetwork(state, bridge=bridge, cidr=cidr, owner_tag=tag)
    try:
        network.ensure()
        network.attach("pod-td-0001")
        network.attach("pod-td-0002")
        rule = network.nat_rule()
        assert rule is not None and nat.present(rule)
        assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "1"
    finally:
        network.teardown()
    assert bridge not in _links()
    assert not any(n.startswith(tag) for n in _netns())
    assert not nat.present(rule)
    assert _nft_tables() == tables_before
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == forward_before
    assert list(state.iterdir()) == []


def test_overlapping_cidr_is_refused(net_factory: tuple[str, str, str, Path]) -> None:
    tag, bridge, _, state = net_factory
    out = subprocess.run(["ip", "-j", "-4", "route"], capture_output=True, text=True).stdout
    local = next(r["dst"] for r in json.loads(out) if r.get("dst", "default") != "default")
    network = PodNetwork(state, bridge=bridge, cidr=local, owner_tag=tag)
    with pytest.raises(Exception, match="overlaps"):
        network.ensure()
    assert bridge not in _links()
