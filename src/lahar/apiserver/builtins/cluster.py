"""Namespaces, Nodes, Events, Endpoints, Leases, PriorityClasses and Bindings.

Small kinds with a handful of rules each. Namespaces get the
``kubernetes.io/metadata.name`` label, the ``kubernetes`` finalizer and phase
``Active``; Nodes validate taints and pod CIDRs (which may only be set once);
Events only get the lenient legacy checks core/v1 applies; Leases need a
positive duration; PriorityClasses cap user values at one billion, reserve the
``system-`` prefix and freeze ``value`` and ``preemptionPolicy``.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.builtins.podspec import PREEMPTION_POLICIES
from lahar.apiserver.builtins.scheduling import TAINT_EFFECTS
from lahar.apiserver.errors import Cause

NAMESPACE_LABEL = "kubernetes.io/metadata.name"
KUBERNETES_FINALIZER = "kubernetes"
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
_PROTOCOLS = ["SCTP", "TCP", "UDP"]


# Namespaces -------------------------------------------------------------------------------


def default_namespace(
    obj: dict[str, Any], old: dict[str, Any] | None, subresource: str = ""
) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    if meta.get("name"):
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        labels[NAMESPACE_LABEL] = meta["name"]
        meta["labels"] = labels
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if old is None:
        finalizers = list(spec.get("finalizers") or [])
        if KUBERNETES_FINALIZER not in finalizers:
            finalizers.append(KUBERNETES_FINALIZER)
        spec["finalizers"] = finalizers
        obj["status"] = {"phase": "Active"}
    elif subresource != "finalize":
        # spec.finalizers changes only through the finalize subresource.
        old_spec = old.get("spec") or {}
        if "finalizers" in old_spec:
            spec["finalizers"] = list(old_spec["finalizers"])
    obj["spec"] = spec
    return obj


def validate_namespace(obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for f in (obj.get("spec") or {}).get("finalizers") or []:
        causes += [fe.invalid("spec.finalizers", f, m) for m in names.qualified_name(str(f))]
        if "/" not in str(f) and f != KUBERNETES_FINALIZER:
            causes.append(
                fe.invalid(
                    "spec.finalizers",
                    f,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return causes


def validate_namespace_status(obj: dict[str, Any]) -> list[Cause]:
    phase = (obj.get("status") or {}).get("phase") or ""
    if not (obj.get("metadata") or {}).get("deletionTimestamp"):
        if phase != "Active":
            return [
                fe.invalid(
                    "status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"
                )
            ]
    elif phase != "Terminating":
        return [
            fe.invalid(
                "status.Phase",
                phase,
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )
        ]
    return []


# Nodes ------------------------------------------------------------------------------------


def default_node(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        if spec.get("podCIDR") and not spec.get("podCIDRs"):
            spec["podCIDRs"] = [spec["podCIDR"]]
        elif spec.get("podCIDRs") and not spec.get("podCIDR"):
            spec["podCIDR"] = spec["podCIDRs"][0]
    status = obj.get("status")
    if (
        isinstance(status, dict)
        and status.get("allocatable") is None
        and status.get("capacity") is not None
    ):
        status["allocatable"] = dict(status["capacity"])
    return obj


def validate_node(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.get("taints") or []):
        p = fe.index("spec.taints", i)
        key, value, effect = (
            str(taint.get("key") or ""),
            str(taint.get("value") or ""),
            taint.get("effect") or "",
        )
        causes += [fe.invalid(fe.child(p, "key"), key, m) for m in names.qualified_name(key)]
        problems = names.label_value(value)
        if problems:
            causes.append(fe.invalid(fe.child(p, "value"), value, ";".join(problems)))
        if not effect:
            causes.append(fe.required(fe.child(p, "effect")))
        elif effect not in TAINT_EFFECTS:
            causes.append(fe.not_supported(fe.child(p, "effect"), effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            causes.append(
                Cause(
                    fe.DUPLICATE,
                    f"Duplicate value: {fe.show(taint)}: "
                    "taints must be unique by key and effect pair",
                    p,
                )
            )
        seen.add((key, effect))
    cidrs = spec.get("podCIDRs") or []
    for i, value in enumerate(cidrs):
        causes += [
            fe.invalid(fe.index("spec.podCIDRs", i), value, m) for m in names.cidr(str(value))
        ]
    if len(cidrs) > 2:
        causes.append(
            fe.invalid(
                "spec.podCIDRs", cidrs, "may specify no more than one CIDR for each IP family"
            )
        )
    return causes


def validate_node_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    causes: list[Cause] = []
    if old_spec.get("podCIDRs") and spec.get("podCIDRs") != old_spec["podCIDRs"]:
        causes.append(
            fe.forbidden(
                "spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'
            )
        )
    if old_spec.get("providerID") and spec.get("providerID") != old_spec["providerID"]:
        causes.append(
            fe.forbidden(
                "spec.providerID", 'node updates may not change providerID except from "" to valid'
            )
        )
    return causes + validate_node(new)


# Events, Endpoints, Leases, Bindings ----------------------------------------------------


def validate_event(obj: dict[str, Any]) -> list[Cause]:
    """The lenient checks core/v1 applies to Events."""
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    involved = obj.get("involvedObject") or {}
    involved_ns = involved.get("namespace") or ""
    causes: list[Cause] = []
    mismatch = fe.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    if not obj.get("eventTime"):
        if (not involved_ns and namespace not in ("", "default")) or (
            involved_ns and involved_ns != namespace
        ):
            causes.append(mismatch)
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            causes.append(mismatch)
        for field in ("reportingComponent", "reportingInstance", "action", "reason"):
            if not obj.get(field):
                causes.append(fe.required(field))
    causes += [fe.invalid("namespace", namespace, m) for m in names.dns1123_subdomain(namespace)]
    return causes


def default_endpoints(obj: dict[str, Any]) -> dict[str, Any]:
    for subset in obj.get("subsets") or []:
        for port in (subset or {}).get("ports") or []:
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"
    return obj


def validate_endpoints(obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for i, subset in enumerate(obj.get("subsets") or []):
        p = fe.index("subsets", i)
        if not subset.get("addresses") and not subset.get("notReadyAddresses"):
            causes.append(fe.required(p, "must specify `addresses` or `notReadyAddresses`"))
        for field in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(subset.get(field) or []):
                ip = str((addr or {}).get("ip") or "")
                causes += [
                    fe.invalid(fe.child(fe.index(fe.child(p, field), j), "ip"), ip, m)
                    for m in names.ip_address(ip)
                ]
        ports = subset.get("ports") or []
        for j, port in enumerate(ports):
            pp = fe.index(fe.child(p, "ports"), j)
            if len(ports) > 1 and not port.get("name"):
                causes.append(fe.required(fe.child(pp, "name")))
            elif port.get("name"):
                causes += [
                    fe.invalid(fe.child(pp, "name"), port["name"], m)
                    for m in names.dns1123_label(port["name"])
                ]
            causes += [
                fe.invalid(fe.child(pp, "port"), port.get("port"), m)
                for m in names.port_number(port.get("port"))
            ]
            if port.get("protocol") not in _PROTOCOLS:
                causes.append(
                    fe.not_supported(fe.child(pp, "protocol"), port.get("protocol"), _PROTOCOLS)
                )
    return causes


def validate_lease(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        causes.append(fe.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
        causes.append(
            fe.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")
        )
    return causes


def validate_binding(obj: dict[str, Any]) -> list[Cause]:
    target = obj.get("target") or {}
    causes: list[Cause] = []
    if target.get("kind") and target["kind"] != "Node":
        causes.append(fe.not_supported("target.kind", target["kind"], ["Node", "<empty>"]))
    if not target.get("name"):
        causes.append(fe.required("target.name"))
    return causes


# PriorityClasses ------------------------------------------------------------------------


def default_priority_class(obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"
    return obj


def validate_priority_class(obj: dict[str, Any]) -> list[Cause]:
    name = (obj.get("metadata") or {}).get("name") or ""
    value = obj.get("value", 0)
    causes: list[Cause] = []
    if not isinstance(value, int) or isinstance(value, bool):
        causes.append(fe.invalid("value", value, "must be an integer"))
        value = 0
    if name.startswith("system-"):
        problem = _system_class_problem(name, value, bool(obj.get("globalDefault")))
        if problem:
            causes.append(
                fe.forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use only. "
                    f"error: {problem}",
                )
            )
    elif value > HIGHEST_USER_PRIORITY:
        causes.append(
            fe.forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}",
            )
        )
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        causes.append(fe.not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return causes


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if SYSTEM_PRIORITY_CLASSES[name] != value:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if new.get("value", 0) != old.get("value", 0):
        causes.append(fe.forbidden("value", "may not be changed in an update."))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        causes.append(fe.immutable("preemptionPolicy", new.get("preemptionPolicy")))
    return causes + validate_priority_class(new)
