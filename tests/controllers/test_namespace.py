"""The namespace controller: a deleted namespace is emptied of every namespaced kind
(custom resources included), then finalized and removed; without the controller it
stays Terminating, as on a real cluster without kube-controller-manager."""

from __future__ import annotations

import asyncio

import lightkube

from lahar.apiserver.server import APIServer
from lahar.embedded import install_crds
from lahar.kube import rest
from tests.controllers.conftest import controllers, eventually


async def _gone(client: lightkube.AsyncClient, path: str) -> bool:
    try:
        await rest.request(client, "GET", path)
    except Exception as exc:
        return rest.status_code(exc) == 404
    return False


async def test_deleted_namespace_is_emptied_then_removed(
    server: APIServer, client: lightkube.AsyncClient
) -> None:
    install_crds(server.state)
    await rest.request(client, "POST", "/api/v1/namespaces", body={"metadata": {"name": "doomed"}})
    await rest.request(
        client, "POST", "/api/v1/namespaces/doomed/configmaps", body={"metadata": {"name": "c"}}
    )
    queue_job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc"},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}
                },
            }
        },
    }
    await rest.request(
        client, "POST", "/apis/ray.io/v1/namespaces/doomed/rayclusters", body=queue_job
    )
    await rest.request(client, "DELETE", "/api/v1/namespaces/doomed")
    await asyncio.sleep(0.5)
    ns = await rest.request(client, "GET", "/api/v1/namespaces/doomed")
    assert ns["status"]["phase"] == "Terminating"  # nothing empties it without the controller
    async with controllers(client, controllers=("namespace",)):
        await eventually(lambda: _gone(client, "/api/v1/namespaces/doomed"))
    assert await _gone(client, "/apis/ray.io/v1/namespaces/doomed/rayclusters/rc")
    assert await _gone(client, "/api/v1/namespaces/doomed/configmaps/c")
