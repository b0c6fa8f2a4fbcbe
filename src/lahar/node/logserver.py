"""The loopback log endpoint of a node agent running in its own process.

A kubelet serves ``GET /containerLogs/{namespace}/{pod}/{container}`` and the API
server proxies ``pods/log`` to it, at the port the Node advertises in
``status.daemonEndpoints.kubeletEndpoint.Port``. An agent in the API server's process
registers its log provider with the server directly; one in another process runs this
small HTTP/1.1 server on loopback and advertises its port. One server serves every
node of the agent (the path names the pod). It answers with a chunked body, so
``follow`` streams for as long as the provider yields.

A provider is anything with ``stream(request) -> AsyncIterator[bytes]`` (the API
server's ``LogProvider``); it raises ``LookupError`` for a pod or container it does not
know, which is answered 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from lahar.apiserver.logs import LogRequest

log = logging.getLogger("lahar.node.logserver")

_MAX_HEADER = 16 * 1024


class LogSource(Protocol):
    def stream(self, request: LogRequest) -> AsyncIterator[bytes]: ...


def parse_request(target: str) -> LogRequest | None:
    """The log request a ``/containerLogs/...`` target names (None for any other path)."""
    url = urlsplit(target)
    parts = [unquote(p) for p in url.path.split("/") if p]
    if len(parts) != 4 or parts[0] != "containerLogs":
        return None
    q = {k: v[-1] for k, v in parse_qs(url.query).items()}

    def num(key: str) -> int | None:
        value = q.get(key)
        return int(value) if value and value.lstrip("-").isdigit() else None

    return LogRequest(
        namespace=parts[1],
        pod=parts[2],
        container=parts[3],
        follow=q.get("follow") == "true",
        tail_lines=num("tailLines"),
        previous=q.get("previous") == "true",
        since_seconds=num("sinceSeconds"),
        timestamps=q.get("timestamps") == "true",
        limit_bytes=num("limitBytes"),
    )


class LogServer:
    """Serve ``source``'s logs on ``host:port`` (port 0 picks one; see :attr:`port`)."""

    def __init__(self, source: LogSource, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.source = source
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _MAX_HEADER:
                raise ValueError("request header too large")
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            await self._respond(method, target, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            await _send(writer, 400, b"bad request\n")
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("serving a log request failed")
        finally:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def _respond(self, method: str, target: str, writer: asyncio.StreamWriter) -> None:
        request = parse_request(target)
        if method != "GET" or request is None:
            await _send(writer, 404, b"not found\n")
            return
        stream = self.source.stream(request)
        try:
            first = await anext(stream, b"")
        except LookupError as exc:
            await _send(writer, 404, f"{exc.args[0] if exc.args else exc}\n".encode())
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        try:
            chunk = first
            while True:
                if chunk:
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
                chunk = await anext(stream, None)
                if chunk is None:
                    break
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        finally:
            await stream.aclose()  # type: ignore[attr-defined]


async def _send(writer: asyncio.StreamWriter, code: int, body: bytes) -> None:
    reason = {400: "Bad Request", 404: "Not Found"}.get(code, "Error")
    writer.write(
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
