"""The RayCluster reconciler: one KubeRay pass (kuberay-semantics.md §3.1).

Read the cluster from the cache; skip it if another controller manages it,
validate it (an invalid spec gets a Warning event and no requeue), leave it alone
while it is being deleted (garbage collection removes the children); then, in
KubeRay's order and stopping at the first error: the autoscaler RBAC objects (only
the kinds the server serves, looked up once at start-up), the head Service
(found by labels, created when missing), the headless worker Service, the serve
Service, and the pods (:mod:`.clusterpods`). The status is computed even after an
error and written only when it changed (:mod:`.status`), with an Event for every
condition or state transition. Requeue: the error goes to the rate limiter;
after a status change look again in 2 s, otherwise in 300 s.

Restart safety comes from the layout: the reconciler keeps no state that the
objects do not hold (the expectations only guard the window after its own
writes), every child is found by name or labels before it is created, and the
status write carries the resourceVersion it was computed from.
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.kube import rest
from lahar.kube.reconcile import Request, Result
from lahar.kube.reconcile import logger as rlogger
from lahar.kuberay import constants as c
from lahar.kuberay import naming, rbac, services
from lahar.kuberay.meta import autoscaling_enabled, namespace_of
from lahar.kuberay.operator import kinds
from lahar.kuberay.operator.clusterpods import PodReconciler
from lahar.kuberay.operator.context import OperatorContext
from lahar.kuberay.operator.status import (
    PROVISIONED,
    REPLICA_FAILURE,
    PassError,
    compute_status,
    condition,
    is_true,
    status_changed,
)
from lahar.kuberay.validation import validate_raycluster

Obj = dict[str, Any]


def managed_elsewhere(obj: Obj) -> bool:
    managed_by = (obj.get("spec") or {}).get("managedBy")
    return bool(managed_by) and managed_by != c.MANAGED_BY_KUBERAY


def owner_kind(cluster: Obj) -> str:
    origin = (cluster["metadata"].get("labels") or {}).get(c.ORIGIN_CRD_LABEL)
    return origin if origin in ("RayJob", "RayService") else "None"


class RayClusterReconciler:
    def __init__(self, ctx: OperatorContext) -> None:
        self.ctx = ctx
        self.status_writes = 0  # successful status writes (tests count them)
        self._rbac_done: set[tuple[str, str, str]] = set()

    async def __call__(self, req: Request) -> Result:
        try:
            return await self._reconcile(req)
        except rest.ApiError as exc:
            if not rest.is_status(exc, 409):
                raise
            # A write based on a cache that had not caught up: read again, no alarm.
            rlogger("lahar.kuberay.operator").debug("conflict, retrying: %s", exc)
            return Result(requeue=True)

    async def _reconcile(self, req: Request) -> Result:
        ctx = self.ctx
        cluster = ctx.caches.clusters.get(req.name, req.namespace)
        if cluster is None:
            ctx.expectations.forget(req.namespace, req.name)
            ctx.metrics.forget_cluster(req.name, req.namespace)
            return Result()
        if managed_elsewhere(cluster):
            return Result()
        causes = validate_raycluster(cluster)
        if causes:
            text = "; ".join(f"{x.field}: {x.message}" if x.field else x.message for x in causes)
            ctx.recorder.warning(cluster, "InvalidSpec", text)
            return Result()
        if cluster["metadata"].get("deletionTimestamp"):
            return Result()
        error: PassError | None = None
        try:
            await self._rbac(cluster)
            await self._services(cluster)
            await PodReconciler(ctx, cluster).run()
        except PassError as exc:
            error = exc
        except rest.ApiError as exc:
            error = PassError(str(exc))
        changed = await self._write_status(cluster, error)
        if error is not None:
            raise error
        return Result(
            requeue_after=ctx.options.cluster_status_requeue
            if changed
            else ctx.options.cluster_requeue
        )

    # -- children ---------------------------------------------------------------------

    async def _rbac(self, cluster: Obj) -> None:
        if not autoscaling_enabled(cluster["spec"]):
            return
        for obj in rbac.build_autoscaler_rbac(cluster):
            kind = obj["kind"]
            key = (cluster["metadata"]["uid"], kind, obj["metadata"]["name"])
            if kind not in self.ctx.served_rbac or key in self._rbac_done:
                continue  # the server does not serve RBAC kinds (lahar's embedded one)
            created = await kinds.create(self.ctx.client, kinds.BY_KIND[kind], obj)
            if created is not None:
                self.ctx.recorder.normal(
                    cluster, f"Created{kind}", f"Created {kind} {obj['metadata']['name']}"
                )
            self._rbac_done.add(key)

    def head_services(self, cluster: Obj) -> list[Obj]:
        name = cluster["metadata"]["name"]
        labels = {
            c.CLUSTER_LABEL: name,
            c.NODE_TYPE_LABEL: "head",
            c.IDENTIFIER_LABEL: naming.check_label(f"{name}-head"),
        }
        return self.ctx.caches.services.list(namespace_of(cluster), labels)

    async def _ensure_service(self, cluster: Obj, svc: Obj) -> None:
        if self.ctx.caches.services.get(svc["metadata"]["name"], namespace_of(cluster)):
            return
        created = await kinds.create(self.ctx.client, kinds.SERVICES, svc)
        if created is not None:
            self.ctx.recorder.normal(
                cluster,
                "CreatedService",
                f"Created service {namespace_of(cluster)}/{svc['metadata']['name']}",
            )

    async def _services(self, cluster: Obj) -> None:
        found = self.head_services(cluster)
        if len(found) > 1:
            names = sorted(s["metadata"]["name"] for s in found)
            raise PassError(f"more than one head Service: {names}")
        if not found:
            try:
                svc = services.build_head_service(cluster, self.ctx.options.build)
            except services.ServiceError as exc:
                raise PassError(str(exc)) from exc
            await self._ensure_service(cluster, svc)
        if services.needs_headless_service(cluster["spec"]):
            await self._ensure_service(cluster, services.build_headless_worker_service(cluster))
        if services.wants_serve_service(cluster):
            try:
                svc = services.build_serve_service(cluster)
            except services.ServiceError as exc:
                raise PassError(str(exc)) from exc
            await self._ensure_service(cluster, svc)

    # -- status -----------------------------------------------------------------------

    async def _write_status(self, cluster: Obj, error: PassError | None) -> bool:
        ctx = self.ctx
        ns, name = namespace_of(cluster), cluster["metadata"]["name"]
        found = self.head_services(cluster)
        head_svc = found[0] if len(found) == 1 else None
        old = cluster.get("status") or {}
        now = ctx.now()
        new = compute_status(cluster, ctx.cluster_pods(ns, name), head_svc, now=now, error=error)
        ctx.metrics.observe_cluster(name, ns, owner_kind(cluster), is_true(new, PROVISIONED))
        if not status_changed(old, new):
            return False
        new["lastUpdateTime"] = kinds.rfc3339(now)
        body = copy.deepcopy(cluster)
        body["status"] = new
        try:
            await kinds.update_status(ctx.client, kinds.RAYCLUSTERS, body)
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return False
            raise
        self.status_writes += 1
        self._events(cluster, old, new, now)
        return True

    def _events(self, cluster: Obj, old: Obj, new: Obj, now: float) -> None:
        rec = self.ctx.recorder
        if new.get("state") != old.get("state") and new.get("state"):
            rec.normal(cluster, "StateChanged", f"RayCluster state is now {new['state']}")
        for cond in new.get("conditions") or ():
            before = condition(old, cond["type"])
            if before is not None and before.get("status") == cond.get("status"):
                continue
            if before is None and cond.get("status") != "True":
                continue
            text = f"{cond['type']} is {cond['status']}"
            if cond.get("reason"):
                text += f" ({cond['reason']})"
            if cond.get("message"):
                text += f": {cond['message']}"
            warn = cond["type"] == REPLICA_FAILURE and cond.get("status") == "True"
            (rec.warning if warn else rec.normal)(cluster, cond.get("reason") or cond["type"], text)
            if cond["type"] == PROVISIONED and cond.get("status") == "True":
                created = kinds.parse_time(cluster["metadata"].get("creationTimestamp"))
                if created is not None:
                    ns, name = namespace_of(cluster), cluster["metadata"]["name"]
                    self.ctx.metrics.cluster_provisioned_duration.labels(name, ns).set(
                        max(0.0, now - created)
                    )
        for cond in old.get("conditions") or ():
            if condition(new, cond["type"]) is None and cond.get("status") == "True":
                rec.normal(cluster, f"{cond['type']}Cleared", f"{cond['type']} cleared")
