"""Running the built-in controllers together: one Manager, one leader-elected Lease.

``lahar kube-controllers`` (and ``lahar up``, in-process) call
:func:`run_builtin_controllers`: the Job, TTL-after-finished, node lifecycle (with
taint-based eviction), namespace and pod GC controllers share one set of informers and hold the
Lease ``kube-system/lahar-controller-manager`` while they act, so a second replica
stands by instead of doubling every write.
"""

from __future__ import annotations

import lightkube

from lahar.controllers.options import ControllerOptions
from lahar.kube.factory import InformerFactory
from lahar.kube.leaderelection import LeaderElectionConfig
from lahar.kube.manager import Manager

ALL = ("job", "nodelifecycle", "podgc", "namespace")


def build_manager(
    client: lightkube.AsyncClient,
    *,
    informers: InformerFactory | None = None,
    options: ControllerOptions | None = None,
) -> Manager:
    """A manager with the chosen built-in controllers wired on (not running yet)."""
    options = options or ControllerOptions()
    unknown = set(options.controllers) - set(ALL)
    if unknown:
        raise ValueError(f"unknown controllers: {', '.join(sorted(unknown))}")
    election = (
        LeaderElectionConfig(options.lease_name, namespace=options.lease_namespace)
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
    if "job" in options.controllers:
        from lahar.controllers.job import add_job_controller
        from lahar.controllers.ttlafterfinished import add_ttl_controller

        add_job_controller(mgr, options)
        add_ttl_controller(mgr, options)
    if "nodelifecycle" in options.controllers:
        from lahar.controllers.nodelifecycle import add_node_lifecycle_controller

        add_node_lifecycle_controller(mgr, options)
    if "namespace" in options.controllers:
        from lahar.controllers.namespace import add_namespace_controller

        add_namespace_controller(mgr, options)
    if "podgc" in options.controllers:
        from lahar.controllers.podgc import add_pod_gc

        add_pod_gc(mgr, options)
    return mgr


async def run_builtin_controllers(
    client: lightkube.AsyncClient,
    *,
    informers: InformerFactory | None = None,
    options: ControllerOptions | None = None,
) -> None:
    """Run the built-in controllers until cancelled (or the Lease is lost: then
    :class:`~lahar.kube.leaderelection.LeadershipLost` is raised and the caller
    should exit, as every controller-runtime manager does)."""
    await build_manager(client, informers=informers, options=options).run()
