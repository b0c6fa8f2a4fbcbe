"""Raw REST calls through a lightkube client, with plain dicts in and out.

lightkube decodes into typed models and its ``watch()`` cannot ask for bookmarks. The
runtime wants dicts (cheap to keep by the ten thousand in a cache) and needs
``allowWatchBookmarks``, ``timeoutSeconds`` and the exact HTTP status of a failed watch
(410 means relist). So it sends its own requests through the httpx2 client that a
lightkube ``AsyncClient`` already holds: same base URL, TLS, credentials and transport
(HTTPS or the in-process ASGI transport), so nothing else changes between a real
cluster and the embedded server. Errors are raised as lightkube's ``ApiError``, the
same type the typed calls raise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import lightkube
import msgspec
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

__all__ = ["ApiError", "is_status", "list_page", "request", "status_code", "watch_events"]

_decode = msgspec.json.decode
_encode = msgspec.json.encode

Obj = dict[str, Any]


def http_client(client: lightkube.AsyncClient) -> httpx2.AsyncClient:
    """The httpx2 client behind a lightkube client (base URL, auth and transport set)."""
    return client._client._client  # type: ignore[attr-defined,no-any-return]


def _api_error(resp: httpx2.Response, body: bytes) -> ApiError:
    try:
        data = _decode(body) if body else {}
    except msgspec.DecodeError:
        data = {}
    if not isinstance(data, dict) or data.get("kind") != "Status":
        data = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": resp.status_code,
            "message": body.decode(errors="replace")[:500] or resp.reason_phrase,
        }
    return ApiError(request=resp.request, status=Status.from_dict(data))


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
    """Send one request and return the decoded JSON reply; raise ``ApiError`` on >= 400."""
    http = http_client(client)
    content = _encode(body) if body is not None else None
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
        raise _api_error(resp, data)
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
    http = http_client(client)
    query = dict(params or {})
    query.update(
        watch="true", resourceVersion=resource_version, timeoutSeconds=str(timeout_seconds)
    )
    if bookmarks:
        query["allowWatchBookmarks"] = "true"
    read = read_timeout if read_timeout is not None else timeout_seconds + 30.0
    timeout = httpx2.Timeout(30.0, read=read)
    req = http.build_request("GET", path, params=query, timeout=timeout)
    resp = await http.send(req, stream=True)
    try:
        if resp.status_code >= 400:
            raise _api_error(resp, await resp.aread())
        # Lines split as bytes (httpx's text decoding and line splitter cost more than
        # the JSON decoding itself); a chunk may hold many events, or part of one.
        partial = b""
        async for chunk in resp.aiter_bytes():
            if b"\n" not in chunk:
                partial += chunk
                continue
            *lines, partial = (partial + chunk).split(b"\n")
            for line in lines:
                if line.strip():
                    yield _decode(line)
        if partial.strip():
            yield _decode(partial)
    finally:
        await resp.aclose()
