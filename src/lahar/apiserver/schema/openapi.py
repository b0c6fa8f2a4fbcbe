"""The OpenAPI v3 documents kubectl reads from ``/openapi/v3``.

kubectl 1.32 fetches the index, then the document of one group-version, for two
reasons: before ``create``/``apply`` it checks that the kind's ``patch`` operation
accepts a ``fieldValidation`` query parameter (then sends ``fieldValidation=Strict``
and leaves validation to the server), and ``kubectl explain`` renders
``components.schemas``. So each document lists, per resource, the collection and
item paths with their operations (tagged with ``x-kubernetes-group-version-kind``
and ``x-kubernetes-action`` like the real server's) and carries the kinds' schemas
with everything they reference. Built-in schemas come from ``builtin.py``; a CRD
kind's schema is its openAPIV3Schema with apiVersion, kind and metadata filled in.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from ..resources import ResourceType
from . import builtin
from ._tables import META

REF = builtin.REF_PREFIX
_STANDARD = ("ObjectMeta", "ListMeta", "Status", "DeleteOptions", "Patch", "WatchEvent")
_API_VERSION_TEXT = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values."
)
_KIND_TEXT = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. In CamelCase."
)
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def _gv_path(group_version: str) -> str:
    return f"apis/{group_version}" if "/" in group_version else f"api/{group_version}"


def openapi_v3_index(group_versions: list[str], hashes: dict[str, str]) -> dict[str, Any]:
    """The ``/openapi/v3`` index; ``hashes`` is keyed by group-version (or path)."""
    paths: dict[str, Any] = {}
    for gv in group_versions:
        path = _gv_path(gv)
        digest = hashes.get(gv) or hashes.get(path) or ""
        url = f"/openapi/v3/{path}" + (f"?hash={digest}" if digest else "")
        paths[path] = {"serverRelativeURL": url}
    return {"paths": paths}


def document_hash(doc: dict[str, Any]) -> str:
    """A stable content hash of a document (upper-case hex SHA-512, as the server uses)."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha512(text.encode()).hexdigest().upper()


def crd_definition_prefix(group: str, version: str) -> str:
    """``ray.io``/``v1`` -> ``io.ray.v1``: how the server names CRD schemas."""
    return ".".join([*reversed(group.split(".")), version])


def _gvk(r: ResourceType, kind: str | None = None) -> dict[str, str]:
    return {"group": r.group, "version": r.version, "kind": kind or r.kind}


def _tag(r: ResourceType) -> str:
    """``CoreV1``, ``BatchV1``, ``RayIoV1``: the tag and operation-id stem of a group-version."""
    group = "".join(p.capitalize() for p in r.group.replace("-", ".").split(".")) or "Core"
    return f"{group}{r.version.capitalize()}"


def _op_id(verb: str, r: ResourceType, scope: str, suffix: str = "") -> str:
    return f"{verb}{_tag(r)}{scope}{r.kind}{suffix}"


def _query(*names: str) -> list[dict[str, Any]]:
    out = []
    for name in names:
        kind = "boolean" if name in ("force", "watch", "allowWatchBookmarks") else "string"
        if name in ("limit", "timeoutSeconds", "gracePeriodSeconds"):
            kind = "integer"
        out.append({"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": True}})
    return out


def _response(ref: str) -> dict[str, Any]:
    content = {"schema": {"$ref": REF + ref}}
    return {
        "200": {
            "description": "OK",
            "content": {"application/json": content, "application/yaml": content},
        },
        "401": {"description": "Unauthorized"},
    }


def _operation(
    verb: str,
    action: str,
    r: ResourceType,
    scope: str,
    ref: str,
    params: list[str],
    sub: str = "",
    gvk: dict[str, str] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "tags": [_tag(r)],
        "operationId": _op_id(verb, r, scope, sub),
        "parameters": _query(*params),
        "responses": _response(ref),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk or _gvk(r),
    }
    if action == "patch":
        # kubectl's client-side apply computes a strategic merge patch only for kinds whose
        # patch operation accepts it; the real server offers it for built-ins, never for CRDs.
        types = _PATCH_TYPES if r.builtin else _PATCH_TYPES[:3]
        op["requestBody"] = {
            "content": {t: {"schema": {"$ref": f"{REF}{META}.Patch"}} for t in types},
            "required": True,
        }
    elif action in ("post", "put"):
        op["requestBody"] = {
            "content": {"application/json": {"schema": {"$ref": REF + ref}}},
            "required": True,
        }
    return op


def _path_params(namespaced: bool, item: bool) -> list[dict[str, Any]]:
    params = []
    if item:
        params.append(
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
        )
    if namespaced:
        params.append(
            {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}
        )
    params.append({"name": "pretty", "in": "query", "schema": {"type": "string"}})
    return params


_WRITE = ["dryRun", "fieldManager", "fieldValidation"]
_LIST = ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit"]
_LIST += ["resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds"]
_LIST += ["watch"]


_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_POST_SUBRESOURCES = {
    "binding": {"group": "", "version": "v1", "kind": "Binding"},
    "eviction": {"group": "policy", "version": "v1", "kind": "Eviction"},
}


