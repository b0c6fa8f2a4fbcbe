"""Container resource lists: canonical quantity strings and their validation.

The real server decodes every quantity into its own type and writes it back in
canonical form, rounded up to milli-units (``"0.5"`` becomes ``"500m"``,
``"1.5Gi"`` becomes ``"1536Mi"``). Doing the same here means a pod read back
from our server looks like one read from a real cluster, and the scheduler
never sees two spellings of one amount. Validation covers resource names,
negative values, integer-only extended resources and ``requests <= limits``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

from lahar.api.quantity import QuantityError, format_quantity, parse_quantity
from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.errors import Cause

STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
_BINARY_SUFFIX = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei)$")
_CACHED_LENGTH = 40
_QUANTITY_FORMAT = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def canonical(value: Any) -> Any:
    """Canonical string for a quantity; values that do not parse are returned as-is.

    Every container's requests and limits are canonicalised on each pod write, and
    validated (which spells them canonically again), from a handful of common
    spellings: short plain strings are memoised (the result is an immutable str)."""
    if type(value) is str and len(value) <= _CACHED_LENGTH:
        return _canonical_text(value)
    return _canonical(value)


@lru_cache(maxsize=4096)
def _canonical_text(value: str) -> str:
    return _canonical(value)  # type: ignore[no-any-return]


def _canonical(value: Any) -> Any:
    try:
        amount = parse_quantity(value)
    except QuantityError:
        return value
    amount = Fraction(math.ceil(amount * 1000), 1000)
    if isinstance(value, str) and re.search(r"[eE][+-]?\d+$", value.strip()):
        return value  # exponent notation keeps its spelling
    binary = isinstance(value, str) and bool(_BINARY_SUFFIX.search(value))
    return format_quantity(amount, binary=binary)


def canonicalize_requirements(resources: dict[str, Any]) -> None:
    """Rewrite ``limits``/``requests`` of one container in place."""
    for section in ("limits", "requests"):
        values = resources.get(section)
        if isinstance(values, dict):
            resources[section] = {k: canonical(v) for k, v in values.items()}


def _overcommittable(name: str) -> bool:
    return name in STANDARD_CONTAINER_RESOURCES


def _check_name(name: str, path: str) -> list[Cause]:
    causes = [fe.invalid(path, name, m) for m in names.qualified_name(name)]
    if causes:
        return causes
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            return [fe.invalid(path, name, "must be a standard resource for containers")]
    elif name.startswith("requests.") or name.split("/", 1)[0].endswith("kubernetes.io"):
        return [fe.invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def _parse_list(values: Any, path: str, causes: list[Cause]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    if values is None:
        return out
    if not isinstance(values, dict):
        causes.append(fe.invalid(path, values, "must be a map of resource names to quantities"))
        return out
    for name in sorted(values):
        item_path = fe.key(path, name)
        problems = _check_name(name, item_path)
        causes.extend(problems)
        try:
            amount = parse_quantity(values[name])
        except QuantityError:
            causes.append(
                fe.invalid(
                    item_path,
                    str(values[name]),
                    f"quantities must match the regular expression {_QUANTITY_FORMAT}",
                )
            )
            continue
        if amount < 0:
            causes.append(
                fe.invalid(item_path, canonical(values[name]), "must be greater than or equal to 0")
            )
        elif (
            not _overcommittable(name)
            and not name.startswith("hugepages-")
            and amount.denominator != 1
        ):
            causes.append(fe.invalid(item_path, canonical(values[name]), "must be an integer"))
        if not problems:
            out[name] = amount
    return out


def validate_requirements(resources: Any, path: str) -> list[Cause]:
    """Validate one container's ``resources`` block."""
    if resources is None:
        return []
    if not isinstance(resources, dict):
        return [fe.invalid(path, resources, "must be an object")]
    causes: list[Cause] = []
    limits_path, requests_path = fe.child(path, "limits"), fe.child(path, "requests")
    limits = _parse_list(resources.get("limits"), limits_path, causes)
    requests = _parse_list(resources.get("requests"), requests_path, causes)
    for name, amount in requests.items():
        shown = canonical(resources["requests"][name])
        if name in limits:
            limit_shown = canonical(resources["limits"][name])
            if _overcommittable(name) and amount > limits[name]:
                causes.append(
                    fe.invalid(
                        requests_path,
                        shown,
                        f"must be less than or equal to {name} limit of {limit_shown}",
                    )
                )
            elif not _overcommittable(name) and amount != limits[name]:
                causes.append(
                    fe.invalid(
                        requests_path, shown, f"must be equal to {name} limit of {limit_shown}"
                    )
                )
        elif not _overcommittable(name):
            causes.append(
                fe.required(limits_path, "Limit must be set for non overcommitable resources")
            )
    return causes


def amounts(values: Any) -> dict[str, Fraction]:
    """Parsed ``{name: amount}`` of a resource list, skipping unparsable entries."""
    out: dict[str, Fraction] = {}
    if isinstance(values, dict):
        for name, value in values.items():
            try:
                out[name] = parse_quantity(value)
            except QuantityError:
                continue
    return out
