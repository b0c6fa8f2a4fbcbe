"""Services: defaults, cluster-IP allocation and the port/IP validation rules.

A Service read back from a real cluster carries a lot the user never wrote:
``type: ClusterIP``, an allocated ``clusterIP`` mirrored into ``clusterIPs``,
``ipFamilies``/``ipFamilyPolicy``, ``sessionAffinity: None``, ``TCP`` ports whose
``targetPort`` equals ``port``, traffic policies and an empty load-balancer
status. This module reproduces that, asks the REST layer for the IP (and node
ports when it can allocate them), keeps allocated values across updates that
omit them, and refuses changes to an allocated cluster IP.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.builtins.context import DefaultContext
from lahar.apiserver.builtins.metadata import validate_labels
from lahar.apiserver.errors import Cause

TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
AFFINITIES = ["ClientIP", "None"]
IP_FAMILIES = ["IPv4", "IPv6"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
NODE_PORT_RANGE = (30000, 32767)
DEFAULT_AFFINITY_TIMEOUT = 10800
_MAX_AFFINITY_TIMEOUT = 86400


def _headless(spec: dict[str, Any]) -> bool:
    return spec.get("clusterIP") == "None" or (spec.get("clusterIPs") or [None])[0] == "None"


def _needs_node_ports(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def default_service(
    obj: dict[str, Any], ctx: DefaultContext, old: dict[str, Any] | None
) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        if client.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {
                "clientIP": {"timeoutSeconds": DEFAULT_AFFINITY_TIMEOUT}
            }
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, "") and port.get("port") is not None:
                port["targetPort"] = port["port"]
    if _needs_node_ports(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in (
        "ClusterIP",
        "NodePort",
        "LoadBalancer",
    ):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if old is not None:
        _keep_allocated(spec, old.get("spec") or {})
    else:
        obj["status"] = {"loadBalancer": {}}
    _normalize_cluster_ips(spec)
    if spec["type"] != "ExternalName":
        if old is None and not spec.get("clusterIP"):
            ip = ctx.allocate_cluster_ip()
            spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        if not spec.get("ipFamilies"):
            first = spec.get("clusterIP") or ""
            spec["ipFamilies"] = ["IPv6" if ":" in first else "IPv4"]
        if not spec.get("ipFamilyPolicy"):
            spec["ipFamilyPolicy"] = "SingleStack"
    if (
        _needs_node_ports(spec)
        and ctx.allocate_node_port is not None
        and spec.get("allocateLoadBalancerNodePorts", True)
    ):
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = ctx.allocate_node_port()
    return obj


def _normalize_cluster_ips(spec: dict[str, Any]) -> None:
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    elif spec.get("clusterIPs") and not spec.get("clusterIP"):
        spec["clusterIP"] = spec["clusterIPs"][0]


def _keep_allocated(spec: dict[str, Any], old_spec: dict[str, Any]) -> None:
    """An update that omits allocated values keeps them (like upstream's REST layer)."""
    if spec.get("type") == "ExternalName" or old_spec.get("type") == "ExternalName":
        return
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if not spec.get(field) and old_spec.get(field):
            spec[field] = old_spec[field]
    if _needs_node_ports(spec) and _needs_node_ports(old_spec):
        old_ports = {
            (p.get("port"), p.get("protocol")): p.get("nodePort")
            for p in old_spec.get("ports") or []
        }
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                kept = old_ports.get((port.get("port"), port.get("protocol")))
                if kept:
                    port["nodePort"] = kept


def validate_service(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec.ports")]
    causes: list[Cause] = []
    kind = spec.get("type")
    ports = spec.get("ports") or []
    headless = _headless(spec)
    if not ports and not headless and kind != "ExternalName":
        causes.append(fe.required("spec.ports"))
    if kind in ("LoadBalancer", "NodePort") and headless:
        causes.append(
            fe.invalid(
                "spec.clusterIPs[0]", "None", f"may not be set to 'None' for {kind} services"
            )
        )
    if kind == "ExternalName":
        causes += _validate_external_name(spec)
    causes += _validate_ports(spec, ports, headless)
    if spec.get("selector") is not None:
        causes += validate_labels(spec["selector"], "spec.selector")
    causes += _validate_affinity(spec)
    causes += _validate_ips(spec)
    if not kind:
        causes.append(fe.required("spec.type"))
    elif kind not in TYPES:
        causes.append(fe.not_supported("spec.type", kind, TYPES))
    policy = spec.get("internalTrafficPolicy")
    if policy is not None and policy not in TRAFFIC_POLICIES:
        causes.append(fe.not_supported("spec.internalTrafficPolicy", policy, TRAFFIC_POLICIES))
    external = spec.get("externalTrafficPolicy")
    if external and kind not in ("NodePort", "LoadBalancer") and not spec.get("externalIPs"):
        causes.append(
            fe.invalid(
                "spec.externalTrafficPolicy",
                external,
                "may only be set for externally-accessible services",
            )
        )
    elif external and external not in TRAFFIC_POLICIES:
        causes.append(fe.not_supported("spec.externalTrafficPolicy", external, TRAFFIC_POLICIES))
    return causes


def _validate_external_name(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if spec.get("clusterIPs"):
        causes.append(fe.forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
    if spec.get("ipFamilies"):
        causes.append(fe.forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
    if spec.get("ipFamilyPolicy") is not None:
        causes.append(
            fe.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services")
        )
    cname = str(spec.get("externalName") or "").removesuffix(".")
    if not cname:
        causes.append(fe.required("spec.externalName"))
    else:
        causes += [
            fe.invalid("spec.externalName", cname, m) for m in names.dns1123_subdomain(cname)
        ]
    return causes


def _duplicate_port(path: str, protocol: Any, port: Any) -> Cause:
    value = (
        f'core.ServicePort{{Name:"", Protocol:"{protocol}", AppProtocol:(*string)(nil), '
        f"Port:{port}, "
        'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
    )
    return Cause(fe.DUPLICATE, f"Duplicate value: {value}", path)


def _validate_ports(spec: dict[str, Any], ports: list[Any], headless: bool) -> list[Cause]:
    causes: list[Cause] = []
    port_names: set[str] = set()
    seen: set[tuple[Any, Any]] = set()
    node_ports: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        p = fe.index("spec.ports", i)
        if not isinstance(port, dict):
            causes.append(fe.invalid(p, port, "must be an object"))
            continue
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            causes.append(fe.required(fe.child(p, "name")))
        elif name:
            causes += [fe.invalid(fe.child(p, "name"), name, m) for m in names.dns1123_label(name)]
            if name in port_names:
                causes.append(fe.duplicate(fe.child(p, "name"), name))
            port_names.add(name)
        causes += [
            fe.invalid(fe.child(p, "port"), port.get("port"), m)
            for m in names.port_number(port.get("port"))
        ]
        protocol = port.get("protocol")
        if not protocol:
            causes.append(fe.required(fe.child(p, "protocol")))
        elif protocol not in PROTOCOLS:
            causes.append(fe.not_supported(fe.child(p, "protocol"), protocol, PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            causes += [
                fe.invalid(fe.child(p, "targetPort"), target, m) for m in names.port_name(target)
            ]
        elif target is not None:
            causes += [
                fe.invalid(fe.child(p, "targetPort"), target, m) for m in names.port_number(target)
            ]
        if port.get("appProtocol") is not None:
            app = str(port["appProtocol"])
            causes += [
                fe.invalid(fe.child(p, "appProtocol"), app, m) for m in names.qualified_name(app)
            ]
        node_port = port.get("nodePort")
        if node_port:
            if spec.get("type") == "ClusterIP":
                causes.append(
                    fe.forbidden(
                        fe.child(p, "nodePort"), "may not be used when `type` is 'ClusterIP'"
                    )
                )
            elif not (
                isinstance(node_port, int) and NODE_PORT_RANGE[0] <= node_port <= NODE_PORT_RANGE[1]
            ):
                causes.append(
                    fe.invalid(
                        fe.child(p, "nodePort"),
                        node_port,
                        "provided port is not in the valid range. "
                        "The range of valid ports is 30000-32767",
                    )
                )
            if (protocol, node_port) in node_ports:
                causes.append(fe.duplicate(fe.child(p, "nodePort"), node_port))
            node_ports.add((protocol, node_port))
        if (protocol, port.get("port")) in seen:
            causes.append(_duplicate_port(p, protocol, port.get("port")))
        seen.add((protocol, port.get("port")))
    return causes


def _validate_affinity(spec: dict[str, Any]) -> list[Cause]:
    affinity = spec.get("sessionAffinity")
    if not affinity:
        return [fe.required("spec.sessionAffinity")]
    if affinity not in AFFINITIES:
        return [fe.not_supported("spec.sessionAffinity", affinity, AFFINITIES)]
    config = spec.get("sessionAffinityConfig")
    if affinity == "None" and config is not None:
        return [
            fe.forbidden(
                "spec.sessionAffinityConfig", "must not be set when session affinity is None"
            )
        ]
    if affinity == "ClientIP":
        timeout = ((config or {}).get("clientIP") or {}).get("timeoutSeconds")
        path = "spec.sessionAffinityConfig.clientIP.timeoutSeconds"
        if timeout is None:
            return [fe.required(path, "when session affinity type is ClientIP")]
        if not isinstance(timeout, int) or not 0 < timeout <= _MAX_AFFINITY_TIMEOUT:
            return [
                fe.invalid(
                    path, timeout, f"must be greater than 0 and less than {_MAX_AFFINITY_TIMEOUT}"
                )
            ]
    return []


def _validate_ips(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    ips = spec.get("clusterIPs") or []
    if spec.get("type") != "ExternalName":
        if spec.get("clusterIP") and ips and spec["clusterIP"] != ips[0]:
            causes.append(fe.invalid("spec.clusterIPs", ips, "first value must match `clusterIP`"))
        for i, ip in enumerate(ips):
            if ip == "None" and i == 0:
                continue
            causes += [
                fe.invalid(fe.index("spec.clusterIPs", i), ip, m) for m in names.ip_address(str(ip))
            ]
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if family not in IP_FAMILIES:
            causes.append(fe.not_supported(fe.index("spec.ipFamilies", i), family, IP_FAMILIES))
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        causes.append(fe.not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    for i, ip in enumerate(spec.get("externalIPs") or []):
        causes += [
            fe.invalid(fe.index("spec.externalIPs", i), ip, m) for m in names.ip_address(str(ip))
        ]
    return causes


def validate_service_update(
    new: dict[str, Any], old: dict[str, Any], subresource: str
) -> list[Cause]:
    if subresource == "status":
        return []
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    causes: list[Cause] = []
    if "ExternalName" not in (spec.get("type"), old_spec.get("type")) and not (
        _headless(spec) and _headless(old_spec)
    ):
        ips, old_ips = spec.get("clusterIPs") or [], old_spec.get("clusterIPs") or []
        if len(ips) == len(old_ips):
            for i, ip in enumerate(old_ips):
                if ips[i] != ip:
                    causes.append(
                        fe.invalid(fe.index("spec.clusterIPs", i), ips, "may not change once set")
                    )
        elif len(ips) < len(old_ips):
            if not ips:
                causes.append(
                    fe.invalid("spec.clusterIPs[0]", ips, "primary clusterIP can not be unset")
                )
            elif ips[0] != old_ips[0]:
                causes.append(fe.invalid("spec.clusterIPs[0]", ips, "may not change once set"))
        elif old_ips and ips[0] != old_ips[0]:
            causes.append(fe.invalid("spec.clusterIPs[0]", ips, "may not change once set"))
    return causes + validate_service(new)
