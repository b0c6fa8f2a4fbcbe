"""``metav1.LabelSelector`` objects embedded in specs (Job selectors, affinity terms).

Two things are needed by the kind validators: checking that a selector is well
formed (operators, values, label syntax) and evaluating it against a label set,
so that a Job whose selector does not match its own pod template is refused
exactly like the real server refuses it.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.builtins.metadata import validate_labels
from lahar.apiserver.errors import Cause

_SET_OPS = ("In", "NotIn")
_EXIST_OPS = ("Exists", "DoesNotExist")


def validate_label_selector(selector: Any, path: str) -> list[Cause]:
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [fe.invalid(path, selector, "must be an object")]
    causes = validate_labels(selector.get("matchLabels"), fe.child(path, "matchLabels"))
    expressions = selector.get("matchExpressions") or []
    for i, req in enumerate(expressions if isinstance(expressions, list) else []):
        req_path = fe.index(fe.child(path, "matchExpressions"), i)
        if not isinstance(req, dict):
            causes.append(fe.invalid(req_path, req, "must be an object"))
            continue
        op, values = req.get("operator"), req.get("values") or []
        if op in _SET_OPS:
            if not values:
                causes.append(
                    fe.required(
                        fe.child(req_path, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif op in _EXIST_OPS:
            if values:
                causes.append(
                    fe.forbidden(
                        fe.child(req_path, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            causes.append(
                fe.invalid(fe.child(req_path, "operator"), op, "not a valid selector operator")
            )
        key = str(req.get("key") or "")
        causes += [fe.invalid(fe.child(req_path, "key"), key, m) for m in names.qualified_name(key)]
        for j, value in enumerate(values):
            causes += [
                fe.invalid(fe.index(fe.child(req_path, "values"), j), value, m)
                for m in names.label_value(str(value))
            ]
    return causes


def matches(selector: Any, labels: dict[str, str] | None) -> bool:
    """Whether ``labels`` satisfy ``selector``; an empty selector matches everything."""
    labels = labels or {}
    if not isinstance(selector, dict):
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        present = key in labels
        if (
            (op == "In" and (not present or labels[key] not in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def is_empty(selector: Any) -> bool:
    return not isinstance(selector, dict) or (
        not selector.get("matchLabels") and not selector.get("matchExpressions")
    )
