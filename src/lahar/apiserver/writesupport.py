"""Helpers of the write path (``objects.py``), kept apart to keep that module small.

* :class:`NamespaceGate`: a create needs its namespace to exist and not be terminating;
  what it needs of each namespace is kept until a namespace is next written.
* :func:`shares` and :func:`present_copy`: a write's result may be the very object its
  watch event carries (``Store.create``/``update`` with ``shared``), read-only.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver import store as storemod
from lahar.apiserver.errors import APIError, not_found
from lahar.apiserver.meta import meta
from lahar.apiserver.resources import ResourceType

Obj = dict[str, Any]

_CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"
_MAX_NAMESPACES = 1024


class NamespaceGate:
    """Refuses creates in a namespace that is absent (404) or terminating (403).

    Decoding the namespace object on every create was a fortieth of a pod create. Each
    answer is kept with ``store.changes("namespaces")`` as read *before* the namespace,
    so any namespace write (or rollback of one) since makes the next check read again.
    """

    def __init__(self, store: storemod.Store) -> None:
        self._store = store
        # namespace -> (changes when read, (deletionTimestamp, name) or None if absent)
        self._seen: dict[str, tuple[int, tuple[Any, Any] | None]] = {}

    def check(self, rt: ResourceType, namespace: str) -> None:
        changes = self._store.changes("namespaces")
        hit = self._seen.get(namespace)
        if hit is None or hit[0] != changes:
            ns = self._store.get("namespaces", "", namespace)
            found = (
                None if ns is None else (meta(ns).get("deletionTimestamp"), meta(ns).get("name"))
            )
            if len(self._seen) >= _MAX_NAMESPACES:
                self._seen.clear()
            hit = self._seen[namespace] = (changes, found)
        if hit[1] is None:
            raise not_found("namespaces", namespace)
        deleting, name = hit[1]
        if deleting:
            raise APIError(
                403,
                "Forbidden",
                f'{rt.plural} "{name}" is forbidden: unable to create new content in '
                f"namespace {namespace} because it is being terminated",
            )


def shares(rt: ResourceType) -> bool:
    """Whether a write's result may be the watch event's own object (``Store.create``'s
    ``shared``): its only reader is the response, which serialises it (the handlers,
    ``install_crds`` and the scale subresource only read it), and :func:`present_copy`
    never changes it in place. Not a CRD: ``crds.established`` hands it to the registry,
    whose resource types keep parts of it (the schema) for the life of the server."""
    return rt.group_resource != _CRD_KEY


def present_copy(rt: ResourceType, obj: Obj) -> Obj:
    """``ObjectService.present`` without changing ``obj`` (it may be shared with
    watchers): the same result, field order included, as a copy when anything differs."""
    if obj.get("apiVersion") == rt.api_version and "kind" in obj:
        return obj
    out = {**obj, "apiVersion": rt.api_version}
    out.setdefault("kind", rt.kind)
    return out
