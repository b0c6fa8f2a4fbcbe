"""The write path: every create, update, patch and status write goes through here.

The HTTP layer parses requests and formats responses; this module owns the
semantics the API conventions demand: generateName, uid and timestamps,
generation, the status-subresource split, defaulting, pruning, strict field
validation, built-in and schema validation, the admission chain, resourceVersion
preconditions, managedFields, and finishing a deletion when the last finalizer
goes. Deletion itself (grace periods, propagation) lives in ``deletion.py``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from lahar.apiserver import builtins, lookups, patch
from lahar.apiserver import store as storemod
from lahar.apiserver.admission import AdmissionChain, AdmissionRequest
from lahar.apiserver.errors import (
    Cause,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.meta import meta, now_rfc3339, random_suffix, spec_part
from lahar.apiserver.registry import Registry
from lahar.apiserver.resources import ResourceType
from lahar.apiserver.schema import builtin as builtin_schema
from lahar.apiserver.schema import structural
from lahar.apiserver.writesupport import NamespaceGate, present_copy, shares

Obj = dict[str, Any]

# Kinds whose status the server resets on create (the rest keep what they are given).
_RESET_STATUS_ON_CREATE = {"pods", "services", "jobs.batch"}


@dataclass
class WriteOptions:
    field_manager: str = ""
    field_validation: str = "Strict"  # Strict | Warn | Ignore
    dry_run: bool = False
    force: bool = False
    subresource: str = ""
    user_agent: str = ""
    operation: str = "Update"  # "Apply" when server-side apply produced managedFields


@dataclass
class WriteResult:
    object: Obj
    created: bool = False
    warnings: list[str] = field(default_factory=list)


def _manager(opts: WriteOptions) -> str:
    if opts.field_manager:
        return opts.field_manager
    agent = opts.user_agent.split("/")[0] if opts.user_agent else ""
    return agent or "unknown"


class ObjectService:
    def __init__(
        self, store: storemod.Store, registry: Registry, admission: AdmissionChain
    ) -> None:
        self.store = store
        self.registry = registry
        self.admission = admission
        self._ctx = lookups.default_context(store)
        self._list_cache: dict[tuple[str, str, str, int], patch.ListSemantics] = {}
        self._namespace_gate = NamespaceGate(store)

    # ---- reads -------------------------------------------------------------------

    def storage_key(self, rt: ResourceType) -> str:
        stored = self.registry.storage_type(rt.group, rt.plural)
        return (stored or rt).group_resource

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(self.storage_key(rt), namespace, name)
        if obj is None:
            raise not_found(rt.plural, name, rt.group)
        return self.present(rt, obj)

    def present(self, rt: ResourceType, obj: Obj) -> Obj:
        """The object as this version reports it (CRD versions share one store)."""
        if obj.get("apiVersion") != rt.api_version:
            obj = {**obj, "apiVersion": rt.api_version}
        obj.setdefault("kind", rt.kind)
        return obj

    def presents_as_stored(self, rt: ResourceType, obj: Obj) -> bool:
        """Whether :meth:`present` leaves ``obj`` exactly as stored (so its stored bytes
        may be sent as they are)."""
        return obj.get("apiVersion") == rt.api_version and "kind" in obj

    # ---- the shared preparation of a candidate object ----------------------------

    def _schema(self, rt: ResourceType) -> dict[str, Any] | None:
        if rt.builtin:
            try:
                return builtin_schema.schema_for(rt.api_version, rt.kind)
            except KeyError:
                return None
        return rt.schema

    def _check_fields(
        self, rt: ResourceType, obj: Obj, opts: WriteOptions
    ) -> tuple[Obj, list[str]]:
        warnings: list[str] = []
        schema = self._schema(rt)
        if schema is None:
            return obj, warnings
        if opts.field_validation != "Ignore":
            checked = obj
            if opts.subresource == "status":
                # A status write takes only .status from the request; the rest is the
                # stored object, checked when it was written. Walking it again (a pod's
                # whole spec) was a sixth of a pod status write.
                checked = {k: obj[k] for k in ("apiVersion", "kind", "status") if k in obj}
            unknown = structural.unknown_fields(checked, schema)
            if unknown and opts.field_validation == "Strict":
                raise bad_request(
                    "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
                )
            warnings.extend(f'unknown field "{p}"' for p in unknown)
        if not rt.builtin:
            obj = structural.prune(obj, schema)
        return obj, warnings

    def _default(
        self, rt: ResourceType, obj: Obj, old: Obj | None = None, subresource: str = ""
    ) -> Obj:
        if rt.builtin:
            return builtins.default(obj, rt, self._ctx, old=old, subresource=subresource)
        if rt.schema:
            return structural.apply_defaults(obj, rt.schema)
        return obj

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None, subresource: str) -> None:
        causes: list[Cause] = list(builtins.validate_metadata(obj, rt, old=old))
        if rt.builtin:
            if old is None:
                causes += builtins.validate_create(obj, rt)
            else:
                causes += builtins.validate_update(obj, old, rt, subresource=subresource)
        elif rt.schema:
            causes += structural.validate(obj, rt.schema)
        if causes:
            name = meta(obj).get("name") or meta(obj).get("generateName", "")
            raise invalid(rt.kind, name, causes, rt.group)

    def _check_type(self, rt: ResourceType, obj: Any) -> Obj:
        if not isinstance(obj, dict):
            raise bad_request("the body of the request must be a JSON or YAML object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if kind is not None and kind != rt.kind:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({rt.api_version})"
                if api_version != rt.api_version
                else f"kind {kind!r} does not match the expected kind {rt.kind!r}"
            )
        if api_version is not None and api_version != rt.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rt.api_version})"
            )
        obj = clone(obj)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        if not isinstance(obj.get("metadata", {}), dict):
            raise bad_request(
                "metadata must be an object",
                [Cause("FieldValueInvalid", "must be an object", "metadata")],
            )
        return obj

    def _namespace(self, rt: ResourceType, obj: Obj, namespace: str) -> None:
        m = meta(obj)
        if rt.namespaced:
            body_ns = m.get("namespace")
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            m["namespace"] = namespace
        else:
            m.pop("namespace", None)

    def _require_namespace(self, rt: ResourceType, namespace: str, opts: WriteOptions) -> None:
        if rt.namespaced:
            self._namespace_gate.check(rt, namespace)

    def _lists(self, rt: ResourceType) -> patch.ListSemantics:
        """The kind's list semantics, built once per kind (and per CRD schema version)."""
        key = (rt.group, rt.version, rt.plural, id(rt.schema))
        lists = self._list_cache.get(key)
        if lists is None:
            if rt.builtin:
                lists = patch.builtin_list_semantics(rt.api_version, rt.kind)
            else:
                lists = patch.schema_list_semantics(rt.schema or {})
            self._list_cache[key] = lists
        return lists

    # ---- create ------------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str, body: Any, opts: WriteOptions
    ) -> WriteResult:
        obj = self._check_type(rt, body)
        self._namespace(rt, obj, namespace)
        m = meta(obj)
        if not m.get("name") and m.get("generateName"):
            m["name"] = f"{m['generateName']}{random_suffix()}"
        if not m.get("name"):
            raise invalid(
                rt.kind,
                "",
                [Cause("FieldValueRequired", "name or generateName is required", "metadata.name")],
                rt.group,
            )
        for server_field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            m.pop(server_field, None)
        applied_fields = m.get("managedFields") if opts.operation == "Apply" else None
        m["uid"] = str(uuid.uuid4())
        m["creationTimestamp"] = now_rfc3339()
        m["generation"] = 1
        if (rt.has_status and not rt.builtin) or rt.group_resource in _RESET_STATUS_ON_CREATE:
            obj.pop("status", None)
        obj, warnings = self._check_fields(rt, obj, opts)
        obj = self._default(rt, obj)
        self._validate(rt, obj, None, "")
        self._require_namespace(rt, namespace, opts)
        req = AdmissionRequest("CREATE", rt, namespace, m["name"], obj, dry_run=opts.dry_run)
        warnings += self.admission.run(req)
        obj = req.object or obj
        if applied_fields is not None:
            meta(obj)["managedFields"] = applied_fields
        else:
            meta(obj)["managedFields"] = patch.record_update(
                None,
                obj,
                manager=_manager(opts),
                lists=self._lists(rt),
                now=now_rfc3339(),
                status_subresource=rt.has_status,
            )
        if opts.dry_run:
            if self.store.get(self.storage_key(rt), namespace if rt.namespaced else "", m["name"]):
                raise already_exists(rt.plural, m["name"], rt.group)
            return WriteResult(obj, created=True, warnings=warnings)
        try:
            stored = self.store.create(self.storage_key(rt), obj, shared=shares(rt))
        except storemod.KeyExists:
            raise already_exists(rt.plural, m["name"], rt.group) from None
        return WriteResult(present_copy(rt, stored), created=True, warnings=warnings)

    # ---- update (PUT) and the common path for patches ------------------------------

    def update(
        self, rt: ResourceType, namespace: str, name: str, body: Any, opts: WriteOptions
    ) -> WriteResult:
        new = self._check_type(rt, body)
        self._namespace(rt, new, namespace)
        if meta(new).get("name") not in (None, name):
            raise bad_request("the name of the object does not match the name on the URL")
        meta(new)["name"] = name
        key = self.storage_key(rt)
        old = self.store.get(key, namespace if rt.namespaced else "", name)
        if old is None:
            if opts.subresource:
                raise not_found(rt.plural, name, rt.group)
            return self.create(rt, namespace, new, opts)  # PUT creates, as the real server allows
        rv = meta(new).get("resourceVersion")
        expected = int(rv) if rv not in (None, "") and str(rv).isdigit() else None
        if rv not in (None, "") and expected is None:
            raise bad_request(f"invalid resourceVersion {rv!r}")
        return self._write(rt, namespace, name, old, new, opts, expected, "Update")

    def _merge_subresource(self, rt: ResourceType, old: Obj, new: Obj, subresource: str) -> Obj:
        if subresource == "finalize":  # a namespace's spec.finalizers, written by its finaliser
            merged = clone(old)
            merged.setdefault("spec", {})["finalizers"] = (new.get("spec") or {}).get(
                "finalizers"
            ) or []
            return merged
        if subresource == "status":
            # Only status and the write's bookkeeping come from the request; the rest is
            # the stored object (shared read-only below the top level and metadata).
            merged = {**old, "metadata": dict(meta(old))}
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            mnew = meta(new)
            for k in ("resourceVersion", "managedFields"):
                if k in mnew:
                    merged["metadata"][k] = mnew[k]
            return merged
        if rt.has_status:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        return new

    def _write(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        old: Obj,
        new: Obj,
        opts: WriteOptions,
        expected_rv: int | None,
        operation: str,
    ) -> WriteResult:
        new = self._merge_subresource(rt, old, new, opts.subresource)
        m, om = meta(new), meta(old)
        # Server-owned metadata is kept from the live object.
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if k in om:
                m[k] = om[k]
            else:
                m.pop(k, None)
        new, warnings = self._check_fields(rt, new, opts)
        if opts.subresource != "status":  # a status write leaves the defaulted spec alone
            new = self._default(rt, new, old, opts.subresource)
        if spec_part(new) != spec_part(old):
            m["generation"] = int(om.get("generation") or 1) + 1
        self._validate(rt, new, old, opts.subresource)
        req = AdmissionRequest(
            "UPDATE", rt, namespace, name, new, old, opts.subresource, opts.dry_run
        )
        warnings += self.admission.run(req)
        new = req.object or new
        comparable_new = {
            **new,
            "metadata": {
                k: v for k, v in m.items() if k not in ("resourceVersion", "managedFields")
            },
        }
        comparable_old = {
            **old,
            "metadata": {
                k: v for k, v in om.items() if k not in ("resourceVersion", "managedFields")
            },
        }
        if operation == "Update":
            m["managedFields"] = patch.record_update(
                old,
                new,
                manager=_manager(opts),
                lists=self._lists(rt),
                now=now_rfc3339(),
                subresource=opts.subresource,
                status_subresource=rt.has_status,
            )
        key = self.storage_key(rt)
        if expected_rv is not None and str(expected_rv) != om.get("resourceVersion"):
            raise conflict(rt.plural, name, rt.group)
        if opts.dry_run:
            return WriteResult(new, warnings=warnings)
        if comparable_new == comparable_old and m.get("managedFields") == om.get("managedFields"):
            return WriteResult(
                self.present(rt, old), warnings=warnings
            )  # a no-op write keeps its RV
        if om.get("deletionTimestamp") and not m.get("finalizers") and not _deletion_waits(rt, new):
            gone = self.store.delete(
                key,
                namespace if rt.namespaced else "",
                name,
                expected_rv=int(om["resourceVersion"]),
            )
            return WriteResult(
                self.present(
                    rt,
                    {
                        **new,
                        "metadata": {**m, "resourceVersion": meta(gone).get("resourceVersion")},
                    },
                ),
                warnings=warnings,
            )
        try:
            stored = self.store.update(
                key, new, expected_rv=int(om["resourceVersion"]), shared=shares(rt)
            )
        except storemod.RVConflict:
            raise conflict(rt.plural, name, rt.group) from None
        return WriteResult(present_copy(rt, stored), warnings=warnings)

    # ---- patch and apply (patching.py) ----------------------------------------------

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        content_type: str,
        opts: WriteOptions,
    ) -> WriteResult:
        from lahar.apiserver.patching import patch_object

        return patch_object(self, rt, namespace, name, body, content_type, opts)


def _deletion_waits(rt: ResourceType, obj: Obj) -> bool:
    """Whether a deleting object outlives a write that leaves it without finalizers: a
    namespace until its ``spec.finalizers`` are gone too (the namespace controller
    empties it); a bound pod deleted with a grace period until its node agent confirms
    (a DELETE with grace 0), even past the period, as the kubelet confirms in Kubernetes.
    (The collector finishes it if no agent is alive, gc.py.) Until session 5 a write
    after the period ended the pod: the agent's own status write as it killed the
    containers removed the pod while the agent was still tearing the sandbox down, and
    ``kubectl delete --wait`` returned before the pod's network namespace was gone."""
    if rt.group_resource == "namespaces":
        return bool((obj.get("spec") or {}).get("finalizers"))
    if rt.group_resource != "pods" or not (obj.get("spec") or {}).get("nodeName"):
        return False
    return bool(meta(obj).get("deletionGracePeriodSeconds"))
