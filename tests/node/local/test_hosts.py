"""A pod's /etc/hosts carries the kubelet's lines plus every Service's names pointing at
its endpoints, since the local node has no DNS; resolve() answers from the same
records."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.node.local.hosts import endpoints, hosts_file, pod_hostname, resolve


def make_pod(
    name: str,
    ip: str | None,
    *,
    namespace: str = "ray",
    labels: dict[str, str] | None = None,
    ready: bool = True,
    phase: str = "Running",
    terminating: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if ip:
        status["podIP"] = ip
    return {"metadata": meta, "spec": dict(spec), "status": status}


def make_service(
    name: str,
    selector: dict[str, str] | None,
    *,
    namespace: str = "ray",
    cluster_ip: str = "10.96.0.10",
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"clusterIP": cluster_ip, **spec}
    if selector is not None:
        body["selector"] = selector
    return {"metadata": {"name": name, "namespace": namespace}, "spec": body}


HEAD = make_pod(
    "rc-head-abc", "10.0.0.2", labels={"ray.io/cluster": "rc", "ray.io/node-type": "head"}
)
WORKER = make_pod(
    "rc-worker-1", "10.0.0.3", labels={"ray.io/cluster": "rc", "ray.io/node-type": "worker"}
)
HEAD_SVC = make_service(
    "rc-head-svc", {"ray.io/cluster": "rc", "ray.io/node-type": "head"}, cluster_ip="None"
)


def lines_of(text: str) -> list[str]:
    return text.splitlines()


def test_basic_layout() -> None:
    text = hosts_file(WORKER, services=[HEAD_SVC], pods=[HEAD, WORKER])
    assert text.endswith("\n")
    assert lines_of(text) == [
        "# Kubernetes-managed hosts file (lahar local node).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
        "10.0.0.3\trc-worker-1",
        "",
        "# Services (no cluster DNS on the local node).",
        "10.0.0.2\trc-head-svc.ray.svc.cluster.local\trc-head-svc.ray.svc\trc-head-svc.ray\trc-head-svc",
    ]


def test_own_hostname_and_subdomain() -> None:
    pod = make_pod("p", "10.0.0.9", hostname="box", subdomain="grp")
    assert "10.0.0.9\tbox.grp.ray.svc.cluster.local\tbox" in lines_of(
        hosts_file(pod, services=[], pods=[])
    )
    other_domain = hosts_file(pod, services=[], pods=[], cluster_domain="example.org")
    assert "10.0.0.9\tbox.grp.ray.svc.example.org\tbox" in lines_of(other_domain)


def test_pod_ip_argument_and_missing_ip() -> None:
    pod = make_pod("p", None)
    assert not any(line.endswith("\tp") for line in lines_of(hosts_file(pod, services=[], pods=[])))
    assert "10.1.1.1\tp" in lines_of(hosts_file(pod, services=[], pods=[], pod_ip="10.1.1.1"))


def test_long_pod_names_are_truncated_like_the_kubelet() -> None:
    name = "a" * 62 + "-b"
    assert pod_hostname(make_pod(name, "1.1.1.1")) == "a" * 62
    assert pod_hostname(make_pod("short", "1.1.1.1")) == "short"
    assert pod_hostname(make_pod(name, "1.1.1.1", hostname="h")) == "h"


def test_host_aliases() -> None:
    pod = make_pod("p", "10.0.0.9", hostAliases=[{"ip": "1.2.3.4", "hostnames": ["foo", "bar"]}])
    text = lines_of(hosts_file(pod, services=[], pods=[]))
    assert "1.2.3.4\tfoo\tbar" in text and "# Entries added by HostAliases." in text


def test_other_namespaces_have_no_bare_name() -> None:
    client = make_pod("client", "10.0.9.9", namespace="default")
    text = lines_of(hosts_file(client, services=[HEAD_SVC], pods=[HEAD, client]))
    assert (
        "10.0.0.2\trc-head-svc.ray.svc.cluster.local\trc-head-svc.ray.svc\trc-head-svc.ray" in text
    )
    assert not any(line.endswith("\trc-head-svc") for line in text)


def test_endpoints_come_from_the_services_namespace_only() -> None:
    twin = make_pod("twin", "10.0.5.5", namespace="other", labels=HEAD["metadata"]["labels"])
    assert [p["metadata"]["name"] for p in endpoints(HEAD_SVC, [HEAD, twin])] == ["rc-head-abc"]


def test_cluster_ip_services_resolve_to_endpoints_and_skip_the_rest() -> None:
    services = [
        make_service("dash", {"ray.io/node-type": "head"}),  # ClusterIP
        make_service("manual", None),  # no selector: not ours
        make_service("empty", {}),
        make_service(
            "ext", {"ray.io/node-type": "head"}, type="ExternalName", externalName="example.com"
        ),
    ]
    text = hosts_file(WORKER, services=services, pods=[HEAD, WORKER])
    assert "10.0.0.2\tdash.ray.svc.cluster.local\tdash.ray.svc\tdash.ray\tdash" in lines_of(text)
    assert "10.96.0.10" not in text
    for name in ("manual", "empty", "ext"):
        assert f"{name}.ray" not in text


def test_readiness_rules() -> None:
    selector = {"app": "x"}
    ready = make_pod("r", "10.0.1.1", labels=selector)
    unready = make_pod("u", "10.0.1.2", labels=selector, ready=False)
    pending = make_pod("p", "10.0.1.3", labels=selector, ready=False, phase="Pending")
    no_ip = make_pod("n", None, labels=selector, phase="Pending")
    done = make_pod("d", "10.0.1.4", labels=selector, phase="Succeeded")
    gone = make_pod("g", "10.0.1.5", labels=selector, terminating=True)
    svc = make_service("svc", selector)
    everyone = [ready, unready, pending, no_ip, done, gone]
    resolve_all = lambda s, pods: resolve("svc", namespace="ray", services=[s], pods=pods)  # noqa: E731
    assert resolve_all(svc, everyone) == ["10.0.1.1"]
    # none ready: the not-ready (Running or Pending with an IP) are used
    assert resolve_all(svc, [unready, pending, no_ip, done, gone]) == ["10.0.1.2", "10.0.1.3"]
    published = make_service("svc", selector, publishNotReadyAddresses=True)
    assert resolve_all(published, everyone) == ["10.0.1.1", "10.0.1.2", "10.0.1.3"]
    assert resolve_all(svc, [done, gone, no_ip]) == []


def test_headless_hostnames_for_pods_in_the_subdomain() -> None:
    labels = {"app": "db"}
    svc = make_service("db", labels, cluster_ip="None")
    member = make_pod("db-0", "10.0.2.1", labels=labels, hostname="db-0", subdomain="db")
    stranger = make_pod("db-1", "10.0.2.2", labels=labels, hostname="db-1", subdomain="elsewhere")
    text = lines_of(hosts_file(member, services=[svc], pods=[member, stranger]))
    assert "10.0.2.1\tdb-0.db.ray.svc.cluster.local\tdb-0.db.ray.svc\tdb-0.db.ray\tdb-0.db" in text
    assert not any("db-1.db" in line for line in text)
    # the same pod behind a ClusterIP Service gets no hostname record
    clusterip = make_service("db", labels)
    observer = make_pod("o", "10.0.2.9")
    assert not any(
        "db-0.db.ray" in line
        for line in lines_of(hosts_file(observer, services=[clusterip], pods=[member]))
    )
    assert resolve(
        "db-0.db.ray.svc.cluster.local", namespace="x", services=[svc], pods=[member]
    ) == ["10.0.2.1"]


def test_multiple_endpoints_and_ipv6_pod_ips() -> None:
    labels = {"app": "w"}
    pods = [make_pod(f"w{i}", f"10.0.3.{i}", labels=labels) for i in (10, 9, 2)]
    pods[0]["status"]["podIPs"] = [{"ip": "10.0.3.10"}, {"ip": "fd00::10"}]
    svc = make_service("w", labels)
    assert resolve("w.ray", namespace="ray", services=[svc], pods=pods) == [
        "10.0.3.2",
        "10.0.3.9",
        "10.0.3.10",
        "fd00::10",
    ]
    records = [
        line
        for line in lines_of(hosts_file(pods[1], services=[svc], pods=pods))
        if "w.ray.svc" in line
    ]
    assert [line.split("\t")[0] for line in records] == [
        "10.0.3.2",
        "10.0.3.9",
        "10.0.3.10",
        "fd00::10",
    ]


@pytest.mark.parametrize(
    ("name", "namespace", "expected"),
    [
        ("rc-head-svc.ray.svc.cluster.local", "default", ["10.0.0.2"]),
        ("RC-HEAD-SVC.ray.svc.cluster.local.", "default", ["10.0.0.2"]),
        ("rc-head-svc.ray.svc", "default", ["10.0.0.2"]),
        ("rc-head-svc.ray", "default", ["10.0.0.2"]),
        ("rc-head-svc", "ray", ["10.0.0.2"]),
        ("rc-head-svc", "default", []),
        ("rc-head-svc.ray.svc.other.domain", "default", []),
        ("unknown.ray.svc.cluster.local", "ray", []),
    ],
)
def test_resolve(name: str, namespace: str, expected: list[str]) -> None:
    assert resolve(name, namespace=namespace, services=[HEAD_SVC], pods=[HEAD, WORKER]) == expected


def test_output_is_deterministic() -> None:
    services = [make_service(f"s{i}", {"app": str(i % 3)}) for i in range(6)]
    pods = [make_pod(f"p{i}", f"10.0.4.{i}", labels={"app": str(i % 3)}) for i in range(9)]
    first = hosts_file(pods[0], services=services, pods=pods)
    second = hosts_file(pods[0], services=list(reversed(services)), pods=list(reversed(pods)))
    assert first == second
    assert len(set(lines_of(first)) - {""}) == len([line for line in lines_of(first) if line])


def test_iterables_are_consumed_once_safely() -> None:
    text = hosts_file(WORKER, services=iter([HEAD_SVC, HEAD_SVC]), pods=iter([HEAD, WORKER]))
    assert sum("rc-head-svc.ray.svc.cluster.local" in line for line in lines_of(text)) == 1


pod_strategy = st.builds(
    lambda idx, app, ready, phase, terminating, has_ip, ns: make_pod(
        f"p{idx}",
        f"10.9.{idx // 250}.{idx % 250 + 1}" if has_ip else None,
        namespace=ns,
        labels={"app": app},
        ready=ready,
        phase=phase,
        terminating=terminating,
    ),
    st.integers(0, 10_000),
    st.sampled_from(["a", "b"]),
    st.booleans(),
    st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["ray", "default"]),
)
service_strategy = st.builds(
    lambda name, app, ns, headless, publish: make_service(
        name,
        {"app": app},
        namespace=ns,
        cluster_ip="None" if headless else "10.96.0.1",
        publishNotReadyAddresses=publish,
    ),
    st.sampled_from(["s1", "s2", "s3"]),
    st.sampled_from(["a", "b"]),
    st.sampled_from(["ray", "default"]),
    st.booleans(),
    st.booleans(),
)


@given(
    st.lists(pod_strategy, max_size=12, unique_by=lambda p: p["metadata"]["name"]),
    st.lists(service_strategy, max_size=5),
)
def test_hosts_invariants(pods: list[dict[str, Any]], services: list[dict[str, Any]]) -> None:
    """No line names a terminating, finished or address-less pod; no line repeats; every
    address is valid; and the file does not depend on the order of its inputs."""
    me = make_pod("me", "10.8.0.1", namespace="ray")
    text = hosts_file(me, services=services, pods=pods)
    lines = [line for line in lines_of(text) if line and not line.startswith("#")]
    assert len(lines) == len(set(lines))
    excluded = {
        p["status"]["podIP"]
        for p in pods
        if p["status"].get("podIP")
        and (
            p["metadata"].get("deletionTimestamp")
            or p["status"]["phase"] not in ("Running", "Pending")
        )
    }
    allowed = {p["status"]["podIP"] for p in pods if p["status"].get("podIP")} - excluded
    for line in lines[6:]:
        ip = line.split("\t")[0]
        ipaddress.ip_address(ip)
        assert ip not in excluded
        assert ip in allowed | {"10.8.0.1"}
    assert text == hosts_file(me, services=list(reversed(services)), pods=list(reversed(pods)))
    for service in services:
        name, ns = service["metadata"]["name"], service["metadata"]["namespace"]
        for ip in resolve(f"{name}.{ns}", namespace="ray", services=services, pods=pods):
            assert ip not in excluded
