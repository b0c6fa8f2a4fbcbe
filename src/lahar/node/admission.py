"""Pod admission on the node: does the pod fit in what the node has left?

A kubelet checks every pod bound to it against its allocatable resources minus what
its running pods request, and fails the pods that do not fit (phase Failed, reason
``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``, ``OutOf<extended resource>``), whatever
the scheduler thought. A node agent does the same, so a scheduler that over-commits a
node is caught here instead of passing silently.

The request is computed here on purpose, not borrowed from the scheduler: the same
rules (sum of the containers and sidecars, max'ed with each init container; pod-level
``spec.resources`` when given; plus ``spec.overhead``; a limit stands in for a missing
request), written a second time, so a mistake in one is not copied into the other.
Everything is in milli-units (``cpu: 2`` is 2000; ``memory: 1Ki`` is 1,024,000).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lahar.api.quantity import QuantityError, to_milli

Obj = dict[str, Any]
Amounts = dict[str, int]

# Resources a kubelet checks: these, extended resources (a domain/name) and hugepages.
CHECKED = ("cpu", "memory", "ephemeral-storage", "pods")


def _amounts(resources: Mapping[str, Any] | None) -> Amounts:
    out: Amounts = {}
    for name, value in (resources or {}).items():
        try:
            out[name] = to_milli(value)
        except (QuantityError, TypeError):
            continue  # the API server validates quantities; ignore what slipped through
    return out


def _container(c: Mapping[str, Any]) -> Amounts:
    res = c.get("resources") or {}
    merged = dict(res.get("limits") or {})
    merged.update(res.get("requests") or {})
    return _amounts(merged)


def _add(into: Amounts, more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _max(into: Amounts, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(pod: Obj) -> Amounts:
    """What the pod takes from its node, ``pods: 1`` included (milli-units)."""
    spec = pod.get("spec") or {}
    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        total = _amounts(pod_level)
    else:
        total = {}
        for c in spec.get("containers") or ():
            _add(total, _container(c))
        sidecars: Amounts = {}
        peak: Amounts = {}  # the most the init phase takes at once
        for c in spec.get("initContainers") or ():
            own = _container(c)
            if c.get("restartPolicy") == "Always":  # a sidecar runs beside the rest
                _add(sidecars, own)
                _max(peak, sidecars)
                continue
            init = dict(sidecars)  # an init container runs beside the sidecars before it
            _add(init, own)
            _max(peak, init)
        _add(total, sidecars)
        _max(total, peak)
    _add(total, _amounts(spec.get("overhead")))
    total["pods"] = total.get("pods", 0) + 1000
    return total


def _checked(name: str) -> bool:
    return name in CHECKED or "/" in name or name.startswith("hugepages-")


def admit(
    requests: Mapping[str, int], used: Mapping[str, int], allocatable: Mapping[str, int]
) -> tuple[str, str] | None:
    """None if the pod fits, else the (reason, message) a kubelet gives when it rejects it."""
    for name, want in requests.items():
        if want <= 0 or not _checked(name):
            continue
        have = allocatable.get(name, 0)
        in_use = used.get(name, 0)
        if in_use + want > have:
            unit = 1 if name == "cpu" else 1000  # cpu in millicores, the rest in units
            return (
                f"OutOf{name}",
                f"Pod was rejected: Node didn't have enough resource: {name}, "
                f"requested: {want // unit}, used: {in_use // unit}, capacity: {have // unit}",
            )
    return None


def add(used: Amounts, requests: Mapping[str, int]) -> None:
    _add(used, requests)


def subtract(used: Amounts, requests: Mapping[str, int]) -> None:
    for k, v in requests.items():
        left = used.get(k, 0) - v
        if left > 0:
            used[k] = left
        else:
            used.pop(k, None)


def allocatable(resources: Mapping[str, Any]) -> Amounts:
    """A Node's ``status.allocatable`` in milli-units."""
    return _amounts(resources)
