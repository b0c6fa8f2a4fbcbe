"""The client seam: the only place in lahar that constructs Kubernetes clients.

Every component gets an async lightkube client from here, built from a
kubeconfig file, from the in-cluster service account, or from an in-process ASGI
app (the embedded API server, no sockets). Only the transport differs, so the
same component code runs embedded and against a real cluster.
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

DEFAULT_FIELD_MANAGER = "lahar"


def from_kubeconfig(
    path: str | os.PathLike[str] | None = None,
    *,
    field_manager: str = DEFAULT_FIELD_MANAGER,
    context: str | None = None,
    timeout: float = 30.0,
    max_connections: int | None = None,
) -> lightkube.AsyncClient:
    """A client for the cluster a kubeconfig names (default ``$KUBECONFIG``, ``~/.kube/config``).

    ``max_connections`` sizes the connection pool (default: httpx's 100 connections, of
    which only 20 are kept alive). A process with many concurrent writers wants them all
    kept alive: beyond the 20th, every request would otherwise open (and TLS-handshake)
    a new connection.
    """
    if path is None:
        path = (
            os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
            or Path.home() / ".kube" / "config"
        )
    config = KubeConfig.from_file(path)
    transport: httpx2.AsyncBaseTransport | None = None
    if max_connections:
        single = config.get(context)
        assert single.user is not None
        verify = client_adapter.verify_cluster(single.cluster, single.user, single.abs_file)
        limits = httpx2.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        transport = httpx2.AsyncHTTPTransport(verify=verify, limits=limits)
    return lightkube.AsyncClient(
        config=config.get(context) if context else config,
        field_manager=field_manager,
        timeout=timeout,
        transport=transport,
    )


def in_cluster(*, field_manager: str = DEFAULT_FIELD_MANAGER) -> lightkube.AsyncClient:
    return lightkube.AsyncClient(
        config=KubeConfig.from_service_account(), field_manager=field_manager
    )


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
    return lightkube.AsyncClient(
        config=config,
        transport=StreamingASGITransport(app),
        field_manager=field_manager,
        timeout=None,
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
