"""Admission for ``scheduling.volcano.sh/v1beta1`` Queues, with Volcano's messages.

Defaulting (CREATE): weight 0 -> 1, ``reclaimable`` -> true, hierarchy annotations get the
``root``/``1`` prefix. Validation: quantities, ``guarantee <= deserved <= capability``,
state, hierarchy annotations, parent rules and hierarchical quotas (CREATE/UPDATE), and
what may be deleted (DELETE).

lahar decision: besides Volcano's current delete rules, a queue that still has PodGroups
must be ``Closed`` before it is deleted (older Volcano refused every non-Closed delete),
so PodGroups are never left pointing at a queue that vanished while open.
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.api.quantity import QuantityError, parse_quantity
from lahar.volcano import constants as c
from lahar.volcano.admission import queue_resources as qr
from lahar.volcano.admission.common import (
    AdmissionDenied,
    Obj,
    aggregate,
    field_invalid,
    meta,
    not_found,
    spec,
)
from lahar.volcano.lookup import Lookup

VALIDATE_WEBHOOK = "validatequeue.volcano.sh"
MUTATE_WEBHOOK = "mutatequeue.volcano.sh"
DEFAULT_MAX_DEPTH = 5
_QUANTITY_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def mutate_queue(queue: Obj) -> Obj:
    out = copy.deepcopy(queue)
    annotations = out.setdefault("metadata", {}).get("annotations") or {}
    hierarchy = annotations.get(c.HIERARCHY_KEY, "")
    weights = annotations.get(c.HIERARCHY_WEIGHTS_KEY, "")
    if hierarchy and weights and not hierarchy.startswith("root"):
        annotations = dict(annotations)
        annotations[c.HIERARCHY_KEY] = f"root/{hierarchy}"
        annotations[c.HIERARCHY_WEIGHTS_KEY] = f"1/{weights}"
        out["metadata"]["annotations"] = annotations
    s = out.setdefault("spec", {})
    if s.get("reclaimable") is None:
        s["reclaimable"] = True
    if not s.get("weight"):
        s["weight"] = 1
    return out


def _quantity_errors(name: str, raw: Any, path: str) -> list[str]:
    try:
        value = parse_quantity(raw)
    except (QuantityError, TypeError, ValueError):
        return [
            field_invalid(
                path, str(raw), f"quantities must match the regular expression '{_QUANTITY_RE}'"
            )
        ]
    errs = []
    if value < 0:
        errs.append(field_invalid(path, qr.canonical(raw), "must be greater than or equal to 0"))
    if qr.is_scalar_name(name) and not name.startswith("hugepages-") and value.denominator != 1:
        errs.append(field_invalid(path, qr.canonical(raw), "must be an integer"))
    return errs


def _resource_errors(s: Obj) -> list[str]:
    base = "requestBody.spec"
    errs: list[str] = []
    capability: dict[str, Any] = s.get("capability") or {}
    deserved: dict[str, Any] = s.get("deserved") or {}
    guarantee: dict[str, Any] = (s.get("guarantee") or {}).get("resource") or {}
    for name in sorted(capability):
        errs += _quantity_errors(name, capability[name], f"{base}.capability.{name}")
    for name in sorted(deserved):
        errs += _quantity_errors(name, deserved[name], f"{base}.deserved.{name}")
    for name in sorted(guarantee):
        errs += _quantity_errors(name, guarantee[name], f"{base}.guarantee.resource.{name}")
        g = qr.canonical(guarantee[name])
        if name not in deserved:
            errs.append(
                field_invalid(
                    f"{base}.deserved.{name}",
                    "<nil>",
                    f"deserved[{name}] must be >= guarantee[{name}]={g}",
                )
            )
        elif _cmp(deserved[name], guarantee[name]) < 0:
            d = qr.canonical(deserved[name])
            errs.append(
                field_invalid(
                    f"{base}.deserved.{name}",
                    d,
                    f"deserved[{name}]={d} must be >= guarantee[{name}]={g}",
                )
            )
    for name in sorted(deserved):
        if name in capability and _cmp(deserved[name], capability[name]) > 0:
            d, cap = qr.canonical(deserved[name]), qr.canonical(capability[name])
            errs.append(
                field_invalid(
                    f"{base}.deserved.{name}",
                    d,
                    f"deserved[{name}]={d} must be <= capability[{name}]={cap}",
                )
            )
    return errs


def _cmp(a: Any, b: Any) -> int:
    try:
        x, y = parse_quantity(a), parse_quantity(b)
    except (QuantityError, TypeError, ValueError):
        return 0
    return (x > y) - (x < y)


def _hierarchy_errors(queue: Obj, lookup: Lookup) -> list[str]:
    path = "requestBody.metadata.annotations"
    annotations = meta(queue).get("annotations") or {}
    hierarchy = annotations.get(c.HIERARCHY_KEY, "")
    weights = annotations.get(c.HIERARCHY_WEIGHTS_KEY, "")
    if not hierarchy and not weights:
        return []
    if len(hierarchy.split("/")) != len(weights.split("/")):
        return [
            field_invalid(
                path,
                hierarchy,
                f"{c.HIERARCHY_KEY} must have the same length with {c.HIERARCHY_WEIGHTS_KEY}",
            )
        ]
    for weight in weights.split("/"):
        try:
            number = float(weight)
        except ValueError:
            return [
                field_invalid(
                    path,
                    weights,
                    f'{weight} in the {weights} is invalid number: strconv.ParseFloat: parsing "{weight}": invalid syntax',
                )
            ]
        if number <= 0:
            return [
                field_invalid(path, weights, f"{weight} in the {weights} must be larger than 0")
            ]
    name = meta(queue).get("name", "")
    for other in lookup.list_queues():
        other_hierarchy = (meta(other).get("annotations") or {}).get(c.HIERARCHY_KEY, "")
        if (
            other_hierarchy
            and meta(other).get("name") != name
            and other_hierarchy.startswith(hierarchy + "/")
        ):
            return [
                field_invalid(
                    path,
                    hierarchy,
                    f"{hierarchy} is not allowed to be in the sub path of {other_hierarchy} of queue {meta(other).get('name')}",
                )
            ]
    return []


def _children(lookup: Lookup, parent: str) -> list[Obj]:
    return [q for q in lookup.list_queues() if spec(q).get("parent") == parent]


def _allocated_pods(queue: Obj) -> int:
    raw = ((queue.get("status") or {}).get("allocated") or {}).get("pods")
    try:
        return int(parse_quantity(raw)) if raw is not None else 0
    except (QuantityError, TypeError, ValueError):
        return 0


def _parent_message(queue: Obj, lookup: Lookup, max_depth: int) -> str:
    name = meta(queue).get("name", "")
    parent = spec(queue).get("parent") or ""
    if parent in ("", c.ROOT_QUEUE):
        return ""
    if parent == name:
        return f"queue {name} cannot use itself as parent"
    depth, cursor = 1, parent
    while cursor not in ("", c.ROOT_QUEUE):
        depth += 1
        if depth > max_depth:
            return f"queue {name} exceeds the maximum allowed depth of {max_depth}"
        found = lookup.get_queue(cursor)
        if found is None:
            return f"failed to get parent queue {cursor} of queue {name}: {not_found('queue.scheduling.volcano.sh', cursor)}"
        cursor = spec(found).get("parent") or ""
    parent_queue = lookup.get_queue(parent)
    if parent_queue is None:
        return f"failed to get parent queue of queue {name}: {not_found('queue.scheduling.volcano.sh', parent)}"
    if not _children(lookup, parent) and _allocated_pods(parent_queue) > 0:
        return (
            f"queue {parent} cannot be the parent queue of queue {name} because it has "
            f"allocated Pods: {_allocated_pods(parent_queue)}"
        )
    return ""


def _ancestor_capability(queue: Obj, resource: str, lookup: Lookup) -> float | None:
    cursor = spec(queue).get("parent") or ""
    while cursor not in ("", c.ROOT_QUEUE):
        found = lookup.get_queue(cursor)
        if found is None:
            return None
        value = qr.to_vector(spec(found).get("capability")).get(resource, 0.0)
        if spec(found).get("capability") and value > 0:
            return value
        cursor = spec(found).get("parent") or ""
    return None


def _subtree_max_capability(queue: Obj, resource: str, lookup: Lookup, seen: set[str]) -> float:
    value = qr.to_vector(spec(queue).get("capability")).get(resource, 0.0)
    if value > 0:
        return value
    best = 0.0
    name = meta(queue).get("name", "")
    if name in seen:
        return 0.0
    for child in _children(lookup, name):
        best = max(best, _subtree_max_capability(child, resource, lookup, seen | {name}))
    return best


def _sum_message(prefix: str, parent: Obj, members: list[Obj]) -> str:
    parent_guarantee = qr.to_vector((spec(parent).get("guarantee") or {}).get("resource"))
    parent_deserved = qr.to_vector(spec(parent).get("deserved"))
    total_g: qr.Vector = {}
    total_d: qr.Vector = {}
    for member in members:
        total_g = qr.add(
            total_g, qr.to_vector((spec(member).get("guarantee") or {}).get("resource"))
        )
        if qr.less_partly(parent_guarantee, total_g):
            return (
                f"{prefix} validation failed: sum of children's guarantee ({qr.vector_string(total_g)}) "
                f"exceeds parent's guarantee limit ({qr.vector_string(parent_guarantee)})"
            )
        total_d = qr.add(total_d, qr.to_vector(spec(member).get("deserved")))
        if qr.less_partly(parent_deserved, total_d):
            return (
                f"{prefix} validation failed: sum of children's deserved ({qr.vector_string(total_d)}) "
                f"exceeds parent's deserved limit ({qr.vector_string(parent_deserved)})"
            )
    return ""


def _hierarchical_resources_message(queue: Obj, lookup: Lookup) -> str:
    name = meta(queue).get("name", "")
    parent_name = spec(queue).get("parent") or ""
    if parent_name not in ("", c.ROOT_QUEUE):
        parent = lookup.get_queue(parent_name)
        if parent is None:
            return f"parent queue {parent_name} not found: {not_found('queue.scheduling.volcano.sh', parent_name)}"
        own = qr.to_vector(spec(queue).get("capability"))
        for resource in qr.names(own, spec(queue).get("capability")):
            limit = _ancestor_capability(queue, resource, lookup)
            if limit is not None and own[resource] > limit:
                return (
                    f"queue {name} capability[{resource}]={qr.format_single(resource, own[resource])} "
                    f"exceeds its ancestor's capability={qr.format_single(resource, limit)}"
                )
        siblings = [q for q in _children(lookup, parent_name) if meta(q).get("name") != name]
        msg = _sum_message(f"parent queue {parent_name}", parent, [*siblings, queue])
        if msg:
            return msg
    children = [q for q in _children(lookup, name) if meta(q).get("name") != name]
    if not children:
        return ""
    capability = spec(queue).get("capability")
    if capability:
        own = qr.to_vector(capability)
        for resource in qr.names(own, capability):
            child_max = max(
                _subtree_max_capability(ch, resource, lookup, {name}) for ch in children
            )
            if own[resource] < child_max:
                return (
                    f"queue {name} capability[{resource}]={qr.format_single(resource, own[resource])} "
                    f"is smaller than its descendants' max capability={qr.format_single(resource, child_max)}"
                )
    return _sum_message(f"queue {name}", queue, children)


def _resources_changed(queue: Obj, old: Obj) -> bool:
    new_s, old_s = spec(queue), spec(old)
    return any(new_s.get(k) != old_s.get(k) for k in ("parent", "capability", "deserved")) or (
        new_s.get("guarantee") or {}
    ).get("resource") != (old_s.get("guarantee") or {}).get("resource")


def queue_write_message(
    operation: str,
    queue: Obj,
    old: Obj | None,
    lookup: Lookup,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    root_protection: bool = True,
) -> str:
    errs = _resource_errors(spec(queue))
    state = (queue.get("status") or {}).get("state", "")
    old_state = ((old or {}).get("status") or {}).get("state", "")
    # Volcano checks the state on every update, so a Closing queue (a state its own
    # controller writes) can never be edited again (volcano#3517). lahar checks it only
    # when the write sets it, on purpose.
    if state and state not in ("Open", "Closed") and (operation == "CREATE" or state != old_state):
        errs.append(
            field_invalid("requestBody.spec.state", state, "queue state must be in [Open Closed]")
        )
    errs += _hierarchy_errors(queue, lookup)
    if errs:
        return aggregate(errs)
    name = meta(queue).get("name", "")
    if operation == "CREATE" or (
        old is not None and spec(old).get("parent") != spec(queue).get("parent")
    ):
        msg = _parent_message(queue, lookup, max_depth)
        if msg:
            return msg
    if (
        root_protection
        and operation == "UPDATE"
        and name == c.ROOT_QUEUE
        and old is not None
        and _resources_changed(queue, old)
    ):
        return (
            "root queue's resource attributes (capability, deserved, guarantee) cannot be modified"
        )
    if name != c.ROOT_QUEUE and (
        operation == "CREATE" or (old is not None and _resources_changed(queue, old))
    ):
        return _hierarchical_resources_message(queue, lookup)
    return ""


def queue_delete_message(name: str, lookup: Lookup, *, allocated_pods_check: bool = True) -> str:
    if name in (c.DEFAULT_QUEUE, c.ROOT_QUEUE):
        return f"`{name}` queue can not be deleted"
    queue = lookup.get_queue(name)
    if queue is None:
        return not_found("queue.scheduling.volcano.sh", name)
    if allocated_pods_check and _allocated_pods(queue) > 0:
        return f"queue {name} cannot be deleted because it has allocated Pods: {_allocated_pods(queue)}"
    children = [meta(q).get("name", "") for q in _children(lookup, name)]
    if children:
        return f"queue {name} can not be deleted because it has {len(children)} child queues: {', '.join(children)}"
    state = (queue.get("status") or {}).get("state", "")
    if lookup.list_podgroups(name) and state != "Closed":
        return f"only queue with state `Closed` can be deleted, queue `{name}` state is `{state}`"
    return ""


def validate_queue(
    operation: str, queue: Obj | None, old: Obj | None, name: str, lookup: Lookup
) -> None:
    if operation == "DELETE":
        msg = queue_delete_message(name, lookup)
    elif operation in ("CREATE", "UPDATE") and queue is not None:
        msg = queue_write_message(operation, queue, old, lookup)
    else:
        return
    if msg:
        raise AdmissionDenied(VALIDATE_WEBHOOK, msg)
