"""The one admission webhook app a real cluster runs: Volcano's rules and KubeRay's validation.

On the embedded server both run in-process as admission plugins. A real kube-apiserver
can only call out, so ``lahar webhook`` serves this ASGI app over HTTPS behind the
``lahar-admission`` Service: Volcano's paths (``/jobs/validate``, ``/pods/mutate``, ...)
come from :mod:`lahar.volcano.webhook`, and KubeRay's validation is answered at
``/rayclusters/validate`` and ``/rayjobs/validate``. The KubeRay routes run the very
plugin the embedded server runs (:class:`~lahar.kuberay.admission.KubeRayAdmission`), fed
an :class:`~lahar.apiserver.admission.AdmissionRequest` built from the review, so the two
paths cannot disagree: a denial carries the same 422 Status whose message and causes
name each field, and warnings come back as the review's ``warnings``.

``/healthz`` answers once the process serves; ``/readyz`` only while ``ready()`` holds
(the Volcano lookup's caches have synced), so a Service never routes to a replica that
would see an empty cluster.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import BaseRoute, Mount, Route

from lahar.apiserver.admission import AdmissionRequest
from lahar.apiserver.errors import APIError
from lahar.apiserver.resources import ResourceType
from lahar.kuberay.admission import KubeRayAdmission
from lahar.volcano import webhook as volcano_webhook
from lahar.volcano.admission.pods import ResourceGroup
from lahar.volcano.lookup import Lookup, MemoryLookup

__all__ = ["KUBERAY_PATHS", "create_app", "kuberay_review", "served_paths"]

Obj = dict[str, Any]

RAYCLUSTER = ResourceType("ray.io", "v1", "RayCluster", "rayclusters", "raycluster", True)
RAYJOB = ResourceType("ray.io", "v1", "RayJob", "rayjobs", "rayjob", True)
KUBERAY_PATHS: dict[str, ResourceType] = {
    "/rayclusters/validate": RAYCLUSTER,
    "/rayjobs/validate": RAYJOB,
}

_plugin = KubeRayAdmission()


def kuberay_review(request: Obj, resource: ResourceType) -> Obj:
    """The AdmissionResponse of KubeRay's validation for one AdmissionRequest."""
    uid = request.get("uid", "")
    sub = request.get("subResource") or ""
    admission = AdmissionRequest(
        operation=request.get("operation", ""),
        resource=resource,
        namespace=request.get("namespace") or "",
        name=request.get("name") or "",
        object=request.get("object"),
        old_object=request.get("oldObject"),
        subresource=sub,
        dry_run=bool(request.get("dryRun")),
    )
    out: Obj = {"uid": uid, "allowed": True}
    try:
        _plugin.validate(admission)
    except APIError as err:
        status = err.to_status()
        status.pop("apiVersion", None)
        status.pop("kind", None)
        out = {"uid": uid, "allowed": False, "status": status}
    if admission.warnings:
        out["warnings"] = list(admission.warnings)
    return out


def _kuberay_endpoint(resource: ResourceType) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def endpoint(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"message": "request body is not JSON"}, status_code=400)
        review = body.get("request") if isinstance(body, dict) else None
        if not isinstance(review, dict):
            return JSONResponse({"message": "AdmissionReview has no request"}, status_code=400)
        return JSONResponse(
            {
                "apiVersion": body.get("apiVersion", "admission.k8s.io/v1"),
                "kind": "AdmissionReview",
                "response": kuberay_review(review, resource),
            }
        )

    return endpoint


def served_paths() -> list[str]:
    """Every AdmissionReview path the app answers (the webhook configurations may use)."""
    volcano = list(volcano_webhook.handlers(MemoryLookup()))
    return sorted([*volcano, *KUBERAY_PATHS])


def create_app(
    lookup: Lookup,
    resource_groups: list[ResourceGroup] | None = None,
    *,
    ready: Callable[[], bool] | None = None,
) -> Starlette:
    """Volcano's webhook app and KubeRay's validation routes as one ASGI app."""

    async def readyz(_: Request) -> PlainTextResponse:
        if ready is None or ready():
            return PlainTextResponse("ok")
        return PlainTextResponse("informer caches not synced", status_code=500)

    async def healthz(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    routes: list[BaseRoute] = [
        Route(path, _kuberay_endpoint(rt), methods=["POST"]) for path, rt in KUBERAY_PATHS.items()
    ]
    routes += [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/livez", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Mount("", app=volcano_webhook.create_app(lookup, resource_groups)),
    ]
    return Starlette(routes=routes)
