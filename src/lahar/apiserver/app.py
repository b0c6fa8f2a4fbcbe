"""The HTTP face of the embedded API server (an ASGI application).

It authenticates, parses the URL and the body, negotiates the response form
(plain JSON, ``Table`` for kubectl, aggregated discovery), calls the object,
deletion and watch services, and turns every :class:`APIError` into a ``Status``
body. Nothing here decides API semantics; that lives in ``objects.py``,
``deletion.py``, ``watch.py`` and ``subresources.py``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import time
from typing import Any

import orjson
import yaml
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from lahar import __version__
from lahar.apiserver import jsoncopy, routing
from lahar.apiserver import store as storemod
from lahar.apiserver.errors import APIError, bad_request, conflict, expired, too_large, unauthorized
from lahar.apiserver.metrics import Metrics
from lahar.apiserver.objects import WriteOptions
from lahar.apiserver.state import ServerState

log = logging.getLogger("lahar.apiserver")
MAX_BODY = 3 * 1024 * 1024
PUBLIC_PATHS = {"/version", "/livez", "/readyz", "/healthz"}
DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _json(
    data: Any,
    status: int = 200,
    headers: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> Response:
    return Response(jsoncopy.dumps(data), status, headers=headers, media_type=content_type)


def _store_error(exc: storemod.StoreError, route: routing.Route) -> APIError:
    rt = route.resource
    plural, group = (rt.plural, rt.group) if rt else ("", "")
    if isinstance(exc, storemod.KeyExists):
        from lahar.apiserver.errors import already_exists

        return already_exists(plural, route.name or str(exc).strip("'\""), group)
    if isinstance(exc, storemod.KeyNotFound):
        from lahar.apiserver.errors import not_found

        return not_found(plural, route.name, group)
    if isinstance(exc, storemod.RVConflict):
        return conflict(plural, route.name, group)
    if isinstance(exc, storemod.Expired):
        return expired(str(exc) or "too old resource version")
    return bad_request(str(exc))


async def read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY:
        raise too_large()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def decode_body(raw: bytes, content_type: str) -> Any:
    if not raw.strip():
        return None
    text_type = content_type.split(";")[0].strip()
    if text_type.startswith("application/vnd.kubernetes.protobuf"):
        from lahar.apiserver import protobuf

        return protobuf.decode(raw)
    if text_type == "application/cbor":
        raise APIError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json, application/yaml; got {text_type}",
        )
    try:
        if text_type in ("application/yaml", "application/apply-patch+yaml"):
            return yaml.safe_load(raw)
        return _loads_json(raw)
    except (ValueError, yaml.YAMLError) as exc:
        kind = "YAML" if "yaml" in text_type else "JSON"
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise bad_request(f"error decoding {kind} body: {detail}") from None


# A run of 19 or more digits may be an integer beyond 64 bits, which orjson would read
# as a float where ``json`` keeps the exact int. Found by mapping every digit to "0" and
# anything else to "x" (ten times faster than a regular expression on a status body).
_DIGITS_TO_ZERO = bytes(48 if 48 <= c <= 57 else 120 for c in range(256))
_LONG_RUN = b"0" * 19


def _loads_json(raw: bytes) -> Any:
    """``json.loads(raw)``, by orjson (several times faster) when the two agree: orjson
    refuses what only ``json`` accepts (NaN, a BOM, lone surrogates, other encodings,
    1e400), which then goes to ``json``, and big integers never reach it."""
    if isinstance(raw, bytes) and _LONG_RUN not in raw.translate(_DIGITS_TO_ZERO):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def _path(request: Request) -> str:
    """``request.url.path`` without building the whole URL (host header, netloc, query):
    the same escaping of the ASGI path, at a fraction of the cost on every request."""
    return str(request.scope["path"]).replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")


class APIApp:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.metrics: Metrics = state.metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            while message["type"] != "lifespan.shutdown":
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                message = await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        started = time.perf_counter()
        route: routing.Route | None = None
        try:
            self._authenticate(request)
            route = self._route(_path(request))  # before dispatch, so errors are labelled
            response = await self._dispatch(request, route)
        except APIError as exc:
            response = _json(exc.to_status(), exc.code)
        except storemod.StoreError as exc:
            err = _store_error(exc, route or routing.Route("resource"))
            response = _json(err.to_status(), err.code)
        except Exception as exc:  # never crash the connection; log and answer 500
            log.exception("unhandled error for %s %s", request.method, _path(request))
            from lahar.apiserver.errors import internal

            err = internal(type(exc).__name__)
            response = _json(err.to_status(), err.code)
        try:  # nothing is answered before the writes it may have seen are committed
            await self.state.store.settled()
        except storemod.StoreError as exc:
            err = _store_error(exc, route or routing.Route("resource"))
            response = _json(err.to_status(), err.code)
        self.metrics.observe(
            request.method, route, response.status_code, time.perf_counter() - started
        )
        await response(scope, receive, send)

    def _authenticate(self, request: Request) -> None:
        if _path(request) in PUBLIC_PATHS or self.state.token is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip(), self.state.token):
            raise unauthorized()

    def _route(self, path: str) -> routing.Route | None:
        """The API route of ``path``; None for the server's own endpoints (and for a
        path that is no API route, which dispatch answers 404)."""
        if not path.startswith(("/api/", "/apis/")) and path not in ("/api", "/apis"):
            return None
        with contextlib.suppress(APIError):
            return routing.parse(path, self.state.registry)
        return None

    async def _dispatch(self, request: Request, route: routing.Route | None) -> Response:
        path = _path(request)
        if path == "/version":
            return _json(self._version())
        if path in ("/livez", "/readyz", "/healthz"):
            ok = self.state.ready or path == "/livez"
            return Response(
                "ok" if ok else "not ready", 200 if ok else 503, media_type="text/plain"
            )
        if path == "/metrics":
            body, ctype = self.metrics.render(self.state)
            return Response(body, media_type=ctype)
        if path.startswith("/openapi/"):
            return self.state.openapi.respond(path, request.query_params)
        if route is None:
            route = routing.parse(path, self.state.registry)  # raises the right 404
        accept = request.headers.get("accept", "")
        if route.kind != "resource":
            return self._discovery(route, accept)
        from lahar.apiserver import handlers

        return await handlers.handle(self.state, request, route, request.method, accept)

    def _version(self) -> dict[str, str]:
        return {
            "major": "1",
            "minor": "32",
            "gitVersion": f"v1.32.0-lahar.{__version__}",
            "gitCommit": "lahar",
            "gitTreeState": "clean",
            "buildDate": "2026-11-29T00:00:00Z",
            "goVersion": "python",
            "compiler": "cpython",
            "platform": "linux/amd64",
        }

    def _discovery(self, route: routing.Route, accept: str) -> Response:
        reg = self.state.registry
        aggregated = "as=APIGroupDiscoveryList" in accept and "v=v2" in accept
        if route.kind == "api":
            if aggregated:
                return _json(reg.aggregated(core=True), content_type=DISCOVERY_V2)
            return _json(reg.api_versions())
        if route.kind == "apis":
            if aggregated:
                return _json(reg.aggregated(core=False), content_type=DISCOVERY_V2)
            return _json(reg.api_group_list())
        if route.kind == "group":
            doc = reg.api_group(route.group)
        else:
            doc = reg.resource_list(route.group, route.version)
        if doc is None:
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        return _json(doc)


def write_options(request: Request, subresource: str = "") -> WriteOptions:
    q = request.query_params
    dry = q.getlist("dryRun")
    for d in dry:
        if d != "All":
            raise bad_request(f'dryRun: Unsupported value: "{d}": supported values: "All"')
    validation = q.get("fieldValidation") or "Warn"
    if validation not in ("Strict", "Warn", "Ignore"):
        raise bad_request(
            f"fieldValidation: invalid value {validation!r}: must be Strict, Warn or Ignore"
        )
    manager = q.get("fieldManager", "")
    if len(manager) > 128:
        raise bad_request("fieldManager: Too long: may not be longer than 128 characters")
    force = q.get("force", "false").lower() == "true"
    return WriteOptions(
        field_manager=manager,
        field_validation=validation,
        dry_run=bool(dry),
        force=force,
        subresource=subresource,
        user_agent=request.headers.get("user-agent", ""),
    )


def streaming(gen: Any, content_type: str) -> StreamingResponse:
    return StreamingResponse(gen, media_type=content_type)
