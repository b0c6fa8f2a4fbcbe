"""The /etc/hosts of one pod: how Service names resolve on the local node without DNS.

A kubelet writes each pod a small hosts file (localhost, the ip6 names, the pod's own
hostname) and leaves Service names to cluster DNS. The local node has no DNS server,
so this hosts file also carries every Service's names, pointing at its endpoints.

What a Service resolves to:

* Only Services with a selector count (no Endpoints controller manages the others),
  in every namespace; ``ExternalName`` Services are skipped.
* Endpoints are the pods in the Service's namespace whose labels match the selector,
  that have ``status.podIP``, are ``Running`` or ``Pending`` with an address, and are
  not terminating (no ``deletionTimestamp``). Of those, the Ready ones (condition
  ``Ready`` is ``True``) are used; ``publishNotReadyAddresses: true`` uses them all.
* Deliberately unlike Kubernetes: when none of them is Ready, the not-ready ones are
  used. DNS could answer "no such name, try again later"; a hosts file cannot, and a
  name that does not resolve fails hard. KubeRay's workers only need the head's address
  to start waiting for its GCS, which is not Ready until they have joined.
* ``ClusterIP`` Services resolve to their endpoints too, as headless ones do: there is
  no kube-proxy to answer on a virtual IP, so a client connects to a pod directly
  (and picks whichever address its resolver returns first).

Names of a Service ``svc`` in namespace ``ns``: ``svc.ns.svc.<domain>``, ``svc.ns.svc``,
``svc.ns`` and, in the pod's own namespace only, ``svc`` (the forms the search path
of a pod's resolv.conf would complete). A pod with ``spec.hostname`` and a
``spec.subdomain`` naming a headless Service (clusterIP ``None``) also gets
``<hostname>.svc.ns.svc.<domain>`` and the same shorter forms.

:func:`resolve` answers a single name from the same records, for clients on the host
(the operator reaching ``<head-svc>.<ns>.svc.cluster.local:8265``). Output is sorted
and free of duplicates, so an unchanged cluster gives a byte-identical file.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

HEADER = "# Kubernetes-managed hosts file (lahar local node)."
LOCAL_LINES = (
    "127.0.0.1\tlocalhost",
    "::1\tlocalhost ip6-localhost ip6-loopback",
    "fe00::0\tip6-localnet",
    "fe00::0\tip6-mcastprefix",
    "fe00::1\tip6-allnodes",
    "fe00::2\tip6-allrouters",
)
_HOSTNAME_MAX = 63


def _ip_key(ip: str) -> tuple[int, int, str]:
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return (9, 0, ip)
    return (parsed.version, int(parsed), ip)


def pod_hostname(pod: Mapping[str, Any]) -> str:
    """``spec.hostname``, else the pod's name cut to 63 characters as the kubelet does."""
    hostname = str((pod.get("spec") or {}).get("hostname") or "")
    if hostname:
        return hostname
    name = str((pod.get("metadata") or {}).get("name") or "")
    return name[:_HOSTNAME_MAX].rstrip("-.") if len(name) > _HOSTNAME_MAX else name


def pod_ips(pod: Mapping[str, Any]) -> list[str]:
    """The pod's addresses: ``status.podIPs`` if given, else ``status.podIP``."""
    status = pod.get("status") or {}
    primary = str(status.get("podIP") or "")
    if not primary:
        return []
    ips = [str(entry.get("ip")) for entry in status.get("podIPs") or [] if entry.get("ip")]
    return ips or [primary]


