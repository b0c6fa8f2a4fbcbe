"""An in-process HTTP transport that talks to an ASGI app without sockets, streaming.

httpx2's own ``ASGITransport`` buffers the whole response before returning it,
which makes watches (endless responses) impossible. This transport runs the app
as a task and hands back a response whose body is read as the app sends it, so
an informer in the same process as the embedded API server watches exactly as it
would over the network. Closing the response cancels the app's task.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from starlette.types import ASGIApp

_END = object()


class _Body(httpx2.AsyncByteStream):
    def __init__(self, queue: asyncio.Queue[Any], task: asyncio.Task[None]) -> None:
        self._queue = queue
        self._task = task

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self._queue.get()
            if chunk is _END:
                return
            if isinstance(chunk, BaseException):
                raise httpx2.ReadError(str(chunk)) from chunk
            yield chunk

    async def aclose(self) -> None:
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


class StreamingASGITransport(httpx2.AsyncBaseTransport):
    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.app = app
        self.client = client

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = b"".join([chunk async for chunk in request.stream])  # type: ignore[union-attr]
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
            "client": self.client,
            "root_path": "",
        }
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future()
        )
        chunks: asyncio.Queue[Any] = asyncio.Queue()
        sent_request = False
        disconnected = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal sent_request
            if not sent_request:
                sent_request = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started.set_result((message["status"], list(message.get("headers", []))))
            elif message["type"] == "http.response.body":
                data = message.get("body", b"")
                if data:
                    await chunks.put(data)
                if not message.get("more_body", False):
                    await chunks.put(_END)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)  # type: ignore[arg-type]
            except asyncio.CancelledError:
                disconnected.set()
                raise
            except BaseException as exc:  # surface app crashes to the caller
                if not started.done():
                    started.set_exception(exc)
                else:
                    await chunks.put(exc)
                return
            if not started.done():
                started.set_exception(RuntimeError("ASGI app returned without a response"))
            await chunks.put(_END)

        task = asyncio.create_task(run())
        status, headers = await started
        return httpx2.Response(status, headers=headers, stream=_Body(chunks, task), request=request)
