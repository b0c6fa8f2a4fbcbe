"""Volcano's admission rules served as Kubernetes admission webhooks (for real clusters).

A small Starlette app answering ``admission.k8s.io/v1`` AdmissionReviews at Volcano's own
paths (``/jobs/validate``, ``/jobs/mutate``, ``/queues/...``, ``/podgroups/...``,
``/pods/...``), so the webhook configurations in ``deploy/webhooks/`` mirror Volcano's.
Mutations are answered as JSONPatch computed from the defaulted object. The rules are the
same pure functions the embedded server runs; only the transport differs.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Awaitable, Callable
from typing import Any

import jsonpatch
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from lahar.volcano.admission import jobs, podgroups, pods, queues
from lahar.volcano.admission.common import AdmissionDenied
from lahar.volcano.lookup import Lookup

Obj = dict[str, Any]
Review = dict[str, Any]
# A handler gets the AdmissionRequest and returns the defaulted object (mutating) or
# None; it raises AdmissionDenied to refuse.
Handler = Callable[[Obj], Obj | None]


def _response(
    uid: str, *, allowed: bool = True, message: str = "", patch: list[Obj] | None = None
) -> Obj:
    out: Obj = {"uid": uid, "allowed": allowed}
    if message:
        out["status"] = {"message": message}
    if patch:
        out["patchType"] = "JSONPatch"
        out["patch"] = base64.b64encode(jsonpatch.JsonPatch(patch).to_string().encode()).decode()
    return out


def review(request: Obj, handler: Handler) -> Obj:
    """Run one handler over an AdmissionRequest; return the AdmissionResponse."""
    uid = request.get("uid", "")
    original = request.get("object")
    try:
        mutated = handler(request)
    except AdmissionDenied as denied:
        return _response(uid, allowed=False, message=denied.message)
    if mutated is None or original is None:
        return _response(uid)
    patch = jsonpatch.make_patch(original, mutated).patch
    return _response(uid, patch=patch)


def _namespaced(request: Obj) -> Obj | None:
    obj = request.get("object")
    if obj is None:
        return None
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("namespace", request.get("namespace", ""))
    meta.setdefault("name", request.get("name", ""))
    return obj


def handlers(
    lookup: Lookup, resource_groups: list[pods.ResourceGroup] | None = None
) -> dict[str, Handler]:
    """Path -> handler, for Volcano's webhook paths."""

    def jobs_validate(r: Obj) -> None:
        jobs.validate_job(r.get("operation", ""), _namespaced(r), r.get("oldObject"), lookup)

    def jobs_mutate(r: Obj) -> Obj | None:
        if r.get("operation") != "CREATE" or r.get("object") is None:
            return None
        return jobs.mutate_job(r["object"])

    def queues_validate(r: Obj) -> None:
        queues.validate_queue(
            r.get("operation", ""), r.get("object"), r.get("oldObject"), r.get("name", ""), lookup
        )

    def queues_mutate(r: Obj) -> Obj | None:
        if r.get("operation") != "CREATE" or r.get("object") is None:
            return None
        return queues.mutate_queue(r["object"])

    def podgroups_validate(r: Obj) -> None:
        podgroups.validate_podgroup(r.get("operation", ""), r.get("object"), lookup)

    def podgroups_mutate(r: Obj) -> Obj | None:
        if r.get("operation") != "CREATE" or r.get("object") is None:
            return None
        mutated = podgroups.mutate_podgroup(_namespaced(r) or {}, lookup)
        # Keep the patch to spec: metadata defaults above were only for the lookup.
        out = copy.deepcopy(r["object"])
        out["spec"] = mutated.get("spec", {})
        return out

    def pods_validate(r: Obj) -> None:
        pods.validate_pod(r.get("operation", ""), _namespaced(r), lookup)

    def pods_mutate(r: Obj) -> Obj | None:
        if r.get("operation") != "CREATE" or r.get("object") is None:
            return None
        return pods.mutate_pod(r["object"], resource_groups)

    return {
        "/jobs/validate": jobs_validate,
        "/jobs/mutate": jobs_mutate,
        "/queues/validate": queues_validate,
        "/queues/mutate": queues_mutate,
        "/podgroups/validate": podgroups_validate,
        "/podgroups/mutate": podgroups_mutate,
        "/pods/validate": pods_validate,
        "/pods/mutate": pods_mutate,
    }


def _endpoint(handler: Handler) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def endpoint(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"message": "request body is not JSON"}, status_code=400)
        admission_request = (body or {}).get("request") if isinstance(body, dict) else None
        if not isinstance(admission_request, dict):
            return JSONResponse({"message": "AdmissionReview has no request"}, status_code=400)
        return JSONResponse(
            {
                "apiVersion": body.get("apiVersion", "admission.k8s.io/v1"),
                "kind": "AdmissionReview",
                "response": review(admission_request, handler),
            }
        )

    return endpoint


async def _healthz(_: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def create_app(
    lookup: Lookup, resource_groups: list[pods.ResourceGroup] | None = None
) -> Starlette:
    routes = [
        Route(path, _endpoint(h), methods=["POST"])
        for path, h in handlers(lookup, resource_groups).items()
    ]
    routes.append(Route("/healthz", _healthz, methods=["GET"]))
    return Starlette(routes=routes)
