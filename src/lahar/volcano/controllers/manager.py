"""Wiring the Volcano controllers onto a manager: ``lahar controllers`` and ``lahar up``.

:func:`setup` adds the podgroup, queue and vcjob controllers to a
:class:`~lahar.kube.manager.Manager` (their caches come from the manager's informer
factory, so the scheduler and the operator share them in one process);
:func:`run_volcano_controllers` is the one-call form the embedded cluster uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import lightkube

from lahar.kube.factory import InformerFactory
from lahar.kube.manager import Manager
from lahar.volcano import constants as c
from lahar.volcano.controllers.common import (
    NAMESPACES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    VCJOBS,
)
from lahar.volcano.controllers.job import JobController
from lahar.volcano.controllers.podgroup import PodGroupController
from lahar.volcano.controllers.queue import QueueController

COMPONENT = "vc-controller-manager"


@dataclass
class ControllerOptions:
    """What ``lahar controllers`` can tune (Volcano's flags where it has one)."""

    workers: int = 3  # Volcano's --worker-threads default
    scheduler_names: tuple[str, ...] = (c.SCHEDULER_NAME,)
    enable_podgroup: bool = True
    enable_queue: bool = True
    enable_job: bool = True
    inherit_owner_annotations: bool = True
    ensure_default_queues: bool = True
    write_queue_counts: bool = True
    fill_queue_parent: bool = True
    expectation_ttl: float = 30.0


@dataclass
class VolcanoControllers:
    podgroup: PodGroupController | None
    queue: QueueController | None
    job: JobController | None


def setup(mgr: Manager, options: ControllerOptions | None = None) -> VolcanoControllers:
    """Add the Volcano controllers to ``mgr`` (call before ``mgr.run()``)."""
    opts = options or ControllerOptions()
    recorder = mgr.recorder(COMPONENT)
    informers = mgr.informers
    out = VolcanoControllers(None, None, None)

    if opts.enable_podgroup:
        pgc = PodGroupController(
            mgr.client,
            informers,
            recorder,
            scheduler_names=opts.scheduler_names,
            inherit_owner_annotations=opts.inherit_owner_annotations,
        )
        informers.informer(NAMESPACES)
        mgr.controller(
            "volcano-podgroup", pgc.reconcile, max_concurrent_reconciles=opts.workers
        ).for_(PODS, predicate=pgc.predicate)
        out.podgroup = pgc

    if opts.enable_queue:
        qc = QueueController(
            mgr.client,
            informers,
            recorder,
            registry=mgr.metrics.registry,
            ensure_default_queues=opts.ensure_default_queues,
            write_counts=opts.write_queue_counts,
            fill_parent=opts.fill_queue_parent,
        )
        ctrl = (
            mgr.controller("volcano-queue", qc.reconcile, max_concurrent_reconciles=opts.workers)
            .for_(QUEUES)
            .watches(QUEUES, qc.children_of)
            .watches(PODGROUPS, qc.queue_of_podgroup)
        )
        for req in qc.initial_requests():
            ctrl.queue.add(req)
        out.queue = qc

    if opts.enable_job:
        jc = JobController(mgr.client, informers, recorder, expectation_ttl=opts.expectation_ttl)
        informers.informer(PRIORITY_CLASSES)
        informers.informer(PODS).add_handler(
            on_add=jc.on_pod_add, on_update=jc.on_pod_update, on_delete=jc.on_pod_delete
        )
        informers.informer(PODGROUPS).add_handler(on_delete=jc.on_podgroup_delete)
        (
            mgr.controller("volcano-job", jc.reconcile, max_concurrent_reconciles=opts.workers)
            .for_(VCJOBS)
            .owns(PODS)
            .owns(PODGROUPS)
        )
        out.job = jc
    return out


async def run_volcano_controllers(
    client: lightkube.AsyncClient,
    *,
    informers: InformerFactory | None = None,
    options: ControllerOptions | None = None,
) -> None:
    """Run the Volcano controllers until cancelled (no leader election, no probe port:
    the embedded cluster runs exactly one of them in its own process)."""
    mgr = Manager(client, name="lahar-volcano", informers=informers, health_port=None)
    setup(mgr, options)
    await mgr.run()
