"""Subresources with their own semantics: pods/binding, pods/eviction, pods/log, */scale.

``binding`` assigns a pending pod to a node and answers ``201`` with a ``Status``
(exactly as kube-apiserver does, which is why generated clients fail to decode
it); ``eviction`` is a graceful delete (no PodDisruptionBudgets are served, so it
is always allowed); ``log`` streams from the node agent through the log seam;
``scale`` projects a CRD's replica paths into an ``autoscaling/v1 Scale``.
"""

from __future__ import annotations

import copy
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from lahar.apiserver import store as storemod
from lahar.apiserver.app import _json, decode_body, read_body, write_options
from lahar.apiserver.errors import (
    APIError,
    Cause,
    bad_request,
    conflict,
    invalid,
    method_not_allowed,
)
from lahar.apiserver.logs import LogRequest
from lahar.apiserver.meta import meta, now_rfc3339
from lahar.apiserver.routing import Route
from lahar.apiserver.state import ServerState

Obj = dict[str, Any]


def _success(code: int = 201) -> Response:
    return _json(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code},
        code,
    )


async def handle(state: ServerState, request: Request, route: Route, method: str) -> Response:
    rt = route.resource
    assert rt is not None
    if rt.plural == "bindings" or route.subresource == "binding":
        if method != "POST":
            raise method_not_allowed()
        body = decode_body(
            await read_body(request), request.headers.get("content-type", "application/json")
        )
        name = route.name or ((body or {}).get("metadata") or {}).get("name", "")
        bind(
            state,
            route.namespace,
            name,
            body,
            dry_run="All" in request.query_params.getlist("dryRun"),
        )
        return _success()
    if route.subresource == "eviction":
        if method != "POST":
            raise method_not_allowed()
        body = (
            decode_body(
                await read_body(request), request.headers.get("content-type", "application/json")
            )
            or {}
        )
        options = dict(body.get("deleteOptions") or {})
        pods = state.registry.lookup("", "v1", "pods")
        assert pods is not None
        state.deletion.delete(
            pods,
            route.namespace,
            route.name,
            options,
            dry_run="All" in request.query_params.getlist("dryRun"),
        )
        return _success()
    if route.subresource == "log":
        if method != "GET":
            raise method_not_allowed()
        return logs(state, request, route)
    if route.subresource == "scale":
        return await scale(state, request, route, method)
    raise APIError(404, "NotFound", "the server could not find the requested resource")


def bind(
    state: ServerState, namespace: str, name: str, body: Any, *, dry_run: bool = False
) -> None:
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a Binding object")
    target = body.get("target") or {}
    node = target.get("name")
    if not node:
        raise invalid(
            "Binding", name, [Cause("FieldValueRequired", "Required value", "target.name")]
        )
    if target.get("kind") not in (None, "", "Node"):
        raise invalid(
            "Binding",
            name,
            [
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{target.get("kind")}": supported values: "Node"',
                    "target.kind",
                )
            ],
        )
    pod = state.store.get("pods", namespace, name)
    if pod is None:
        from lahar.apiserver.errors import not_found

        raise not_found("pods", name)
    m, spec = meta(pod), pod.get("spec") or {}
    uid = (body.get("metadata") or {}).get("uid")
    if uid and uid != m.get("uid"):
        raise conflict(
            "pods",
            name,
            "",
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {m.get('uid')}",
        )
    if m.get("deletionTimestamp"):
        raise conflict("pods", name, "", "pod is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise conflict(
            "pods", name, "", f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        )
    if dry_run:
        return
    # ``store.get`` decodes a fresh object for each call: this one is ours to change.
    rv = int(m["resourceVersion"])
    new = pod
    new["spec"]["nodeName"] = node
    annotations = (body.get("metadata") or {}).get("annotations")
    if annotations:
        meta(new).setdefault("annotations", {}).update(annotations)
    conditions = [
        c
        for c in (new.get("status") or {}).get("conditions") or []
        if c.get("type") != "PodScheduled"
    ]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339(),
        }
    )
    new.setdefault("status", {})["conditions"] = conditions
    try:
        state.store.update("pods", new, expected_rv=rv)
    except storemod.RVConflict as exc:
        raise conflict("pods", name, "") from exc


