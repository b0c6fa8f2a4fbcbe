"""Scheduling fields of a PodSpec: tolerations, scheduling gates, node affinity.

Split from :mod:`podspec` because the scheduler-facing fields have their own
vocabulary (taint effects, selector operators) and are also needed on their own
by the Pod update rules, which accept added tolerations and removed gates.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.errors import Cause

TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
_SYSTEM_POD_CONDITIONS = {"PodScheduled", "Ready", "Initialized"}
_EMPTY_KEY_MSG = (
    'operator must be Exists when `key` is empty, which means "match all values and all keys"'
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_tolerations(tolerations: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, tol in enumerate(tolerations or []):
        p = fe.index(path, i)
        if not isinstance(tol, dict):
            causes.append(fe.invalid(p, tol, "must be an object"))
            continue
        key, op = tol.get("key") or "", tol.get("operator") or ""
        effect, value = tol.get("effect") or "", tol.get("value") or ""
        if key:
            causes += [fe.invalid(fe.child(p, "key"), key, m) for m in names.qualified_name(key)]
        if not key and op != "Exists":
            causes.append(
                fe.invalid(
                    fe.child(p, "operator"),
                    op,
                    _EMPTY_KEY_MSG,
                )
            )
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(
                fe.invalid(
                    fe.child(p, "effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if op in ("Equal", ""):
            problems = names.label_value(str(value))
            if problems:
                causes.append(fe.invalid(fe.child(p, "operator"), value, ";".join(problems)))
        elif op == "Exists":
            if value:
                causes.append(
                    fe.invalid(
                        fe.child(p, "operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            causes.append(fe.not_supported(fe.child(p, "operator"), op, ["Equal", "Exists"]))
        if effect and effect not in TAINT_EFFECTS:
            causes.append(fe.not_supported(fe.child(p, "effect"), effect, TAINT_EFFECTS))
    return causes


def validate_scheduling_gates(gates: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates or []):
        name = str((gate or {}).get("name") or "") if isinstance(gate, dict) else str(gate)
        causes += [fe.invalid(fe.index(path, i), name, m) for m in names.qualified_name(name)]
        if name in seen:
            causes.append(fe.duplicate(fe.index(path, i), name))
        seen.add(name)
    return causes


def validate_node_affinity(affinity: Any, path: str) -> list[Cause]:
    node = (affinity or {}).get("nodeAffinity") if isinstance(affinity, dict) else None
    if not isinstance(node, dict):
        return []
    causes: list[Cause] = []
    node_path = fe.child(path, "nodeAffinity")
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict):
        terms_path = fe.child(
            node_path, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"
        )
        terms = required.get("nodeSelectorTerms") or []
        if not terms:
            causes.append(fe.required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            causes += _validate_term(term, fe.index(terms_path, i))
    for i, pref in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        p = fe.index(fe.child(node_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
        weight = pref.get("weight")
        if not _is_int(weight) or not 1 <= weight <= 100:
            causes.append(fe.invalid(fe.child(p, "weight"), weight, "must be in the range 1-100"))
    return causes


def _validate_term(term: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for j, req in enumerate((term or {}).get("matchExpressions") or []):
        p = fe.index(fe.child(path, "matchExpressions"), j)
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn") and not values:
            causes.append(
                fe.required(
                    fe.child(p, "values"), "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
        elif op in ("Exists", "DoesNotExist") and values:
            causes.append(
                fe.forbidden(
                    fe.child(p, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif op in ("Gt", "Lt") and len(values) != 1:
            causes.append(
                fe.required(
                    fe.child(p, "values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
            )
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            causes.append(fe.invalid(fe.child(p, "operator"), op, "not a valid selector operator"))
        key = str(req.get("key") or "")
        causes += [fe.invalid(fe.child(p, "key"), key, m) for m in names.qualified_name(key)]
    return causes


def validate_pod_conditions(conditions: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, cond in enumerate(conditions or []):
        ctype = str((cond or {}).get("type") or "")
        if ctype not in _SYSTEM_POD_CONDITIONS:
            causes += [
                fe.invalid(fe.child(fe.index(path, i), "Type"), ctype, m)
                for m in names.qualified_name(ctype)
            ]
    return causes
