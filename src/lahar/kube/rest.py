"""Raw REST calls through a lightkube client, with plain dicts in and out.

lightkube decodes into typed models and its ``watch()`` cannot ask for bookmarks. The
runtime wants dicts (cheap to keep by the ten thousand in a cache) and needs
``allowWatchBookmarks``, ``timeoutSeconds`` and the exact HTTP status of a failed watch
(410 means relist). So it sends its own requests: over the client's wire
(:mod:`lahar.kube.wire`: aiohttp to the server, or a direct call into the in-process
app), or, for a client without one, through the httpx2 client the lightkube client
holds. Either way the base URL, TLS and credentials are the client's, so nothing else
changes between a real cluster and the embedded server. Errors are raised as
lightkube's ``ApiError``, the same type the typed calls raise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import httpx2
import lightkube
import msgspec
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from lahar.kube.wire import Wire, WireError

__all__ = [
    "ApiError",
    "WireError",
    "api_error",
    "is_status",
    "list_page",
    "request",
    "status_code",
    "watch_events",
]

_decode = msgspec.json.decode
_encode = msgspec.json.encode

Obj = dict[str, Any]


def http_client(client: lightkube.AsyncClient) -> httpx2.AsyncClient:
    """The httpx2 client behind a lightkube client (base URL, auth and transport set)."""
    return client._client._client  # type: ignore[attr-defined,no-any-return]


def wire_of(client: lightkube.AsyncClient) -> Wire | None:
    """The client's :class:`Wire`, if it has one (see ``lahar.kube.client``)."""
    return getattr(client, "wire", None)


def _target(path: str, params: dict[str, str] | None) -> str:
    return f"{path}?{urlencode(params)}" if params else path


def api_error(
    code: int, body: bytes, reason: str = "", request: httpx2.Request | None = None
) -> ApiError:
    """The ``ApiError`` for an error answer: the server's ``Status``, or one made up from
    the code and the body when the answer is not a Status (a proxy's error page)."""
    try:
        data = _decode(body) if body else {}
    except msgspec.DecodeError:
        data = {}
    if not isinstance(data, dict) or data.get("kind") != "Status":
        data = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "message": body.decode(errors="replace")[:500] or reason or f"HTTP {code}",
        }
    return ApiError(request=request, status=Status.from_dict(data))  # type: ignore[arg-type]


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an API error (None for anything else, e.g. a broken connection)."""
    if isinstance(exc, ApiError) and exc.status is not None:
        return exc.status.code
    return None


def is_status(exc: BaseException, code: int) -> bool:
    return status_code(exc) == code


async def request(
    client: lightkube.AsyncClient,
    method: str,
    path: str,
    *,
    params: dict[str, str] | None = None,
    body: Any = None,
    content_type: str = "application/json",
    timeout: float | None = None,
) -> Obj:
    """Send one request and return the decoded JSON reply; raise ``ApiError`` on >= 400
    (and :class:`WireError` when no answer came, for a client with a wire)."""
    content = _encode(body) if body is not None else None
    wire = wire_of(client)
    if wire is not None:
        code, data = await wire.call(
            method,
            _target(path, params),
            content,
            content_type if content is not None else None,
            timeout,
        )
        if code >= 400:
            raise api_error(code, data)
        return _decode(data) if data else {}
    http = http_client(client)
    headers = {"Content-Type": content_type} if content is not None else None
    req = http.build_request(
        method,
        path,
        params=params,
        content=content,
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.USE_CLIENT_DEFAULT,
    )
    resp = await http.send(req)
    data = resp.content
    if resp.status_code >= 400:
        raise api_error(resp.status_code, data, resp.reason_phrase, resp.request)
    return _decode(data) if data else {}


async def list_page(
    client: lightkube.AsyncClient,
    path: str,
    *,
    limit: int,
    cont: str | None = None,
    params: dict[str, str] | None = None,
) -> Obj:
    """One page of a list (``metadata.continue`` names the next one)."""
    query = dict(params or {})
    if limit:
        query["limit"] = str(limit)
    if cont:
        query["continue"] = cont
    return await request(client, "GET", path, params=query)


async def watch_events(
    client: lightkube.AsyncClient,
    path: str,
    *,
    resource_version: str,
    params: dict[str, str] | None = None,
    bookmarks: bool = True,
    timeout_seconds: int = 300,
    read_timeout: float | None = None,
) -> AsyncIterator[Obj]:
    """Stream the watch events (``{"type", "object"}`` dicts) after ``resource_version``.

    Ends when the server ends the stream (``timeoutSeconds``). Raises ``ApiError`` when
    the server refuses the watch (410 when the version is too old); an ERROR event is
    yielded as it comes, for the caller to judge.
    """
    query = dict(params or {})
    query.update(
        watch="true", resourceVersion=resource_version, timeoutSeconds=str(timeout_seconds)
    )
    if bookmarks:
        query["allowWatchBookmarks"] = "true"
    read = read_timeout if read_timeout is not None else timeout_seconds + 30.0
    wire = wire_of(client)
    if wire is not None:
        async with wire.stream("GET", _target(path, query), read) as stream:
            if stream.status >= 400:
                raise api_error(stream.status, await stream.read())
            async for event in _events(stream.chunks):
                yield event
        return
    http = http_client(client)
    req = http.build_request("GET", path, params=query, timeout=httpx2.Timeout(30.0, read=read))
    resp = await http.send(req, stream=True)
    try:
        if resp.status_code >= 400:
            raise api_error(resp.status_code, await resp.aread(), resp.reason_phrase, req)
        async for event in _events(resp.aiter_bytes()):
            yield event
    finally:
        await resp.aclose()


async def _events(chunks: AsyncIterator[bytes]) -> AsyncIterator[Obj]:
    """Watch events, one JSON document per line. Lines are split as bytes (httpx's text
    decoding and line splitter cost more than the JSON decoding itself); a chunk may
    hold many events, or part of one."""
    partial = b""
    async for chunk in chunks:
        if b"\n" not in chunk:
            partial += chunk
            continue
        *lines, partial = (partial + chunk).split(b"\n")
        for line in lines:
            if line.strip():
                yield _decode(line)
    if partial.strip():
        yield _decode(partial)
