"""Shared helpers for the built-in validation tests: resource types, a context, output."""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import (
    DefaultContext,
    default,
    validate_create,
    validate_metadata,
    validate_update,
)
from lahar.apiserver.errors import Cause
from lahar.apiserver.resources import BUILTINS, ResourceType

RT: dict[str, ResourceType] = {r.kind: r for r in BUILTINS}


def context(**overrides: Any) -> DefaultContext:
    ips = iter(f"10.96.0.{i}" for i in range(10, 250))
    fields: dict[str, Any] = {
        "allocate_cluster_ip": lambda: next(ips),
        "priority_of": {"high": 1000, "low": 10}.get,
        "now": lambda: "2026-11-29T10:00:00Z",
    }
    fields.update(overrides)
    return DefaultContext(**fields)


def lines(causes: list[Cause]) -> list[str]:
    """Causes as kubectl prints them: ``field: message``."""
    return [f"{c.field}: {c.message}" if c.field else c.message for c in causes]


def create(obj: dict[str, Any], kind: str, ctx: DefaultContext | None = None) -> list[str]:
    """Default then validate like the REST layer does on create."""
    rt = RT[kind]
    out = default(obj, rt, ctx or context())
    return lines(validate_metadata(out, rt) + validate_create(out, rt))


def update(new: dict[str, Any], old: dict[str, Any], kind: str, subresource: str = "") -> list[str]:
    rt = RT[kind]
    out = default(new, rt, context(), old=old)
    return lines(
        validate_metadata(out, rt, old=old) + validate_update(out, old, rt, subresource=subresource)
    )
