"""The pods/log seam between the API server and node agents.

A node agent that runs pods provides their logs. In the embedded cluster an
agent in the same process registers a :class:`LogProvider` for its node; an agent
in another process publishes its log endpoint the way a kubelet does, in the
Node's ``status.daemonEndpoints.kubeletEndpoint.Port`` (on loopback), and the
server streams ``GET /containerLogs/{ns}/{pod}/{container}`` from it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

import httpx2

from lahar.apiserver.errors import APIError, bad_request


@dataclass(frozen=True)
class LogRequest:
    namespace: str
    pod: str
    container: str
    follow: bool = False
    tail_lines: int | None = None
    previous: bool = False
    since_seconds: int | None = None
    timestamps: bool = False
    limit_bytes: int | None = None


class LogProvider(Protocol):
    def stream(self, request: LogRequest) -> AsyncIterator[bytes]: ...


class LogRouter:
    def __init__(self) -> None:
        self._providers: dict[str, LogProvider] = {}

    def register(self, node: str, provider: LogProvider) -> None:
        self._providers[node] = provider

    def unregister(self, node: str) -> None:
        self._providers.pop(node, None)

    def open(
        self, node_obj: dict | None, node_name: str, request: LogRequest
    ) -> AsyncIterator[bytes]:
        provider = self._providers.get(node_name)
        if provider is not None:
            return provider.stream(request)
        port = (
            (((node_obj or {}).get("status") or {}).get("daemonEndpoints") or {})
            .get("kubeletEndpoint", {})
            .get("Port")
        )
        if not port:
            raise bad_request(
                f'Get "containerLogs/{request.namespace}/{request.pod}/{request.container}": '
                f"no node agent serves logs for node {node_name!r}"
            )
        return _remote(int(port), request)


async def _remote(port: int, request: LogRequest) -> AsyncIterator[bytes]:
    params: dict[str, str] = {}
    if request.follow:
        params["follow"] = "true"
    if request.tail_lines is not None:
        params["tailLines"] = str(request.tail_lines)
    if request.previous:
        params["previous"] = "true"
    if request.timestamps:
        params["timestamps"] = "true"
    if request.since_seconds is not None:
        params["sinceSeconds"] = str(request.since_seconds)
    url = f"http://127.0.0.1:{port}/containerLogs/{request.namespace}/{request.pod}/{request.container}"
    async with (
        httpx2.AsyncClient(timeout=None) as client,
        client.stream("GET", url, params=params) as resp,
    ):
        if resp.status_code != 200:
            body = (await resp.aread()).decode(errors="replace")
            raise APIError(
                resp.status_code if resp.status_code < 500 else 400, "BadRequest", body.strip()
            )
        async for chunk in resp.aiter_bytes():
            yield chunk
