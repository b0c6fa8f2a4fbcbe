"""Pods: server-side defaults, admission-time fields, and create/update rules.

On create a real cluster does more than static defaulting: admission plugins
give the pod the ``default`` service account, resolve ``priorityClassName``
into ``priority`` (refusing unknown classes with 403), add the 300-second
not-ready/unreachable tolerations, and the registry resets the status to
``Pending`` with the computed QoS class. All of that happens here so a pod read
back from lahar is indistinguishable from one read from kube-apiserver.

Updates follow the pod immutability rules: only images, a shrinking
``activeDeadlineSeconds``, added tolerations and removed scheduling gates may
change; anything else is refused with the familiar ``pod updates may not change
fields other than ...`` message.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names, podspec, quantities, scheduling
from lahar.apiserver.builtins.context import DefaultContext
from lahar.apiserver.builtins.poddefaults import default_pod_spec
from lahar.apiserver.errors import APIError, Cause

SYSTEM_PRIORITIES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
DEFAULT_TOLERATION_SECONDS = 300
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
_UPDATABLE = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_MAX_INT32 = 2**31 - 1


def default_pod(
    obj: dict[str, Any], ctx: DefaultContext, old: dict[str, Any] | None
) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    default_pod_spec(spec, is_pod=True)
    if old is not None:
        old_spec = old.get("spec") or {}
        for field in ("priority", "preemptionPolicy"):
            if spec.get(field) is None and old_spec.get(field) is not None:
                spec[field] = old_spec[field]
        return obj
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"] = "default"
    _admit_priority(obj, spec, ctx)
    _add_default_tolerations(spec)
    status: dict[str, Any] = {"phase": "Pending", "qosClass": qos_class(spec)}
    if spec.get("schedulingGates"):
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": None,
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        ]
    obj["status"] = status
    return obj


def _forbidden(obj: dict[str, Any], reason: str) -> APIError:
    name = (obj.get("metadata") or {}).get("name") or ""
    return APIError(
        403, "Forbidden", f'pods "{name}" is forbidden: {reason}', name=name, kind="pods"
    )


def _admit_priority(obj: dict[str, Any], spec: dict[str, Any], ctx: DefaultContext) -> None:
    """The Priority admission plugin: class name -> ``priority`` and ``preemptionPolicy``."""
    class_name = spec.get("priorityClassName") or ""
    policy = "PreemptLowerPriority"
    if not class_name:
        found = ctx.default_priority_class()
        value = 0
        if found:
            class_name, value = found[0], found[1]
            policy = found[2] if len(found) > 2 and found[2] else policy
            spec["priorityClassName"] = class_name
    else:
        resolved = ctx.priority_of(class_name)
        if resolved is None:
            resolved = SYSTEM_PRIORITIES.get(class_name)
        if resolved is None:
            raise _forbidden(obj, f"no PriorityClass with name {class_name} was found")
        if isinstance(resolved, tuple):
            value, policy = resolved[0], resolved[1] or policy
        else:
            value = resolved
    given = spec.get("priority")
    if given is not None and given != value:
        raise _forbidden(
            obj,
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    spec["priority"] = value
    given_policy = spec.get("preemptionPolicy")
    if given_policy is not None and given_policy != policy:
        raise _forbidden(
            obj,
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided "
            "in pod spec; "
            f"priority admission controller computed {policy} from the given PriorityClass name",
        )
    spec["preemptionPolicy"] = policy


def _add_default_tolerations(spec: dict[str, Any]) -> None:
    """DefaultTolerationSeconds: tolerate not-ready/unreachable nodes for 300 s."""
    tolerations = spec.get("tolerations") or []
    covered = {_NOT_READY: False, _UNREACHABLE: False}
    for tol in tolerations:
        if not isinstance(tol, dict):
            continue
        if tol.get("effect") in (None, "", "NoExecute"):
            for taint in covered:
                if tol.get("key") in (None, "", taint):
                    covered[taint] = True
    added = [
        {
            "key": taint,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
        }
        for taint, ok in covered.items()
        if not ok
    ]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def qos_class(spec: dict[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort, from cpu/memory requests and limits."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    for ctr in containers:
        resources = (ctr or {}).get("resources") or {}
        for name, amount in quantities.amounts(resources.get("requests")).items():
            if name in ("cpu", "memory") and amount > 0:
                requests[name] = requests.get(name, Fraction(0)) + amount
        found = set()
        for name, amount in quantities.amounts(resources.get("limits")).items():
            if name in ("cpu", "memory") and amount > 0:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + amount
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if (
        guaranteed
        and all(limits.get(n) == v for n, v in requests.items())
        and len(requests) == len(limits)
    ):
        return "Guaranteed"
    return "Burstable"


def validate_pod_create(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec")
    causes = podspec.validate_pod_spec(spec, "spec", is_pod=True)
    if isinstance(spec, dict):
        if spec.get("ephemeralContainers"):
            causes.append(fe.forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and spec.get("schedulingGates"):
            causes.append(
                fe.forbidden(
                    "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
                )
            )
    return causes


def validate_pod_update(new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[Cause]:
    if subresource == "status":
        return _validate_status_update(new, old)
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    causes = podspec.validate_pod_spec(new.get("spec"), "spec", is_pod=True)
    for field in ("containers", "initContainers"):
        ctrs, old_ctrs = spec.get(field) or [], old_spec.get(field) or []
        if len(ctrs) != len(old_ctrs):
            causes.append(
                fe.forbidden(f"spec.{field}", "pod updates may not add or remove containers")
            )
            return causes
    deadline, old_deadline = (
        spec.get("activeDeadlineSeconds"),
        old_spec.get("activeDeadlineSeconds"),
    )
    if deadline is not None:
        if not isinstance(deadline, int) or not 0 <= deadline <= _MAX_INT32:
            causes.append(
                fe.invalid("spec.activeDeadlineSeconds", deadline, names.range_error(0, _MAX_INT32))
            )
            return causes
        if old_deadline is not None and old_deadline < deadline:
            causes.append(
                fe.invalid(
                    "spec.activeDeadlineSeconds",
                    deadline,
                    "must be less than or equal to previous value",
                )
            )
            return causes
    elif old_deadline is not None:
        causes.append(
            fe.invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    causes += _only_added_tolerations(
        spec.get("tolerations") or [], old_spec.get("tolerations") or []
    )
    causes += _only_removed_gates(
        spec.get("schedulingGates") or [], old_spec.get("schedulingGates") or []
    )
    munged = copy.deepcopy(spec)
    for field in ("containers", "initContainers"):
        for ctr, old_ctr in zip(munged.get(field) or [], old_spec.get(field) or [], strict=False):
            if isinstance(ctr, dict) and isinstance(old_ctr, dict):
                ctr["image"] = old_ctr.get("image")
    for field in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        _copy_field(munged, old_spec, field)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if (
        isinstance(old_grace, int)
        and old_grace < 0
        and munged.get("terminationGracePeriodSeconds") == 1
    ):
        munged["terminationGracePeriodSeconds"] = old_grace
    if old_spec.get("schedulingGates"):
        causes += _gated_node_selector(munged, old_spec)
        # Node affinity may also be changed while the pod is gated.
        others = {k: v for k, v in (munged.get("affinity") or {}).items() if k != "nodeAffinity"}
        old_others = {
            k: v for k, v in (old_spec.get("affinity") or {}).items() if k != "nodeAffinity"
        }
        if prune(others) == prune(old_others):
            _copy_field(munged, old_spec, "affinity")
    if prune(munged) != prune(old_spec):
        diff = "\n".join(spec_diff(prune(old_spec), prune(munged), "spec"))
        causes.append(
            fe.forbidden(
                "spec", f"pod updates may not change fields other than {_UPDATABLE}\n{diff}"
            )
        )
    return causes


def _copy_field(target: dict[str, Any], source: dict[str, Any], field: str) -> None:
    if field in source:
        target[field] = copy.deepcopy(source[field])
    else:
        target.pop(field, None)


def _only_added_tolerations(new: list[Any], old: list[Any]) -> list[Cause]:
    def without_seconds(tol: Any) -> Any:
        return (
            {k: v for k, v in tol.items() if k != "tolerationSeconds"}
            if isinstance(tol, dict)
            else tol
        )

    remaining = [without_seconds(t) for t in new]
    for tol in old:
        if without_seconds(tol) not in remaining:
            return [
                fe.forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return scheduling.validate_tolerations(new, "spec.tolerations")


def _only_removed_gates(new: list[Any], old: list[Any]) -> list[Cause]:
    old_names = {(g or {}).get("name") for g in old if isinstance(g, dict)}
    return [
        fe.forbidden(
            fe.child(fe.index("spec.schedulingGates", i), "name"),
            f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
        )
        for i, gate in enumerate(new)
        if isinstance(gate, dict) and gate.get("name") not in old_names
    ]


def _gated_node_selector(munged: dict[str, Any], old_spec: dict[str, Any]) -> list[Cause]:
    """Gated pods may gain node-selector entries but not lose or change them."""
    new_sel, old_sel = munged.get("nodeSelector") or {}, old_spec.get("nodeSelector") or {}
    causes = [
        fe.invalid(
            "spec.nodeSelector", new_sel, "only additions are allowed (no mutations or deletions)"
        )
        for k, v in old_sel.items()
        if new_sel.get(k) != v
    ][:1]
    _copy_field(munged, old_spec, "nodeSelector")
    return causes


def _validate_status_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    status, old_status = new.get("status") or {}, old.get("status") or {}
    causes = scheduling.validate_pod_conditions(status.get("conditions"), "metadata.conditions")
    if (new.get("spec") or {}).get("nodeName") != (old.get("spec") or {}).get("nodeName"):
        causes.append(fe.forbidden("status.nodeName", "may not be changed directly"))
    nominated = status.get("nominatedNodeName")
    if nominated and nominated != old_status.get("nominatedNodeName"):
        causes += [
            fe.invalid("status.nominatedNodeName", nominated, m)
            for m in names.dns1123_subdomain(nominated)
        ]
    if status.get("qosClass") != old_status.get("qosClass"):
        causes.append(fe.immutable("status.qosClass", status.get("qosClass") or ""))
    restart = (old.get("spec") or {}).get("restartPolicy")
    if restart != "Always":
        causes += _terminated_stay_terminated(status, old_status, restart)
    for i, ip in enumerate(status.get("podIPs") or []):
        value = str((ip or {}).get("ip") or "")
        causes += [
            fe.invalid(fe.index("status.podIPs", i), value, m) for m in names.ip_address(value)
        ]
    return causes


def _terminated_stay_terminated(
    status: dict[str, Any], old_status: dict[str, Any], restart: Any
) -> list[Cause]:
    causes: list[Cause] = []
    new_by_name = {
        s.get("name"): s for s in status.get("containerStatuses") or [] if isinstance(s, dict)
    }
    for i, old_cs in enumerate(old_status.get("containerStatuses") or []):
        terminated = ((old_cs or {}).get("state") or {}).get("terminated")
        if not terminated or (restart == "OnFailure" and terminated.get("exitCode", 0) != 0):
            continue
        new_cs = new_by_name.get(old_cs.get("name"))
        if new_cs is not None and not (new_cs.get("state") or {}).get("terminated"):
            path = fe.child(fe.index("status.containerStatuses", i), "state")
            causes.append(fe.forbidden(path, "may not be transitioned to non-terminated state"))
    return causes


def prune(value: Any) -> Any:
    """Drop null/empty members so ``[]``, ``{}`` and absent compare equal, as upstream does."""
    if isinstance(value, dict):
        out = {k: prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {}) or k == "securityContext"}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def spec_diff(old: Any, new: Any, path: str) -> list[str]:
    """Human-readable ``path: old -> new`` lines for the differing leaves."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines: list[str] = []
        for k in sorted(set(old) | set(new)):
            lines += spec_diff(old.get(k), new.get(k), fe.child(path, k))
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        lines = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            lines += spec_diff(a, b, fe.index(path, i))
        return lines
    if old == new:
        return []
    return [f"  {path}: {fe.show(old)} -> {fe.show(new)}"]
