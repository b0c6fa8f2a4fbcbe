"""Resolving a dashboard URL through lahar's own view of Services, not DNS.

KubeRay writes ``status.dashboardURL`` as ``<head-svc>.<ns>.svc.<domain>:<port>``
and lets cluster DNS and kube-proxy route it. lahar's embedded cluster has neither
(pods are local processes), and the operator must behave the same on a real
cluster, so the name is resolved from the operator's caches instead: find the
Service ``<head-svc>`` in ``<ns>``, then either its clusterIP (when the Service has
one and ``prefer_cluster_ip`` is set, for a real cluster with kube-proxy) or the
address of a pod behind it (its selector, Running with a pod IP, ready ones first)
and the port's ``targetPort`` (a number, or a name looked up among the pod's
container ports). The default head Service is headless, so the pod route is the
normal one. ``pod_address`` lets the local node agent map a pod and container
port to where the process really listens (a bridge IP or a host port block).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from lahar.kube.cache import Cache
from lahar.kuberay import constants as c
from lahar.kuberay.operator.dashboard import DashboardUnavailable

Obj = dict[str, Any]
PodAddress = Callable[[Obj, int], tuple[str, int]]


def _default_pod_address(pod: Obj, port: int) -> tuple[str, int]:
    return str((pod.get("status") or {}).get("podIP") or ""), port


def _ready(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


class ServiceResolver:
    """``resolve(url) -> "http://host:port"`` from the Services and Pods caches."""

    def __init__(
        self,
        services: Cache,
        pods: Cache,
        *,
        cluster_domain: str = c.CLUSTER_DOMAIN,
        prefer_cluster_ip: bool = False,
        pod_address: PodAddress | None = None,
    ) -> None:
        self.services = services
        self.pods = pods
        self.cluster_domain = cluster_domain
        self.prefer_cluster_ip = prefer_cluster_ip
        self.pod_address = pod_address or _default_pod_address

    def split(self, url: str) -> tuple[str, str, int]:
        """(service, namespace, port) of ``<svc>.<ns>.svc.<domain>:<port>``."""
        parts = urlsplit(url if "://" in url else f"http://{url}")
        host, port = parts.hostname or "", parts.port or c.DEFAULT_DASHBOARD_PORT
        labels = host.split(".")
        if len(labels) < 3 or labels[2] != "svc":
            raise DashboardUnavailable(f"{url!r} does not name a Service (<svc>.<ns>.svc...)")
        return labels[0], labels[1], port

    async def __call__(self, url: str) -> str:
        name, ns, port = self.split(url)
        svc = self.services.get(name, ns)
        if svc is None:
            raise DashboardUnavailable(f"Service {ns}/{name} not found")
        spec = svc.get("spec") or {}
        cluster_ip = spec.get("clusterIP")
        if self.prefer_cluster_ip and cluster_ip and cluster_ip != "None":
            return f"http://{cluster_ip}:{port}"
        target: Any = port
        for p in spec.get("ports") or ():
            if p.get("port") == port:
                target = p.get("targetPort") or port
        selector = spec.get("selector") or {}
        if not selector:
            raise DashboardUnavailable(f"Service {ns}/{name} has no selector")
        candidates = [
            p
            for p in self.pods.list(ns, selector)
            if (p.get("status") or {}).get("phase") == "Running"
            and (p.get("status") or {}).get("podIP")
            and not p["metadata"].get("deletionTimestamp")
        ]
        if not candidates:
            raise DashboardUnavailable(f"Service {ns}/{name}: no running pod with an IP")
        candidates.sort(key=lambda p: (not _ready(p), p["metadata"]["name"]))
        pod = candidates[0]
        number = _port_number(pod, target)
        host, real_port = self.pod_address(pod, number)
        if not host:
            raise DashboardUnavailable(f"pod {ns}/{pod['metadata']['name']} has no address")
        return f"http://{host}:{real_port}"


def _port_number(pod: Obj, target: Any) -> int:
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or ():
        for p in container.get("ports") or ():
            if p.get("name") == target:
                return int(p["containerPort"])
    raise DashboardUnavailable(f"pod {pod['metadata']['name']} has no port named {target!r}")