def _resource_paths(r: ResourceType, kind_ref: str, list_ref: str) -> dict[str, Any]:
    base = "/api/v1" if not r.group else f"/apis/{r.group}/{r.version}"
    scope = "Namespaced" if r.namespaced else ""
    collection = f"{base}/{r.plural}"
    if r.namespaced:
        collection = f"{base}/namespaces/{{namespace}}/{r.plural}"
    item = f"{collection}/{{name}}"
    verbs = set(r.verbs)
    status_ref = f"{META}.Status"
    paths: dict[str, Any] = {}

    ops: dict[str, Any] = {}
    if "list" in verbs:
        ops["get"] = _operation("list", "list", r, scope, list_ref, _LIST)
    if "create" in verbs:
        ops["post"] = _operation("create", "post", r, scope, kind_ref, _WRITE)
    if "deletecollection" in verbs:
        ops["delete"] = _operation(
            "deleteCollection", "deletecollection", r, scope, status_ref, ["dryRun", *_LIST]
        )
    if ops:
        paths[collection] = {**ops, "parameters": _path_params(r.namespaced, False)}
    if r.namespaced and "list" in verbs:
        paths[f"{base}/{r.plural}"] = {
            "get": _operation("list", "list", r, "", list_ref, _LIST, "ForAllNamespaces"),
            "parameters": _path_params(False, False),
        }

    ops = {}
    if "get" in verbs:
        ops["get"] = _operation("read", "get", r, scope, kind_ref, [])
    if "update" in verbs:
        ops["put"] = _operation("replace", "put", r, scope, kind_ref, _WRITE)
    if "patch" in verbs:
        ops["patch"] = _operation("patch", "patch", r, scope, kind_ref, [*_WRITE, "force"])
    if "delete" in verbs:
        ops["delete"] = _operation(
            "delete", "delete", r, scope, status_ref, ["dryRun", "gracePeriodSeconds"]
        )
    if ops:
        paths[item] = {**ops, "parameters": _path_params(r.namespaced, True)}

    for sub in r.subresources:
        suffix = sub.capitalize()
        if sub in ("status", "scale"):
            ref, gvk = kind_ref, None
            if sub == "scale":
                ref, gvk = _SCALE, {"group": "autoscaling", "version": "v1", "kind": "Scale"}
            args = (r, scope, ref)
            paths[f"{item}/{sub}"] = {
                "get": _operation("read", "get", *args, [], suffix, gvk),
                "put": _operation("replace", "put", *args, _WRITE, suffix, gvk),
                "patch": _operation("patch", "patch", *args, [*_WRITE, "force"], suffix, gvk),
                "parameters": _path_params(r.namespaced, True),
            }
        elif sub in _POST_SUBRESOURCES:
            gvk = _POST_SUBRESOURCES[sub]
            paths[f"{item}/{sub}"] = {
                "post": _operation("create", "post", r, scope, status_ref, _WRITE, suffix, gvk),
                "parameters": _path_params(r.namespaced, True),
            }
        elif sub == "log":
            paths[f"{item}/log"] = {
                "get": _operation("read", "get", r, scope, status_ref, ["container"], "Log"),
                "parameters": _path_params(r.namespaced, True),
            }
    return paths


def _refs(schema: Any, out: set[str]) -> None:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF):
            out.add(ref[len(REF) :])
        for value in schema.values():
            _refs(value, out)
    elif isinstance(schema, list):
        for value in schema:
            _refs(value, out)


def _close(schemas: dict[str, Any]) -> None:
    """Add every built-in definition the schemas reference, transitively."""
    defs = builtin.definitions()
    pending = set()
    _refs(schemas, pending)
    while pending:
        name = pending.pop()
        if name in schemas or name not in defs:
            continue
        schemas[name] = defs[name]
        _refs(defs[name], pending)


def crd_kind_schema(r: ResourceType) -> dict[str, Any]:
    """A CRD kind's published schema: its openAPIV3Schema plus the standard fields."""
    schema = copy.deepcopy(r.schema) if r.schema else {}
    if not schema:
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props = schema.setdefault("properties", {}) if schema.get("type") == "object" else None
    if props is not None:
        props["apiVersion"] = {"type": "string", "description": _API_VERSION_TEXT}
        props["kind"] = {"type": "string", "description": _KIND_TEXT}
        props["metadata"] = {
            "allOf": [{"$ref": f"{REF}{META}.ObjectMeta"}],
            "description": "Standard object's metadata.",
        }
    schema["x-kubernetes-group-version-kind"] = [_gvk(r)]
    return schema


def _list_schema(r: ResourceType, kind_ref: str) -> dict[str, Any]:
    return {
        "description": f"{r.list_kind} is a list of {r.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": _API_VERSION_TEXT},
            "items": {
                "type": "array",
                "description": f"List of {r.plural}.",
                "items": {"$ref": REF + kind_ref},
            },
            "kind": {"type": "string", "description": _KIND_TEXT},
            "metadata": {
                "allOf": [{"$ref": f"{REF}{META}.ListMeta"}],
                "description": "Standard list metadata.",
            },
        },
        "x-kubernetes-group-version-kind": [_gvk(r, r.list_kind)],
    }


def openapi_v3_document(group_version: str, resources: list[ResourceType]) -> dict[str, Any]:
    """The ``/openapi/v3/{api/v1|apis/g/v}`` document for the given resources."""
    defs = builtin.definitions()
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for r in resources:
        try:
            kind_ref = builtin.definition_name(r.api_version, r.kind) if r.builtin else ""
        except KeyError:
            kind_ref = ""
        if kind_ref:
            schemas[kind_ref] = defs[kind_ref]
        else:
            kind_ref = f"{crd_definition_prefix(r.group or 'core', r.version)}.{r.kind}"
            schemas[kind_ref] = crd_kind_schema(r)
        list_ref = f"{kind_ref}List"
        schemas[list_ref] = defs.get(list_ref) or _list_schema(r, kind_ref)
        paths.update(_resource_paths(r, kind_ref, list_ref))
    wanted: set[str] = {f"{META}.{name}" for name in _STANDARD}
    _refs(paths, wanted)
    for name in wanted:
        if name in defs:
            schemas.setdefault(name, defs[name])
    _close(schemas)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }
