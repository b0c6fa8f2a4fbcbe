"""Services: defaults, cluster IP allocation, port rules, immutable cluster IP."""

from __future__ import annotations

import copy

from lahar.apiserver.builtins import default

from .helpers import RT, context, create, update

SVC = RT["Service"]


def svc(**spec: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec},
    }


def test_defaults_match_a_real_service() -> None:
    out = default(svc(), SVC, context())
    assert out["spec"] == {
        "selector": {"app": "web"},
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
        "sessionAffinity": "None",
        "type": "ClusterIP",
        "internalTrafficPolicy": "Cluster",
        "clusterIP": "10.96.0.10",
        "clusterIPs": ["10.96.0.10"],
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
    }
    assert out["status"] == {"loadBalancer": {}}
    assert create(svc(), "Service") == []


def test_headless_and_explicit_ips_are_not_allocated() -> None:
    calls: list[int] = []
    ctx = context(allocate_cluster_ip=lambda: calls.append(1) or "10.96.0.99")
    headless = default(svc(clusterIP="None"), SVC, ctx)
    assert (headless["spec"]["clusterIP"], headless["spec"]["clusterIPs"]) == ("None", ["None"])
    fixed = default(svc(clusterIPs=["10.96.5.5"]), SVC, ctx)
    assert fixed["spec"]["clusterIP"] == "10.96.5.5"
    assert calls == []
    external = default(svc(type="ExternalName", externalName="example.com", ports=[]), SVC, ctx)
    assert "clusterIP" not in external["spec"] and "ipFamilies" not in external["spec"]
    assert create(svc(type="ExternalName", externalName="example.com", ports=[]), "Service") == []


def test_node_ports_and_load_balancer_defaults() -> None:
    ports = iter(range(30000, 30010))
    out = default(svc(type="LoadBalancer"), SVC, context(allocate_node_port=lambda: next(ports)))
    spec = out["spec"]
    assert spec["ports"][0]["nodePort"] == 30000
    assert (spec["externalTrafficPolicy"], spec["allocateLoadBalancerNodePorts"]) == (
        "Cluster",
        True,
    )
    assert create(svc(type="NodePort", ports=[{"port": 80, "nodePort": 80}]), "Service") == [
        "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. "
        "The range of valid ports is 30000-32767"
    ]
    assert create(svc(ports=[{"port": 80, "nodePort": 30001}]), "Service") == [
        "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    ]


def test_client_ip_affinity_gets_a_timeout() -> None:
    out = default(svc(sessionAffinity="ClientIP"), SVC, context())
    assert out["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_ports() -> None:
    out = create(
        svc(
            ports=[
                {"port": 80},
                {"port": 80, "name": "Web"},
                {"port": 0, "name": "x", "protocol": "ICMP", "targetPort": "bad--name"},
            ]
        ),
        "Service",
    )
    assert out == [
        "spec.ports[0].name: Required value",
        'spec.ports[1].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of '
        "lower case "
        "alphanumeric characters or '-', and must start and end with an alphanumeric character "
        "(e.g. "
        "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", '
        "AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, "
        'StrVal:""}, NodePort:0}',
        "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.ports[2].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        'spec.ports[2].targetPort: Invalid value: "bad--name": must not contain consecutive '
        "hyphens",
    ]
    assert create(svc(ports=[]), "Service") == ["spec.ports: Required value"]


def test_types_and_ips() -> None:
    assert create(svc(type="Magic"), "Service") == [
        'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", '
        '"LoadBalancer", "NodePort"'
    ]
    assert create(svc(type="NodePort", clusterIP="None"), "Service") == [
        "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort "
        "services"
    ]
    assert create(svc(clusterIP="10.0.0.300"), "Service") == [
        'spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. '
        "10.9.8.7 "
        "or 2001:db8::ffff)"
    ]
    assert create(svc(clusterIP="10.0.0.1", clusterIPs=["10.0.0.2"]), "Service") == [
        'spec.clusterIPs: Invalid value: []string{"10.0.0.2"}: first value must match `clusterIP`'
    ]
    assert create(svc(type="ExternalName", externalName="", ports=[]), "Service") == [
        "spec.externalName: Required value"
    ]


def test_cluster_ip_is_kept_and_immutable() -> None:
    old = default(svc(), SVC, context())
    omitted = copy.deepcopy(old)
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        del omitted["spec"][field]
    assert update(omitted, old, "Service") == []
    changed = copy.deepcopy(old)
    changed["spec"]["clusterIP"] = "10.96.0.77"
    changed["spec"]["clusterIPs"] = ["10.96.0.77"]
    assert update(changed, old, "Service") == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.77"}: may not change once set'
    ]
    ports = copy.deepcopy(old)
    ports["spec"]["ports"].append({"name": "b", "port": 81})
    ports["spec"]["ports"][0]["name"] = "a"
    assert update(ports, old, "Service") == []
