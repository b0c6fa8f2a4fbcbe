"""URL grammar of the Kubernetes API: which resource, namespace, name and subresource.

``/api/v1/namespaces/ns/pods/p/status``, ``/apis/ray.io/v1/rayjobs``,
``/api/v1/watch/namespaces/ns/pods`` (the legacy watch prefix) and the
discovery roots all parse into one :class:`Route`.
"""

from __future__ import annotations

from dataclasses import dataclass

from lahar.apiserver.errors import APIError, not_found
from lahar.apiserver.registry import Registry
from lahar.apiserver.resources import ResourceType


@dataclass(frozen=True)
class Route:
    kind: str  # "resource" | "api" | "apis" | "group" | "groupversion"
    group: str = ""
    version: str = ""
    resource: ResourceType | None = None
    namespace: str = ""  # "" = all namespaces (collections) or cluster-scoped
    name: str = ""
    subresource: str = ""
    watch_prefix: bool = False


def parse(path: str, registry: Registry) -> Route:
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        raise not_found("", path)
    if parts[0] == "api":
        if len(parts) == 1:
            return Route("api")
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) == 1:
            return Route("apis")
        if len(parts) == 2:
            return Route("group", group=parts[1])
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return Route("groupversion", group=group, version=version)
    watch = False
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and registry.lookup(group, version, rest[2]):
        namespace, rest = rest[1], rest[2:]
    plural = rest[0] if rest else ""
    rt = registry.lookup(group, version, plural)
    if rt is None:
        raise APIError(404, "NotFound", "the server could not find the requested resource")
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if len(rest) > 3 or (
        sub and sub not in rt.subresources and not (rt.plural == "namespaces" and sub == "finalize")
    ):
        raise APIError(404, "NotFound", "the server could not find the requested resource")
    if namespace and not rt.namespaced:
        raise APIError(404, "NotFound", "the server could not find the requested resource")
    return Route("resource", group, version, rt, namespace, name, sub, watch)
