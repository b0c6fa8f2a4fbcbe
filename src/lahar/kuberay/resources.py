"""Resource arithmetic KubeRay does over pod templates: sums, replica counts.

Quirks kept on purpose (see docs/kuberay-compat.md): in every sum a container's
*requests* win per resource name and limits only fill names that have no request
(§7 item 1), only ``containers`` count (not init containers, not pod overhead),
desired *counts* clamp ``replicas`` into [min, max] while desired *resources* use
the raw value (§7 item 2), and an explicit ``numOfHosts: 0`` zeroes a group (§7
item 3). Sums are exact (fractions) and printed as canonical quantity strings,
keeping the binary/decimal style of the first value added, as Go's
``resource.Quantity.Add`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from lahar.api.quantity import format_quantity, parse_quantity
from lahar.kuberay import constants as c


def _is_binary(text: Any) -> bool:
    return isinstance(text, str) and text.strip().endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))


@dataclass
class ResourceSum:
    """A ResourceList being summed: exact values plus the print style of each name."""

    values: dict[str, Fraction] = field(default_factory=dict)
    binary: dict[str, bool] = field(default_factory=dict)

    def add(self, name: str, quantity: Any, times: int = 1) -> None:
        value = parse_quantity(quantity) * times
        if name not in self.values:
            self.values[name] = Fraction(0)
            self.binary[name] = _is_binary(quantity)
        self.values[name] += value

    def add_sum(self, other: ResourceSum, times: int = 1) -> None:
        for name, value in other.values.items():
            if name not in self.values:
                self.values[name] = Fraction(0)
                self.binary[name] = other.binary.get(name, False)
            self.values[name] += value * times

    def to_list(self) -> dict[str, str]:
        """A ResourceList; names sorted as Go prints a map."""
        return {
            name: format_quantity(self.values[name], binary=self.binary[name])
            for name in sorted(self.values)
        }


def container_resources(container: dict[str, Any]) -> ResourceSum:
    res = container.get("resources") or {}
    requests = res.get("requests") or {}
    limits = res.get("limits") or {}
    out = ResourceSum()
    for name, qty in requests.items():
        out.add(name, qty)
    for name, qty in limits.items():
        if name not in requests:
            out.add(name, qty)
    return out


def pod_template_resources(template: dict[str, Any]) -> ResourceSum:
    """Sum over ``spec.containers`` of requests, limits filling missing names."""
    out = ResourceSum()
    for container in ((template or {}).get("spec") or {}).get("containers") or []:
        out.add_sum(container_resources(container))
    return out


def min_replicas(group: dict[str, Any]) -> int:
    return int(group.get("minReplicas") or 0)


def max_replicas(group: dict[str, Any]) -> int:
    value = group.get("maxReplicas")
    return c.INT32_MAX if value is None else int(value)


def num_of_hosts(group: dict[str, Any]) -> int:
    """CRD default 1 for an absent field; an explicit 0 stays 0 (quirk 3)."""
    value = group.get("numOfHosts")
    return 1 if value is None else int(value)


def clamped_replicas(group: dict[str, Any]) -> int:
    """Desired replicas: nil means minReplicas; clamped into [min, max]."""
    if group.get("suspend"):
        return 0
    lo, hi = min_replicas(group), max_replicas(group)
    replicas = group.get("replicas")
    value = lo if replicas is None else int(replicas)
    return max(lo, min(value, hi))


def desired_worker_pods(group: dict[str, Any]) -> int:
    return clamped_replicas(group) * num_of_hosts(group)


def raw_replicas(group: dict[str, Any]) -> int:
    """The unclamped ``replicas`` (nil = 0) that KubeRay uses for resource sums."""
    return int(group.get("replicas") or 0)
