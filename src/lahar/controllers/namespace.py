"""The namespace controller: empty a namespace being deleted, then let it go.

Deleting a Namespace only marks it (``deletionTimestamp``, phase ``Terminating``);
the API server keeps it while its ``spec.finalizers`` holds ``kubernetes``. This
controller, as kube-controller-manager's does, finds every namespaced kind the
server serves (discovery, so CRDs count too), deletes what the namespace still
holds, and once nothing is left removes the ``kubernetes`` finalizer through the
``/finalize`` subresource, after which the server removes the Namespace.
Deletions use Background propagation; objects with finalizers of their own keep the
namespace until their owners let them go, as on a real cluster.
"""

from __future__ import annotations

import logging
from typing import Any

import lightkube

from lahar.controllers.common import Obj
from lahar.controllers.options import ControllerOptions
from lahar.kube import rest
from lahar.kube.manager import Manager
from lahar.kube.reconcile import Request, Result
from lahar.kube.resource import Resource

log = logging.getLogger("lahar.controllers.namespace")
NAME = "namespace"
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
FINALIZER = "kubernetes"


class NamespaceController:
    def __init__(self, mgr: Manager, options: ControllerOptions) -> None:
        self.client: lightkube.AsyncClient = mgr.client
        self.namespaces = mgr.cache(NAMESPACES)
        self.retry_after = options.namespace_retry_period
        mgr.controller(NAME, self.reconcile, max_concurrent_reconciles=2).for_(NAMESPACES)

    async def reconcile(self, req: Request) -> Result:
        ns = self.namespaces.get(req.name)
        if ns is None or not (ns.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        remaining = 0
        for path in await self._namespaced_collections(req.name):
            remaining += await self._delete_all(path)
        if remaining:
            return Result(requeue_after=self.retry_after)
        finalizers = (ns.get("spec") or {}).get("finalizers") or []
        if FINALIZER in finalizers:
            body = {
                **ns,
                "spec": {
                    **(ns.get("spec") or {}),
                    "finalizers": [f for f in finalizers if f != FINALIZER],
                },
            }
            await rest.request(
                self.client, "PUT", f"/api/v1/namespaces/{req.name}/finalize", body=body
            )
            log.info("namespace %s is empty; finalized", req.name)
        return Result()

    async def _namespaced_collections(self, namespace: str) -> list[str]:
        """Collection paths of every namespaced kind that can be listed and deleted."""
        paths: list[str] = []
        groups = ["/api/v1"]
        for group in (await rest.request(self.client, "GET", "/apis")).get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                groups.append(f"/apis/{preferred}")
        for prefix in groups:
            listing = await rest.request(self.client, "GET", prefix)
            for res in listing.get("resources") or []:
                verbs = set(res.get("verbs") or [])
                if (
                    "/" in res["name"]
                    or not res.get("namespaced")
                    or not {"list", "delete"} <= verbs
                ):
                    continue
                paths.append(f"{prefix}/namespaces/{namespace}/{res['name']}")
        return paths

    async def _delete_all(self, path: str) -> int:
        """Delete what is left under ``path``; how many objects still exist."""
        items: list[Obj] = (await rest.request(self.client, "GET", path)).get("items") or []
        for obj in items:
            meta: dict[str, Any] = obj.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            try:
                await rest.request(
                    self.client,
                    "DELETE",
                    f"{path}/{meta['name']}",
                    body={"propagationPolicy": "Background"},
                )
            except Exception as exc:  # gone already, or refused: counted as remaining below
                if rest.status_code(exc) != 404:
                    log.info("deleting %s/%s: %s", path, meta.get("name"), exc)
        return len(items)


def add_namespace_controller(mgr: Manager, options: ControllerOptions) -> NamespaceController:
    return NamespaceController(mgr, options)
