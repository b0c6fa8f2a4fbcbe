"""Kubernetes ``Status`` errors.

Every failure the API server reports is an :class:`APIError` carrying the HTTP code,
the machine-readable reason and, for validation failures, the causes naming each
field. Handlers raise them; one place turns them into ``Status`` bodies. Pure
modules (patch engines, schema validation, built-in validation) raise these too,
so a client's mistake can never surface as a 500.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One reason a request failed, naming the field (``spec.containers[0].name``)."""

    reason: str  # FieldValueRequired, FieldValueInvalid, FieldValueNotSupported, ...
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class APIError(Exception):
    """An error answered as a ``Status`` body."""

    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after: int | None = None

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            status["details"] = details
        return status


def bad_request(message: str, causes: list[Cause] | None = None) -> APIError:
    return APIError(400, "BadRequest", message, causes=causes or [])


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str) -> APIError:
    return APIError(403, "Forbidden", message)


def not_found(resource: str, name: str, group: str = "") -> APIError:
    qualified = f"{resource}.{group}" if group else resource
    return APIError(404, "NotFound", f'{qualified} "{name}" not found', name, group, resource)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> APIError:
    return APIError(405, "MethodNotAllowed", message)


def already_exists(resource: str, name: str, group: str = "") -> APIError:
    qualified = f"{resource}.{group}" if group else resource
    return APIError(
        409, "AlreadyExists", f'{qualified} "{name}" already exists', name, group, resource
    )


def conflict(resource: str, name: str, group: str = "", detail: str = "") -> APIError:
    qualified = f"{resource}.{group}" if group else resource
    detail = (
        detail
        or "the object has been modified; please apply your changes to the latest version and try again"
    )
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified} "{name}": {detail}',
        name,
        group,
        resource,
    )


def expired(message: str) -> APIError:
    return APIError(410, "Expired", message)


def too_large(message: str = "Request entity too large") -> APIError:
    return APIError(413, "RequestEntityTooLarge", message)


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type}",
    )


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> APIError:
    """422: ``Kind.group "name" is invalid: field: message, ...`` as the real server words it."""
    qualified = f"{kind}.{group}" if group else kind
    summary = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    if len(causes) > 1:
        summary = "[" + summary + "]"
    return APIError(
        422, "Invalid", f'{qualified} "{name}" is invalid: {summary}', name, group, kind, causes
    )


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}")
