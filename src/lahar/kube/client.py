"""The client seam: the only place in lahar that constructs Kubernetes clients.

Every component gets an async lightkube client from here, built from a
kubeconfig file, from the in-cluster service account, or from an in-process ASGI
app (the embedded API server, no sockets). Only the transport differs, so the
same component code runs embedded and against a real cluster.

The client is lightkube's, plus a :class:`~lahar.kube.wire.Wire` that
:mod:`lahar.kube.rest` (nearly every call lahar makes) sends through: aiohttp to a
server, or a direct call into the in-process app. Typed lightkube calls keep using
lightkube's own httpx client with the same credentials.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx2
import lightkube
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import Cluster, KubeConfig, User
from lightkube.generic_resource import create_namespaced_resource

from lahar.kube.transport import StreamingASGITransport
from lahar.kube.wire import AppWire, NetWire, Wire

DEFAULT_FIELD_MANAGER = "lahar"
DEFAULT_MAX_CONNECTIONS = 256


class Client(lightkube.AsyncClient):
    """A lightkube client that also carries lahar's wire (``None``: httpx only)."""

    def __init__(self, *args: Any, wire: Wire | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wire = wire

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            if self.wire is not None:
                await self.wire.close()


def net_wire(single: Any, *, timeout: float | None, max_connections: int) -> Wire | None:
    """A :class:`NetWire` for one kubeconfig context, or None when its credentials come
    from an exec plugin or an auth provider (lightkube's httpx client runs those)."""
    user = single.user or User()
    if user.exec is not None or user.auth_provider is not None:
        return None
    ssl: Any = False
    if single.cluster.server.startswith("https"):
        ssl = client_adapter.verify_cluster(single.cluster, user, single.abs_file)
    basic = (user.username, user.password) if user.username and user.password else None
    return NetWire(
        single.cluster.server,
        ssl,
        token=user.token,
        token_file=str(single.abs_file(user.token_file)) if user.token_file else None,
        basic=basic,
        timeout=timeout,
        max_connections=max_connections,
    )


def from_kubeconfig(
    path: str | os.PathLike[str] | None = None,
    *,
    field_manager: str = DEFAULT_FIELD_MANAGER,
    context: str | None = None,
    timeout: float = 30.0,
    max_connections: int | None = None,
) -> lightkube.AsyncClient:
    """A client for the cluster a kubeconfig names (default ``$KUBECONFIG``, ``~/.kube/config``).

    ``max_connections`` bounds the wire's pool of kept-alive connections (default 256;
    watches hold one each). It also sizes the pool of lightkube's httpx client, which by
    default keeps only 20 of its 100 connections alive: beyond the 20th, each of its
    requests would open (and TLS-handshake) a new connection.
    """
    if path is None:
        path = (
            os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
            or Path.home() / ".kube" / "config"
        )
    config = KubeConfig.from_file(path)
    single = config.get(context)
    transport: httpx2.AsyncBaseTransport | None = None
    if max_connections and single.user is not None:
        verify = client_adapter.verify_cluster(single.cluster, single.user, single.abs_file)
        limits = httpx2.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        transport = httpx2.AsyncHTTPTransport(verify=verify, limits=limits)
    return Client(
        config=single if context else config,
        field_manager=field_manager,
        timeout=timeout,
        transport=transport,
        wire=net_wire(
            single, timeout=timeout, max_connections=max_connections or DEFAULT_MAX_CONNECTIONS
        ),
    )


def in_cluster(*, field_manager: str = DEFAULT_FIELD_MANAGER) -> lightkube.AsyncClient:
    config = KubeConfig.from_service_account()
    wire = net_wire(config.get(), timeout=30.0, max_connections=DEFAULT_MAX_CONNECTIONS)
    return Client(config=config, field_manager=field_manager, wire=wire)


def in_process(
    app: Any,
    *,
    token: str | None = None,
    field_manager: str = DEFAULT_FIELD_MANAGER,
    namespace: str = "default",
) -> lightkube.AsyncClient:
    """A client that calls an ASGI app directly (the embedded API server)."""
    user = User(token=token) if token else User()
    config = KubeConfig.from_one(
        cluster=Cluster(server="http://lahar.local"), user=user, namespace=namespace
    )
    return Client(
        config=config,
        transport=StreamingASGITransport(app),
        field_manager=field_manager,
        timeout=None,
        wire=AppWire(app, token=token),
    )


# POST /api/v1/namespaces/{ns}/bindings: served by the same code as pods/{name}/binding, and
# its reply (a Status) is read as a plain dict instead of being decoded as a Binding.
Binding = create_namespaced_resource("", "v1", "Binding", "bindings", verbs=["post"])


async def bind_pod(
    client: lightkube.AsyncClient, namespace: str, pod: str, node: str, *, uid: str | None = None
) -> None:
    """Bind a pod to a node, the way kube-scheduler does (the server answers with a Status)."""
    metadata: dict[str, Any] = {"name": pod, "namespace": namespace}
    if uid:
        metadata["uid"] = uid
    await client.create(
        Binding(
            {"metadata": metadata, "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        ),
        namespace=namespace,
    )
