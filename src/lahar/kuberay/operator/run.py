"""Wiring the operator: caches, two controllers, a Manager, and ``run_operator``.

The RayCluster and RayJob reconcilers run as two controllers with their own
queues and workers (``reconcile_concurrency`` each, 4 by default where KubeRay has
1), so however many RayJobs are being polled, RayCluster reconciles never wait
behind them (pain point 7); within a controller a key is never reconciled by two
workers at once (the workqueue guarantees it). The RayCluster controller wakes on
spec, label or annotation changes of the cluster (not on its own status writes)
and on its pods, Services and (with Volcano) PodGroups; the RayJob controller on
any RayJob change and on its RayClusters, Services and submitter Jobs. Only the
holder of the Lease ``kuberay-operator`` reconciles when leader election is on;
a standby keeps warm caches. The manager serves ``/healthz``, ``/readyz`` and
``/metrics`` (controller-runtime's and KubeRay's metric names).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import lightkube

from lahar.kube.factory import InformerFactory
from lahar.kube.leaderelection import LeaderElectionConfig
from lahar.kube.manager import Manager
from lahar.kuberay.operator import kinds
from lahar.kuberay.operator.context import CLUSTER_INDEX, Caches, OperatorContext, by_ray_cluster
from lahar.kuberay.operator.dashboard import DashboardPool
from lahar.kuberay.operator.metrics import OperatorMetrics
from lahar.kuberay.operator.options import OperatorOptions
from lahar.kuberay.operator.raycluster import RayClusterReconciler
from lahar.kuberay.operator.rayjob import RayJobReconciler
from lahar.kuberay.operator.resolver import ServiceResolver

log = logging.getLogger("lahar.kuberay.operator")
Obj = dict[str, Any]


def _meta_changed(old: Obj, new: Obj) -> bool:
    """KubeRay's RayCluster predicate: generation, labels or annotations changed."""
    a, b = old["metadata"], new["metadata"]
    return (
        a.get("generation") != b.get("generation")
        or a.get("labels") != b.get("labels")
        or a.get("annotations") != b.get("annotations")
        or a.get("deletionTimestamp") != b.get("deletionTimestamp")
    )


class Operator:
    """A built (not yet running) operator: its manager, context and reconcilers."""

    def __init__(self, manager: Manager, ctx: OperatorContext) -> None:
        self.manager = manager
        self.ctx = ctx
        self.clusters = RayClusterReconciler(ctx)
        self.jobs = RayJobReconciler(ctx)

    async def discover(self) -> None:
        """Which RBAC kinds the server serves (looked up once)."""
        served = set()
        with contextlib.suppress(Exception):
            served |= {"ServiceAccount"} & await kinds.served_kinds(self.ctx.client, "v1")
        with contextlib.suppress(Exception):
            served |= await kinds.served_kinds(self.ctx.client, "rbac.authorization.k8s.io/v1")
        self.ctx.served_rbac = served & {"ServiceAccount", "Role", "RoleBinding"}

    async def run(self) -> None:
        await self.discover()
        try:
            await self.manager.run()
        finally:
            await self.ctx.dashboards.close()

    def stop(self) -> None:
        self.manager.stop()


def build_operator(
    client: lightkube.AsyncClient,
    *,
    informers: InformerFactory | None = None,
    options: OperatorOptions | None = None,
) -> Operator:
    options = options or OperatorOptions()
    election = (
        LeaderElectionConfig(
            options.lease_name,
            namespace=options.lease_namespace,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )
        if options.leader_elect
        else None
    )
    mgr = Manager(
        client,
        name=options.lease_name,
        informers=informers,
        leader_election=election,
        health_port=options.health_port,
    )
    pod_informer = mgr.informers.informer(kinds.PODS, label_selector=kinds.POD_SELECTOR)
    pod_informer.add_indexer(CLUSTER_INDEX, by_ray_cluster)
    caches = Caches(
        clusters=mgr.cache(kinds.RAYCLUSTERS),
        jobs=mgr.cache(kinds.RAYJOBS),
        pods=pod_informer.cache,
        services=mgr.cache(kinds.SERVICES),
        batch_jobs=mgr.cache(kinds.JOBS, label_selector=kinds.JOB_SELECTOR),
        podgroups=mgr.cache(kinds.PODGROUPS) if options.volcano else None,
    )
    resolve = options.resolve or ServiceResolver(
        caches.services,
        caches.pods,
        cluster_domain=options.build.cluster_domain,
        prefer_cluster_ip=options.prefer_cluster_ip,
        pod_address=options.pod_address,
    )
    ctx = OperatorContext(
        client=client,
        caches=caches,
        recorder=mgr.recorder("kuberay-operator"),
        metrics=OperatorMetrics(mgr.metrics.registry),
        options=options,
        dashboards=DashboardPool(
            resolve,
            transport=options.dashboard_transport,
            timeout=options.dashboard_timeout,
            max_concurrency=options.dashboard_max_concurrency,
        ),
    )
    op = Operator(mgr, ctx)
    rc = mgr.controller(
        "raycluster", op.clusters, max_concurrent_reconciles=options.reconcile_concurrency
    )
    rc.for_(kinds.RAYCLUSTERS, update_predicate=_meta_changed)
    rc.owns(kinds.PODS, label_selector=kinds.POD_SELECTOR).owns(kinds.SERVICES)
    if options.volcano:
        rc.owns(kinds.PODGROUPS)
    rj = mgr.controller("rayjob", op.jobs, max_concurrent_reconciles=options.job_workers)
    rj.for_(kinds.RAYJOBS).owns(kinds.RAYCLUSTERS).owns(kinds.SERVICES)
    rj.owns(kinds.JOBS, label_selector=kinds.JOB_SELECTOR)
    return op


async def run_operator(
    client: lightkube.AsyncClient,
    *,
    informers: InformerFactory | None = None,
    options: OperatorOptions,
) -> None:
    """Run the operator until cancelled (the entry point ``lahar up`` uses).

    Raises :class:`~lahar.kube.leaderelection.LeadershipLost` when leader election
    is on and the Lease is lost: the caller should exit and restart.
    """
    await build_operator(client, informers=informers, options=options).run()
