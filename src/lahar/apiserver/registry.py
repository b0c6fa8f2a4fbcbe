"""The live set of served resource types: the built-ins plus whatever CRDs say.

The registry answers the router's question ("which type is /apis/ray.io/v1/rayjobs?")
and the discovery and OpenAPI handlers' questions ("what do you serve?"). It is
rebuilt from CustomResourceDefinition objects whenever one changes, and bumps a
generation counter so cached discovery and OpenAPI documents are refreshed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lahar.apiserver.resources import BUILTINS, ResourceType, from_crd

_SUB_VERBS: dict[str, tuple[str, ...]] = {
    "status": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "log": ("get",),
}
_SUB_KIND: dict[str, tuple[str, str, str]] = {
    "binding": ("", "v1", "Binding"),
    "eviction": ("policy", "v1", "Eviction"),
    "scale": ("autoscaling", "v1", "Scale"),
}


class Registry:
    def __init__(self) -> None:
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_types: dict[str, list[ResourceType]] = {}  # CRD name -> its types
        # (group, plural) -> storage type: asked several times per write, answered by a
        # scan of every served type; emptied whenever the served types change.
        self._storage: dict[tuple[str, str], ResourceType | None] = {}
        self.generation = 0
        self._rebuild()

    def _rebuild(self) -> None:
        by_path = {(rt.group, rt.version, rt.plural): rt for rt in BUILTINS}
        for types in self._crd_types.values():
            for rt in types:
                by_path.setdefault((rt.group, rt.version, rt.plural), rt)
        self._by_path = by_path
        self._storage = {}
        self.generation += 1

    def set_crd(self, crd: dict[str, Any]) -> None:
        """Serve (or re-serve) the kinds of an established CRD."""
        name = (crd.get("metadata") or {}).get("name", "")
        self._crd_types[name] = from_crd(crd)
        self._rebuild()

    def remove_crd(self, name: str) -> list[ResourceType]:
        gone = self._crd_types.pop(name, [])
        self._rebuild()
        return gone

    def crd_types(self, name: str) -> list[ResourceType]:
        return list(self._crd_types.get(name, []))

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def storage_type(self, group: str, plural: str) -> ResourceType | None:
        """The storage version of a group-resource (all versions share one store key)."""
        key = (group, plural)
        try:
            return self._storage[key]
        except KeyError:
            pass
        found = self._scan_storage_type(group, plural)
        if len(self._storage) >= 1024:  # bounded whatever callers ask about
            self._storage.clear()
        self._storage[key] = found
        return found

    def _scan_storage_type(self, group: str, plural: str) -> ResourceType | None:
        cands = [rt for rt in self._by_path.values() if rt.group == group and rt.plural == plural]
        for rt in cands:
            if rt.storage:
                return rt
        return cands[0] if cands else None

    def types(self) -> Iterable[ResourceType]:
        return self._by_path.values()

    def group_versions(self) -> dict[str, list[str]]:
        """group -> versions, preferred (storage) version first."""
        out: dict[str, list[str]] = {}
        for rt in self._by_path.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                if rt.storage and not rt.builtin:
                    versions.insert(0, rt.version)
                else:
                    versions.append(rt.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return sorted(
            (rt for rt in self._by_path.values() if rt.group == group and rt.version == version),
            key=lambda rt: rt.plural,
        )

    # ---- discovery documents -------------------------------------------------------

    def api_versions(self) -> dict[str, Any]:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        }

    def api_group(self, group: str) -> dict[str, Any] | None:
        versions = self.group_versions().get(group)
        if not versions or not group:
            return None
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": entries,
            "preferredVersion": entries[0],
        }

    def api_group_list(self) -> dict[str, Any]:
        groups = [self.api_group(g) for g in sorted(self.group_versions()) if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [g for g in groups if g]}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        types = self.in_group_version(group, version)
        if not types:
            return None
        resources: list[dict[str, Any]] = []
        for rt in types:
            entry: dict[str, Any] = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            resources.append(entry)
            for sub in rt.subresources:
                g, v, kind = _SUB_KIND.get(sub, (rt.group, rt.version, rt.kind))
                sub_entry: dict[str, Any] = {
                    "name": f"{rt.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": kind,
                    "verbs": list(_SUB_VERBS[sub]),
                }
                if sub in _SUB_KIND:
                    sub_entry["group"], sub_entry["version"] = g, v
                resources.append(sub_entry)
        gv = f"{group}/{version}" if group else version
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": gv,
            "resources": resources,
        }

    def aggregated(self, core: bool) -> dict[str, Any]:
        """``APIGroupDiscoveryList`` (apidiscovery.k8s.io/v2) for ``/api`` or ``/apis``."""
        items = []
        for group, versions in sorted(self.group_versions().items()):
            if (group == "") != core:
                continue
            items.append(
                {
                    "metadata": {"name": group, "creationTimestamp": None},
                    "versions": [
                        {
                            "version": v,
                            "resources": [
                                self._aggregated_resource(rt)
                                for rt in self.in_group_version(group, v)
                            ],
                            "freshness": "Current",
                        }
                        for v in versions
                    ],
                }
            )
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": items,
        }

    @staticmethod
    def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "resource": rt.plural,
            "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
            "scope": "Namespaced" if rt.namespaced else "Cluster",
            "singularResource": rt.singular,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        subs = []
        for sub in rt.subresources:
            g, v, kind = _SUB_KIND.get(sub, (rt.group, rt.version, rt.kind))
            subs.append(
                {
                    "subresource": sub,
                    "responseKind": {"group": g, "version": v, "kind": kind},
                    "verbs": list(_SUB_VERBS[sub]),
                }
            )
        if subs:
            entry["subresources"] = subs
        return entry
