"""The wire under :mod:`lahar.kube.rest`: how a request reaches the API server.

Every component sends its API calls through ``rest`` (informers' lists and watches,
binds, status writes, creates), so the cost of one request on the client side bounds
what a component can do per second. Through httpx (lightkube's transport) one small
request cost ~0.7 ms of client CPU, about nine times what aiohttp's C-accelerated
HTTP/1.1 client costs, and more than the API server spent answering it. So ``rest``
sends over a :class:`Wire` when the client has one:

* :class:`NetWire`: aiohttp over TLS to the server a kubeconfig names, with its CA,
  client certificate, bearer token (a token file is re-read every minute, as client-go
  does, so a rotated service-account token is picked up) or basic credentials.
* :class:`AppWire`: an ASGI app in this process (the embedded API server), called
  directly, without sockets or an HTTP client at all.

A kubeconfig whose credentials come from an exec plugin or an auth provider gets no
wire; its client goes through lightkube's httpx client, which knows how to run them.
Transport failures are raised as :class:`WireError` (a ``ConnectionError``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import aiohttp
import yarl

__all__ = ["AppWire", "NetWire", "Stream", "Wire", "WireError"]

TOKEN_REREAD_SECONDS = 60.0
# Idle kept-alive connections are dropped a little before a server that closes them
# after 5 s of silence (uvicorn's default) would, so a request is never sent down a
# connection the server is closing at that moment.
KEEPALIVE_SECONDS = 4.0


class WireError(ConnectionError):
    """The request did not get an HTTP answer (refused, reset, timed out, TLS failure)."""


@dataclass
class Stream:
    """A response being read as it arrives (a watch)."""

    status: int
    chunks: AsyncIterator[bytes]
    read: Callable[[], Awaitable[bytes]]


class Wire:
    """Sends one request (``target`` is the path with its encoded query)."""

    async def call(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes]:
        raise NotImplementedError

    def stream(
        self, method: str, target: str, read_timeout: float | None
    ) -> contextlib.AbstractAsyncContextManager[Stream]:
        raise NotImplementedError

    async def close(self) -> None:
        """Release connections; the wire can still be used afterwards (it reconnects)."""


# -- over the network: aiohttp ---------------------------------------------------------


class _Credentials:
    """The Authorization header of each request."""

    def __init__(
        self, token: str | None, token_file: str | None, basic: tuple[str, str] | None
    ) -> None:
        self._token = token
        self._file = token_file
        self._read_at = -TOKEN_REREAD_SECONDS
        self._basic = basic

    def header(self) -> str | None:
        if self._file:
            now = time.monotonic()
            if now - self._read_at >= TOKEN_REREAD_SECONDS:
                with contextlib.suppress(OSError):  # keep the last token if unreadable
                    self._token = Path(self._file).read_text().strip()
                self._read_at = now
        if self._token:
            return f"Bearer {self._token}"
        if self._basic:
            raw = f"{self._basic[0]}:{self._basic[1]}".encode()
            return "Basic " + base64.b64encode(raw).decode()
        return None


class NetWire(Wire):
    """HTTP/1.1 with kept-alive connections (aiohttp), one pool per event loop."""

    def __init__(
        self,
        server: str,
        ssl: Any,
        *,
        token: str | None = None,
        token_file: str | None = None,
        basic: tuple[str, str] | None = None,
        timeout: float | None = 30.0,
        max_connections: int = 256,
        user_agent: str = "lahar",
    ) -> None:
        self.base = server.rstrip("/")
        self._ssl = ssl
        self._creds = _Credentials(token, token_file, basic)
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._limit = max_connections
        self._headers = {"Accept": "application/json", "User-Agent": user_agent}
        self._proxy = _proxy_for(self.base)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session_now(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # A session belongs to the loop it was made on; a client reused from another
            # loop (tests, a restarted component) gets a fresh pool.
            connector = aiohttp.TCPConnector(
                limit=self._limit, ssl=self._ssl, keepalive_timeout=KEEPALIVE_SECONDS
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=self._timeout,
                auto_decompress=False,
                skip_auto_headers=("Accept-Encoding", "Content-Type"),
                proxy=self._proxy,
            )
            self._loop = loop
        return self._session

    def _request_headers(self, content_type: str | None) -> dict[str, str]:
        headers = dict(self._headers)
        auth = self._creds.header()
        if auth:
            headers["Authorization"] = auth
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def call(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes]:
        session = self._session_now()
        url = yarl.URL(self.base + target, encoded=True)
        kwargs: dict[str, Any] = {}
        if timeout is not None:
            kwargs["timeout"] = aiohttp.ClientTimeout(total=timeout)
        try:
            async with session.request(
                method,
                url,
                data=body,
                headers=self._request_headers(content_type if body is not None else None),
                **kwargs,
            ) as resp:
                return resp.status, await resp.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise WireError(_describe(exc, method, target)) from exc

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, target: str, read_timeout: float | None
    ) -> AsyncIterator[Stream]:
        session = self._session_now()
        url = yarl.URL(self.base + target, encoded=True)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30.0, sock_read=read_timeout)
        try:
            resp = await session.request(
                method, url, headers=self._request_headers(None), timeout=timeout
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise WireError(_describe(exc, method, target)) from exc
        try:
            yield Stream(resp.status, _chunks(resp, method, target), resp.read)
        finally:
            resp.close()  # a stream cut short cannot go back to the pool

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is _running_loop():
            await session.close()


async def _chunks(resp: aiohttp.ClientResponse, method: str, target: str) -> AsyncIterator[bytes]:
    try:
        async for chunk in resp.content.iter_any():
            yield chunk
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise WireError(_describe(exc, method, target)) from exc


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _describe(exc: BaseException, method: str, target: str) -> str:
    what = str(exc) or type(exc).__name__
    return f"{method} {target.split('?', 1)[0]}: {what}"


def _proxy_for(base: str) -> str | None:
    """The HTTP(S) proxy the environment names for this server (honouring NO_PROXY),
    decided once: looking it up per request would cost more than the request."""
    parts = urlsplit(base)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


# -- in this process: an ASGI app ------------------------------------------------------


class AppWire(Wire):
    """Calls an ASGI app directly: the embedded API server in the same process."""

    def __init__(self, app: Any, *, token: str | None = None) -> None:
        self.app = app
        self._headers: list[tuple[bytes, bytes]] = [
            (b"host", b"lahar.local"),
            (b"accept", b"application/json"),
            (b"user-agent", b"lahar"),
        ]
        if token:
            self._headers.append((b"authorization", f"Bearer {token}".encode()))

    def _scope(
        self, method: str, target: str, body: bytes | None, content_type: str | None
    ) -> dict[str, Any]:
        path, _, query = target.partition("?")
        headers = list(self._headers)
        if body is not None:
            headers.append((b"content-length", str(len(body)).encode()))
            if content_type:
                headers.append((b"content-type", content_type.encode()))
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "headers": headers,
            "scheme": "http",
            "path": unquote(path),
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "server": ("lahar.local", 80),
            "client": ("127.0.0.1", 0),
            "root_path": "",
        }

    async def call(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes]:
        scope = self._scope(method, target, body, content_type)
        status = 0
        parts: list[bytes] = []
        received = False

        async def receive() -> dict[str, Any]:
            nonlocal received
            if not received:
                received = True
                return {"type": "http.request", "body": body or b"", "more_body": False}
            await asyncio.get_running_loop().create_future()  # no disconnect: we wait
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        if timeout is None:
            await self.app(scope, receive, send)
        else:
            async with asyncio.timeout(timeout):
                await self.app(scope, receive, send)
        if not status:
            raise WireError(f"{method} {path_of(target)}: the app sent no response")
        return status, b"".join(parts)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, target: str, read_timeout: float | None
    ) -> AsyncIterator[Stream]:
        scope = self._scope(method, target, None, None)
        loop = asyncio.get_running_loop()
        started: asyncio.Future[int] = loop.create_future()
        queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        gone = asyncio.Event()
        received = False

        async def receive() -> dict[str, Any]:
            nonlocal received
            if not received:
                received = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started.set_result(message["status"])
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    queue.put_nowait(message["body"])
                if not message.get("more_body", False):
                    queue.put_nowait(None)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # surface the app's crash to the reader
                if not started.done():
                    started.set_exception(exc)
                queue.put_nowait(exc)
                return
            if not started.done():
                started.set_exception(WireError(f"{method} {path_of(target)}: no response"))
            queue.put_nowait(None)

        async def chunks() -> AsyncIterator[bytes]:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise WireError(f"{method} {path_of(target)}: {item}") from item
                yield item

        async def read() -> bytes:
            return b"".join([c async for c in chunks()])

        task = asyncio.create_task(run(), name=f"in-process {method} {path_of(target)}")
        try:
            status = await started
            yield Stream(status, chunks(), read)
        finally:
            gone.set()
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def path_of(target: str) -> str:
    return target.split("?", 1)[0]
