"""Handlers for resource URLs: get, list, watch, create, update, patch, delete.

Each handler reads the query and body, calls the services in ``ServerState`` and
shapes the answer the way kube-apiserver does (status codes, list metadata,
``Table`` when kubectl asks for it, ``Warning`` headers).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from lahar.apiserver import crds, selectors, subresources, tables, watchstream
from lahar.apiserver.app import _json, decode_body, read_body, write_options
from lahar.apiserver.deletion import require_no_body_kind_mismatch
from lahar.apiserver.errors import APIError, bad_request, method_not_allowed
from lahar.apiserver.meta import meta
from lahar.apiserver.objects import WriteResult
from lahar.apiserver.resources import ResourceType
from lahar.apiserver.routing import Route
from lahar.apiserver.state import ServerState

Obj = dict[str, Any]


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _warnings(warnings: list[str]) -> dict[str, str]:
    if not warnings:
        return {}
    # Header values are Latin-1 on the wire; escape anything else (field names can be any text).
    text = ", ".join('299 - "' + w.replace('"', '\\"') + '"' for w in warnings)
    return {"Warning": text.encode("ascii", "backslashreplace").decode("ascii")}


def _table(rt: ResourceType, objects: list[Obj], request: Request) -> dict[str, Any]:
    include = request.query_params.get("includeObject") or "Metadata"
    return tables.to_table(rt, objects, include_object=include, now=dt.datetime.now(dt.UTC))


async def handle(
    state: ServerState, request: Request, route: Route, method: str, accept: str
) -> Response:
    rt = route.resource
    assert rt is not None
    if route.subresource in ("binding", "eviction", "log", "scale") or rt.plural == "bindings":
        return await subresources.handle(state, request, route, method)
    q = request.query_params
    if method == "GET":
        if route.name and not route.watch_prefix:
            obj = state.objects.get(rt, route.namespace, route.name)
            if wants_table(accept):
                return _json(_table(rt, [obj], request))
            return _json(obj)
        if route.watch_prefix or q.get("watch") in ("true", "1"):
            return await watchstream.serve(state, request, route, wants_table(accept))
        return _json(list_objects(state, rt, route, request, accept))
    if method == "POST":
        if route.name:
            raise method_not_allowed()
        body = decode_body(
            await read_body(request), request.headers.get("content-type", "application/json")
        )
        result = state.objects.create(rt, route.namespace, body, write_options(request))
        return _answer(state, rt, result, 201)
    if method == "PUT":
        if not route.name:
            raise method_not_allowed()
        body = decode_body(
            await read_body(request), request.headers.get("content-type", "application/json")
        )
        result = state.objects.update(
            rt, route.namespace, route.name, body, write_options(request, route.subresource)
        )
        return _answer(state, rt, result, 201 if result.created else 200)
    if method == "PATCH":
        if not route.name:
            raise method_not_allowed()
        ctype = request.headers.get("content-type", "").split(";")[0].strip()
        body = decode_body(await read_body(request), ctype or "application/json")
        if body is None:
            raise bad_request("the body of the request must not be empty for a patch")
        result = state.objects.patch(
            rt, route.namespace, route.name, body, ctype, write_options(request, route.subresource)
        )
        return _answer(state, rt, result, 201 if result.created else 200)
    if method == "DELETE":
        raw = await read_body(request)
        ctype = request.headers.get("content-type", "application/json")
        options = require_no_body_kind_mismatch(decode_body(raw, ctype))
        for key in ("propagationPolicy", "gracePeriodSeconds"):
            if key in q and key not in options:
                options[key] = int(q[key]) if key == "gracePeriodSeconds" else q[key]
        dry = "All" in q.getlist("dryRun")
        if route.name:
            return _json(delete_one(state, rt, route.namespace, route.name, options, dry))
        return _json(delete_collection(state, rt, route, request, options, dry))
    raise method_not_allowed()


def _answer(state: ServerState, rt: ResourceType, result: WriteResult, code: int) -> Response:
    obj = result.object
    if rt.group_resource == crds.CRD_KEY and meta(obj).get("resourceVersion"):
        obj = crds.established(state, obj)
    return _json(obj, code, headers=_warnings(result.warnings))


def delete_one(
    state: ServerState, rt: ResourceType, namespace: str, name: str, options: Obj, dry: bool
) -> Obj:
    if rt.group_resource == crds.CRD_KEY and not dry:
        crd = state.objects.get(rt, namespace, name)
        crds.remove(state, crd)
    return state.deletion.delete(rt, namespace, name, options, dry_run=dry)


def delete_collection(
    state: ServerState, rt: ResourceType, route: Route, request: Request, options: Obj, dry: bool
) -> Obj:
    items = filtered(state, rt, route, request)
    deleted = []
    for obj in items:
        try:
            deleted.append(
                delete_one(
                    state, rt, meta(obj).get("namespace", ""), meta(obj)["name"], options, dry
                )
            )
        except APIError as exc:
            if exc.code != 404:
                raise
    return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {}, "items": deleted}


def filtered(state: ServerState, rt: ResourceType, route: Route, request: Request) -> list[Obj]:
    q = request.query_params
    labels = selectors.parse_label_selector(q.get("labelSelector"))
    fields = selectors.parse_field_selector(q.get("fieldSelector"), rt.group_resource)
    ns = route.namespace or None
    f_ns, f_name = selectors.field_selector_names(fields)
    if f_ns is not None and ns is None and rt.namespaced:
        ns = f_ns
    key = state.objects.storage_key(rt)
    if f_name is not None and (ns is not None or not rt.namespaced):
        one = state.store.get(key, ns or "", f_name)
        candidates = [one] if one else []
    else:
        candidates = state.store.list(key, ns)[0]
    return [
        state.objects.present(rt, o)
        for o in candidates
        if selectors.labels_match(labels, o) and selectors.fields_match(fields, o)
    ]


def _encode_continue(rv: int, ns: str, name: str) -> str:
    raw = json.dumps({"v": "lahar/1", "rv": rv, "start": [ns, name]}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded))
        ns, name = data["start"]
        return int(data["rv"]), (str(ns), str(name))
    except (ValueError, KeyError, TypeError):
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from None


def list_objects(
    state: ServerState, rt: ResourceType, route: Route, request: Request, accept: str
) -> Obj:
    q = request.query_params
    limit_text = q.get("limit") or "0"
    if not limit_text.isdigit():
        raise bad_request(f"limit: Invalid value: {limit_text!r}: must be a non-negative integer")
    limit = int(limit_text)
    token = q.get("continue")
    labels = selectors.parse_label_selector(q.get("labelSelector"))
    fields = selectors.parse_field_selector(q.get("fieldSelector"), rt.group_resource)
    list_meta: Obj = {}
    if not limit and not token:
        items = filtered(state, rt, route, request)
        list_meta["resourceVersion"] = str(state.store.current_rv())
    else:
        key = state.objects.storage_key(rt)
        ns = route.namespace or None
        start: tuple[str, str] | None = None
        rv = state.store.current_rv()
        if token:
            rv, start = _decode_continue(token)
        items = []
        cursor = start
        while True:
            page, _, cursor = state.store.list_page(
                key, ns, limit=max(limit, 1) * 2 if limit else 500, start_after=cursor
            )
            for o in page:
                if selectors.labels_match(labels, o) and selectors.fields_match(fields, o):
                    items.append(state.objects.present(rt, o))
            if cursor is None or (limit and len(items) >= limit):
                break
        if limit and len(items) > limit:
            items = items[:limit]
            last = meta(items[-1])
            cursor = (last.get("namespace", "") or "", last["name"])
        elif limit and len(items) == limit and cursor is not None:
            last = meta(items[-1])
            cursor = (last.get("namespace", "") or "", last["name"])
        list_meta["resourceVersion"] = str(rv)
        if cursor is not None and limit:
            list_meta["continue"] = _encode_continue(rv, *cursor)
            remaining = state.store.count(key, ns, after=cursor)
            if not labels and not fields and remaining > 0:
                list_meta["remainingItemCount"] = remaining
            elif remaining <= 0:
                list_meta.pop("continue")
    if wants_table(accept):
        table = _table(rt, items, request)
        table["metadata"] = list_meta
        return table
    return {
        "kind": rt.list_kind,
        "apiVersion": rt.api_version,
        "metadata": list_meta,
        "items": items,
    }
