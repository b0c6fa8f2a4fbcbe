"""PATCH: JSON patch, merge patch, strategic merge patch and server-side apply.

Each patch type turns the live object into a candidate, which then takes the same
write path as an update (``ObjectService._write``): validation, admission,
preconditions and managedFields. Strategic merge patch is refused (415) for custom
resources, as the real server does; apply creates the object when it is absent.
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.apiserver import patch
from lahar.apiserver.errors import APIError, bad_request, not_found
from lahar.apiserver.meta import meta, now_rfc3339
from lahar.apiserver.objects import Obj, ObjectService, WriteOptions, WriteResult
from lahar.apiserver.resources import ResourceType


def patch_object(
    svc: ObjectService,
    rt: ResourceType,
    namespace: str,
    name: str,
    body: Any,
    content_type: str,
    opts: WriteOptions,
) -> WriteResult:
    key = svc.storage_key(rt)
    ns = namespace if rt.namespaced else ""
    old = svc.store.get(key, ns, name)
    if content_type == "application/apply-patch+yaml":
        return _apply(svc, rt, namespace, name, old, body, opts)
    if old is None:
        raise not_found(rt.plural, name, rt.group)
    live = svc.present(rt, old)  # fresh from the store; the engines never mutate it
    if content_type == "application/json-patch+json":
        new = patch.apply_json_patch(live, body)
    elif content_type == "application/merge-patch+json":
        # A status write takes only .status (and metadata's resourceVersion and
        # managedFields, read and replaced, never changed in place) from the patched
        # object (ObjectService._merge_subresource): only that is copied.
        private = ("status",) if opts.subresource == "status" else None
        new = patch.apply_merge_patch(live, body, private=private)
    elif content_type == "application/strategic-merge-patch+json":
        if not rt.builtin:
            raise APIError(
                415,
                "UnsupportedMediaType",
                f"strategic merge patch is not supported for {rt.group_resource}; use merge or json patch",
            )
        new = patch.apply_strategic_merge_patch(live, body, svc._lists(rt))
    else:
        raise APIError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type}",
        )
    if not isinstance(new, dict):
        raise bad_request("the patched object is not an object")
    new_rv = meta(new).get("resourceVersion")
    expected = None
    if new_rv != om_rv(old):
        if new_rv in (None, ""):
            meta(new)["resourceVersion"] = om_rv(old)
        elif not str(new_rv).isdigit():
            raise bad_request(f"invalid resourceVersion {new_rv!r}")
        else:
            expected = int(new_rv)
    return svc._write(rt, namespace, name, old, new, opts, expected, "Update")


def _apply(
    svc: ObjectService,
    rt: ResourceType,
    namespace: str,
    name: str,
    old: Obj | None,
    body: Any,
    opts: WriteOptions,
) -> WriteResult:
    if not opts.field_manager:
        raise bad_request("PATCH, application/apply-patch+yaml requires fieldManager to be set")
    config = svc._check_type(rt, body)
    if meta(config).get("name") not in (None, name):
        raise bad_request("the name of the object does not match the name on the URL")
    meta(config)["name"] = name
    svc._namespace(rt, config, namespace)
    lists = svc._lists(rt)
    live = None if old is None else svc.present(rt, copy.deepcopy(old))
    result = patch.server_side_apply(
        live,
        config,
        manager=opts.field_manager,
        force=opts.force,
        lists=lists,
        now=now_rfc3339(),
        subresource=opts.subresource,
        status_subresource=rt.has_status,
    )
    applied = WriteOptions(**{**opts.__dict__, "operation": "Apply"})
    if old is None:
        if opts.subresource:
            raise not_found(rt.plural, name, rt.group)
        return svc.create(rt, namespace, result, applied)
    return svc._write(rt, namespace, name, old, result, applied, None, "Apply")


def om_rv(obj: Obj) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")
