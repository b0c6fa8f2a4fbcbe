"""The small HTTP endpoint every daemon serves: ``/healthz``, ``/readyz``, ``/metrics``.

Kubelet probes and Prometheus scrapes need only a GET answered, so this is a tiny
HTTP/1.1 server on asyncio's streams (one request per connection), not a web
framework. Checks are named functions; a probe answers ``200 ok`` when all of them
pass and ``500`` listing the failing ones otherwise (``?verbose`` lists all of them,
as the Kubernetes components do). ``/metrics`` renders the manager's own Prometheus
registry. It listens on 127.0.0.1 unless told otherwise; port 0 picks a free port.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["Check", "ProbeServer"]

log = logging.getLogger("lahar.kube.health")
Check = Callable[[], bool | Awaitable[bool]]


class ProbeServer:
    """Serves health and readiness checks and a Prometheus registry over HTTP."""

    def __init__(
        self, registry: CollectorRegistry, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self.health_checks: dict[str, Check] = {"ping": lambda: True}
        self.ready_checks: dict[str, Check] = {"ping": lambda: True}
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("health and metrics endpoint on %s", self.url)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def run_checks(self, checks: dict[str, Check]) -> dict[str, bool]:
        results: dict[str, bool] = {}
        for name, check in list(checks.items()):
            try:
                ok = check()
                if inspect.isawaitable(ok):
                    ok = await ok
                results[name] = bool(ok)
            except Exception:
                log.exception("check %s failed", name)
                results[name] = False
        return results

    async def respond(self, method: str, target: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for one request."""
        url = urlsplit(target)
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"method not allowed\n"
        if url.path == "/metrics":
            return 200, CONTENT_TYPE_LATEST, generate_latest(self.registry)
        checks = {
            "/healthz": self.health_checks,
            "/livez": self.health_checks,
            "/readyz": self.ready_checks,
        }.get(url.path)
        if checks is None:
            return 404, "text/plain", b"not found\n"
        results = await self.run_checks(checks)
        ok = all(results.values())
        if ok and "verbose" not in url.query:
            return 200, "text/plain", b"ok"
        lines = [
            f"[{'+' if passed else '-'}]{name} {'ok' if passed else 'failed'}"
            for name, passed in results.items()
        ]
        lines.append(f"{url.path.strip('/')} check {'passed' if ok else 'failed'}")
        return (200 if ok else 500), "text/plain", ("\n".join(lines) + "\n").encode()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target, _ = request_line.split(" ", 2)
            status, ctype, body = await self.respond(method, target)
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            ValueError,
            ConnectionError,
        ):
            writer.close()
            return
        reason = {
            200: "OK",
            404: "Not Found",
            405: "Method Not Allowed",
            500: "Internal Server Error",
        }.get(status, "")
        header = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        try:
            writer.write(header + (body if method != "HEAD" else b""))
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
