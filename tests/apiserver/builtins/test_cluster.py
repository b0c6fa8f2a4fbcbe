"""Namespaces, Nodes, Events, Endpoints, Leases, PriorityClasses and Bindings."""

from __future__ import annotations

import copy

from lahar.apiserver.builtins import default

from .helpers import RT, context, create, update


def test_namespace_defaults() -> None:
    out = default({"metadata": {"name": "team-a"}}, RT["Namespace"], context())
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert out["spec"] == {"finalizers": ["kubernetes"]}
    assert out["status"] == {"phase": "Active"}
    assert create({"metadata": {"name": "team-a"}}, "Namespace") == []


def test_namespace_rules() -> None:
    assert create({"metadata": {"name": "Team"}}, "Namespace")[0].startswith(
        'metadata.name: Invalid value: "Team": a lowercase RFC 1123 label'
    )
    bad = {"metadata": {"name": "a"}, "spec": {"finalizers": ["custom"]}}
    assert create(bad, "Namespace") == [
        'spec.finalizers: Invalid value: "custom": name is neither a standard finalizer name nor '
        "is it fully qualified"
    ]
    old = default({"metadata": {"name": "a"}}, RT["Namespace"], context())
    new = copy.deepcopy(old)
    new["spec"]["finalizers"] = []  # only the finalize subresource may change them
    assert default(new, RT["Namespace"], context(), old=old)["spec"]["finalizers"] == ["kubernetes"]
    status = copy.deepcopy(old)
    status["status"]["phase"] = "Terminating"
    assert update(status, old, "Namespace", subresource="status") == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` "
        "is empty"
    ]


def node(**spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": dict(spec)}


def test_node_taints_and_cidrs() -> None:
    taints = [
        {"key": "gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "gpu", "value": "x", "effect": "NoSchedule"},
        {"key": "bad key", "effect": "Sometimes"},
        {"key": "k"},
    ]
    out = create(node(taints=taints, podCIDR="10.244.0.0/33"), "Node")
    assert out[0].startswith(
        'spec.taints[1]: Duplicate value: map[string]string{"effect":"NoSchedule"'
    )
    assert out[0].endswith("taints must be unique by key and effect pair")
    assert out[1].startswith('spec.taints[2].key: Invalid value: "bad key": name part must')
    assert out[2:] == [
        'spec.taints[2].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"',
        "spec.taints[3].effect: Required value",
        'spec.podCIDRs[0]: Invalid value: "10.244.0.0/33": must be a valid CIDR value, (e.g. '
        "10.9.8.0/24 or 2001:db8::/64)",
    ]
    defaulted = default(node(podCIDR="10.244.1.0/24"), RT["Node"], context())
    assert defaulted["spec"]["podCIDRs"] == ["10.244.1.0/24"]


def test_node_pod_cidr_is_set_once() -> None:
    old = default(node(podCIDR="10.244.1.0/24"), RT["Node"], context())
    new = copy.deepcopy(old)
    new["spec"] = {"podCIDR": "10.244.2.0/24", "podCIDRs": ["10.244.2.0/24"], "unschedulable": True}
    assert update(new, old, "Node") == [
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'
    ]


def test_events_are_lenient() -> None:
    ev = {
        "metadata": {"name": "p.17abc", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled",
        "message": "ok",
    }
    assert create(ev, "Event") == []
    wrong = copy.deepcopy(ev)
    wrong["involvedObject"]["namespace"] = "other"
    assert create(wrong, "Event") == [
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace'
    ]


def test_endpoints() -> None:
    ep = {
        "metadata": {"name": "web", "namespace": "default"},
        "subsets": [
            {"addresses": [{"ip": "10.1.0.5"}], "ports": [{"port": 8080}, {"port": 9090}]},
            {},
        ],
    }
    out = default(ep, RT["Endpoints"], context())
    assert out["subsets"][0]["ports"][0]["protocol"] == "TCP"
    assert create(ep, "Endpoints") == [
        "subsets[0].ports[0].name: Required value",
        "subsets[0].ports[1].name: Required value",
        "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`",
    ]


def test_lease() -> None:
    lease = {
        "metadata": {"name": "lahar-scheduler", "namespace": "kube-system"},
        "spec": {"leaseDurationSeconds": 0},
    }
    assert create(lease, "Lease") == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    ]
    lease["spec"] = {"leaseDurationSeconds": 15, "holderIdentity": "a", "leaseTransitions": 2}
    assert create(lease, "Lease") == []


def pc(name: str, value: int, **fields: object) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


def test_priority_class() -> None:
    assert (
        default(pc("high", 1000), RT["PriorityClass"], context())["preemptionPolicy"]
        == "PreemptLowerPriority"
    )
    assert create(pc("high", 1000), "PriorityClass") == []
    assert create(pc("huge", 1_000_000_001), "PriorityClass") == [
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
    ]
    assert create(pc("system-mine", 5), "PriorityClass") == [
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for "
        "system "
        "use only. error: system-mine is not a known system priority class"
    ]
    assert create(pc("system-node-critical", 2000001000), "PriorityClass") == []
    assert create(pc("x", 1, preemptionPolicy="Sometimes"), "PriorityClass") == [
        'preemptionPolicy: Unsupported value: "Sometimes": supported values: '
        '"PreemptLowerPriority", "Never"'
    ]
    old = default(pc("high", 1000), RT["PriorityClass"], context())
    new = copy.deepcopy(old)
    new["value"] = 2000
    new["preemptionPolicy"] = "Never"
    assert update(new, old, "PriorityClass") == [
        "value: Forbidden: may not be changed in an update.",
        'preemptionPolicy: Invalid value: "Never": field is immutable',
    ]


def test_binding() -> None:
    binding = {"metadata": {"name": "p", "namespace": "default"}, "target": {"kind": "Pod"}}
    assert create(binding, "Binding") == [
        'target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"',
        "target.name: Required value",
    ]


def test_namespace_finalize_subresource_may_change_finalizers() -> None:
    old = default({"metadata": {"name": "a"}}, RT["Namespace"], context())
    new = copy.deepcopy(old)
    new["spec"]["finalizers"] = []
    out = default(new, RT["Namespace"], context(), old=old, subresource="finalize")
    assert out["spec"]["finalizers"] == []