def _is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def endpoints(
    service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The pods ``service`` resolves to (see the module doc for the rules)."""
    spec = service.get("spec") or {}
    selector = spec.get("selector") or {}
    if not selector or spec.get("type") == "ExternalName":
        return []
    namespace = (service.get("metadata") or {}).get("namespace") or "default"
    eligible = []
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        labels = meta.get("labels") or {}
        if (meta.get("namespace") or "default") != namespace or meta.get("deletionTimestamp"):
            continue
        if any(labels.get(key) != value for key, value in selector.items()):
            continue
        if status.get("podIP") and status.get("phase") in ("Running", "Pending"):
            eligible.append(pod)
    if spec.get("publishNotReadyAddresses"):
        return eligible
    ready = [pod for pod in eligible if _is_ready(pod)]
    return ready or eligible


def _forms(prefix: str, namespace: str, domain: str, own_namespace: bool) -> tuple[str, ...]:
    """``prefix.ns.svc.domain``, ``prefix.ns.svc``, ``prefix.ns`` (and ``prefix``)."""
    full = (f"{prefix}.{namespace}.svc.{domain}", f"{prefix}.{namespace}.svc")
    return (*full, f"{prefix}.{namespace}", *((prefix,) if own_namespace else ()))


def service_records(
    services: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    *,
    namespace: str,
    cluster_domain: str = "cluster.local",
) -> list[tuple[str, tuple[str, ...]]]:
    """``(ip, names)`` for every Service endpoint, as seen from ``namespace``; sorted."""
    pods = list(pods)
    records: set[tuple[str, tuple[str, ...]]] = set()
    for service in services:
        meta, spec = service.get("metadata") or {}, service.get("spec") or {}
        name, svc_ns = str(meta.get("name") or ""), str(meta.get("namespace") or "default")
        if not name:
            continue
        own = svc_ns == namespace
        headless = spec.get("clusterIP") == "None"
        for pod in endpoints(service, pods):
            pod_spec = pod.get("spec") or {}
            hostname = pod_spec.get("hostname")
            for ip in pod_ips(pod):
                records.add((ip, _forms(name, svc_ns, cluster_domain, own)))
                if headless and hostname and pod_spec.get("subdomain") == name:
                    records.add((ip, _forms(f"{hostname}.{name}", svc_ns, cluster_domain, own)))
    return sorted(records, key=lambda rec: (rec[1], _ip_key(rec[0])))


def hosts_file(
    pod: Mapping[str, Any],
    *,
    services: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    cluster_domain: str = "cluster.local",
    pod_ip: str | None = None,
) -> str:
    """The /etc/hosts content for ``pod``; ``pod_ip`` overrides ``status.podIP`` (for
    a pod whose address is not in its status yet)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    namespace = str(meta.get("namespace") or "default")
    lines = [HEADER, *LOCAL_LINES]
    own_ip = pod_ip or str((pod.get("status") or {}).get("podIP") or "")
    hostname = pod_hostname(pod)
    if own_ip and hostname:
        subdomain = spec.get("subdomain")
        if subdomain:
            fqdn = f"{hostname}.{subdomain}.{namespace}.svc.{cluster_domain}"
            lines.append(f"{own_ip}\t{fqdn}\t{hostname}")
        else:
            lines.append(f"{own_ip}\t{hostname}")
    aliases = list(
        dict.fromkeys(
            f"{alias['ip']}\t" + "\t".join(alias["hostnames"])
            for alias in spec.get("hostAliases") or []
            if alias.get("ip") and alias.get("hostnames")
        )
    )
    if aliases:
        lines += ["", "# Entries added by HostAliases.", *aliases]
    records = service_records(services, pods, namespace=namespace, cluster_domain=cluster_domain)
    if records:
        lines += ["", "# Services (no cluster DNS on the local node)."]
        lines += [f"{ip}\t" + "\t".join(names) for ip, names in records]
    return "\n".join(lines) + "\n"


def resolve(
    name: str,
    *,
    namespace: str,
    services: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    cluster_domain: str = "cluster.local",
) -> list[str]:
    """The endpoint addresses ``name`` resolves to from ``namespace``; [] if unknown."""
    wanted = name.strip().rstrip(".").lower()
    found = {
        ip
        for ip, names in service_records(
            services, pods, namespace=namespace, cluster_domain=cluster_domain
        )
        if wanted in names
    }
    return sorted(found, key=_ip_key)