def logs(state: ServerState, request: Request, route: Route) -> Response:
    pod = state.store.get("pods", route.namespace, route.name)
    if pod is None:
        from lahar.apiserver.errors import not_found

        raise not_found("pods", route.name)
    q = request.query_params
    spec = pod.get("spec") or {}
    names = [
        c.get("name") for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])
    ]
    container = q.get("container") or ""
    if not container:
        if len(spec.get("containers") or []) != 1:
            raise bad_request(
                f"a container name must be specified for pod {route.name}, choose one of: "
                f"[{' '.join(c.get('name', '') for c in spec.get('containers') or [])}]"
            )
        container = spec["containers"][0]["name"]
    if container not in names:
        raise bad_request(f"container {container} is not valid for pod {route.name}")
    node = spec.get("nodeName")
    if not node:
        raise bad_request(f"pod {route.name} does not have a host assigned")

    def num(key: str) -> int | None:
        v = q.get(key)
        if v is None:
            return None
        if not v.lstrip("-").isdigit():
            raise bad_request(f"{key}: Invalid value: {v!r}: must be an integer")
        return int(v)

    req = LogRequest(
        namespace=route.namespace,
        pod=route.name,
        container=container,
        follow=q.get("follow") == "true",
        tail_lines=num("tailLines"),
        previous=q.get("previous") == "true",
        since_seconds=num("sinceSeconds"),
        timestamps=q.get("timestamps") == "true",
        limit_bytes=num("limitBytes"),
    )
    stream = state.logs.open(state.store.get("nodes", "", node), node, req)
    return StreamingResponse(stream, media_type="text/plain")


def _get_path(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value


async def scale(state: ServerState, request: Request, route: Route, method: str) -> Response:
    rt = route.resource
    assert rt is not None and rt.scale is not None
    obj = state.objects.get(rt, route.namespace, route.name)
    spec_path = rt.scale.get("specReplicasPath", ".spec.replicas")
    status_path = rt.scale.get("statusReplicasPath", ".status.replicas")

    def as_scale(o: Obj) -> Obj:
        m = meta(o)
        out: Obj = {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: m[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in m
            },
            "spec": {"replicas": _get_path(o, spec_path) or 0},
            "status": {"replicas": _get_path(o, status_path) or 0},
        }
        selector_path = rt.scale.get("labelSelectorPath")
        if selector_path and _get_path(o, selector_path):
            out["status"]["selector"] = _get_path(o, selector_path)
        return out

    if method == "GET":
        return _json(as_scale(obj))
    if method not in ("PUT", "PATCH"):
        raise method_not_allowed()
    body = decode_body(
        await read_body(request), request.headers.get("content-type", "application/json")
    )
    if method == "PATCH":
        from lahar.apiserver import patch as patchmod

        current = as_scale(obj)
        ctype = request.headers.get("content-type", "").split(";")[0]
        body = (
            patchmod.apply_json_patch(current, body)
            if ctype == "application/json-patch+json"
            else patchmod.apply_merge_patch(current, body)
        )
    replicas = ((body or {}).get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        raise invalid(
            "Scale",
            route.name,
            [
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                    "spec.replicas",
                )
            ],
            "autoscaling",
        )
    new = copy.deepcopy(obj)
    _set_path(new, spec_path, replicas)
    rv = (body.get("metadata") or {}).get("resourceVersion")
    if rv:
        meta(new)["resourceVersion"] = rv
    result = state.objects.update(rt, route.namespace, route.name, new, write_options(request))
    return _json(as_scale(result.object))
