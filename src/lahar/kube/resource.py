"""Naming a kind of object on the API: group, version, plural, kind and scope.

The runtime (informers, controllers, leader election, events) works on plain dicts
over raw REST paths, so it needs one small value that says where a kind lives and
how to build its URLs. ``Resource`` is that value. It is hashable, so it keys the
shared informers, and it is built either by hand (any CRD, by group/version/plural)
or from a lightkube resource class (``as_resource(Pod)``), so typed and generic code
name kinds the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lightkube.core import resource as lkres

__all__ = ["Resource", "as_resource", "object_key", "split_key"]


@dataclass(frozen=True, slots=True)
class Resource:
    """A kind served by the API: ``Resource("ray.io", "v1", "rayclusters", "RayCluster")``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` (just ``plural`` for the core group), as Kubernetes spells it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path of the collection (all namespaces when ``namespace`` is None),
        of one object, or of one of its subresources."""
        parts = ["api", self.version] if not self.group else ["apis", self.group, self.version]
        if self.namespaced and namespace:
            parts += ["namespaces", namespace]
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/" + "/".join(parts)

    def __str__(self) -> str:
        return self.group_resource


def as_resource(kind: Resource | type[Any]) -> Resource:
    """``kind`` itself, or the :class:`Resource` of a lightkube resource class."""
    if isinstance(kind, Resource):
        return kind
    if isinstance(kind, type) and issubclass(kind, lkres.Resource):
        info = lkres.api_info(kind)
        res = info.resource
        return Resource(
            res.group,
            res.version,
            info.plural,
            res.kind,
            namespaced=issubclass(kind, lkres.NamespacedResource),
        )
    raise TypeError(f"not a resource: {kind!r}")


def object_key(obj: dict[str, Any]) -> str:
    """The cache key of an object: ``namespace/name``, or ``name`` when cluster-scoped."""
    md = obj["metadata"]
    ns = md.get("namespace")
    return f"{ns}/{md['name']}" if ns else md["name"]


def split_key(key: str) -> tuple[str, str]:
    """``(namespace, name)`` of a cache key (namespace ``""`` when cluster-scoped)."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", ns)
