"""The catalogue of resource types the server serves.

A :class:`ResourceType` is everything the server needs to route, store, validate,
print and describe one kind: group/version/kind, plural and singular names,
scope, short names and categories, verbs, subresources, and (for CRDs) the
openAPIV3Schema and additionalPrinterColumns. Built-in kinds are listed here;
CRD-backed kinds are made from CustomResourceDefinition objects by
:func:`from_crd`, so applying a CRD serves its kinds at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # "status", "scale", "binding", "eviction", "log"
    subresources: tuple[str, ...] = ()
    builtin: bool = True
    # CRDs: the version's openAPIV3Schema and additionalPrinterColumns; the scale
    # subresource's paths when it is enabled.
    schema: dict[str, Any] | None = None
    printer_columns: tuple[dict[str, Any], ...] = ()
    scale: dict[str, Any] | None = None
    # Whether this version is the storage/preferred one (CRDs may serve several).
    storage: bool = True
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``pods``, ``jobs.batch``, ``rayclusters.ray.io``: the store's key prefix."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def _core(kind: str, plural: str, namespaced: bool = True, **kw: Any) -> ResourceType:
    return ResourceType("", "v1", kind, plural, kind.lower(), namespaced, **kw)


BUILTINS: tuple[ResourceType, ...] = (
    _core("Namespace", "namespaces", False, short_names=("ns",), subresources=("status",)),
    _core("Node", "nodes", False, short_names=("no",), subresources=("status",)),
    _core(
        "Pod",
        "pods",
        short_names=("po",),
        categories=("all",),
        subresources=("status", "binding", "eviction", "log"),
    ),
    _core(
        "Service", "services", short_names=("svc",), categories=("all",), subresources=("status",)
    ),
    _core("Endpoints", "endpoints", short_names=("ep",)),
    _core("ConfigMap", "configmaps", short_names=("cm",)),
    _core("Secret", "secrets"),
    _core("ServiceAccount", "serviceaccounts", short_names=("sa",)),
    _core("Event", "events", short_names=("ev",)),
    # The legacy collection endpoint for bindings (POST /namespaces/{ns}/bindings).
    _core("Binding", "bindings", verbs=("create",)),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    ResourceType(
        "batch", "v1", "Job", "jobs", "job", True, categories=("all",), subresources=("status",)
    ),
    ResourceType(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        "priorityclass",
        False,
        short_names=("pc",),
    ),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources=("status",),
    ),
)


def from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """One ResourceType per served version of a CustomResourceDefinition object."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subs = version.get("subresources") or {}
        subresources = tuple(s for s in ("status", "scale") if s in subs)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        out.append(
            ResourceType(
                group=spec.get("group", ""),
                version=version["name"],
                kind=names.get("kind", ""),
                plural=names.get("plural", ""),
                singular=names.get("singular") or names.get("kind", "").lower(),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subresources,
                builtin=False,
                schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                scale=subs.get("scale"),
                storage=bool(version.get("storage", False)),
            )
        )
    return out
