"""Resource arithmetic for queue admission, in Volcano's units and wording.

Volcano compares queue quotas as its scheduler ``Resource``: CPU and scalar resources in
milli-units, memory in bytes, ``pods`` and unknown names ignored. Messages print sums
as ``cpu 2000.00, memory 0.00`` and single values as Kubernetes quantities, as Volcano does.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from lahar.api.quantity import QuantityError, format_quantity, parse_quantity

Vector = dict[str, float]


def is_scalar_name(name: str) -> bool:
    return "/" in name or name.startswith("hugepages-")


def to_vector(resources: dict[str, Any] | None) -> Vector:
    out: Vector = {"cpu": 0.0, "memory": 0.0}
    for name, raw in (resources or {}).items():
        try:
            value = parse_quantity(raw)
        except (QuantityError, TypeError, ValueError):
            continue
        if name == "cpu":
            out["cpu"] = float(value * 1000)
        elif name == "memory":
            out["memory"] = float(value)
        elif is_scalar_name(name):
            out[name] = float(value * 1000)
    return out


def add(a: Vector, b: Vector) -> Vector:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0.0) + value
    return out


def less_partly(left: Vector, right: Vector) -> bool:
    """Volcano's ``left.LessPartly(right, Zero)``: some dimension of left is below right's."""
    return any(left.get(name, 0.0) < right.get(name, 0.0) for name in {"cpu", "memory", *right})


def vector_string(v: Vector) -> str:
    text = f"cpu {v.get('cpu', 0.0):0.2f}, memory {v.get('memory', 0.0):0.2f}"
    for name in sorted(k for k in v if k not in ("cpu", "memory")):
        text += f", {name} {v[name]:0.2f}"
    return text


def names(v: Vector, declared: dict[str, Any] | None) -> list[str]:
    """The resource names of a declared list, in a stable order, that the vector holds."""
    return sorted(
        n for n in (declared or {}) if n in v and (n in ("cpu", "memory") or is_scalar_name(n))
    )


def format_single(name: str, value: float) -> str:
    if name == "cpu":
        return format_quantity(Fraction(int(value), 1000))
    if name == "memory":
        return format_quantity(int(value), binary=True)
    return f"{value:.2f}"


def canonical(raw: Any) -> str:
    """A quantity as Kubernetes prints it (``"1000m"`` -> ``"1"``)."""
    try:
        value = parse_quantity(raw)
    except (QuantityError, TypeError, ValueError):
        return str(raw)
    return format_quantity(value, binary=isinstance(raw, str) and raw.endswith("i"))
