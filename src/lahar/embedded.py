"""Assembling the embedded one-machine cluster behind ``lahar up``.

The API server runs in this process and every other component (built-in
controllers, scheduler, Volcano controllers, Ray operator, node agents) runs in
the same event loop, talking to the server through the in-process transport of the
client seam: the same code that runs against a real cluster, minus the sockets.
This module installs lahar's CRDs, builds the admission chain, and starts and stops
the components around the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from lahar.apiserver import crds
from lahar.apiserver.admission import AdmissionChain
from lahar.apiserver.meta import meta
from lahar.apiserver.objects import WriteOptions
from lahar.apiserver.state import ServerState

log = logging.getLogger("lahar.embedded")
# The CRDs are large (full pod template schemas): libyaml parses them ~10x faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A component: runs until cancelled, given the in-process client and shared informers.
Component = Callable[[Any, Any], Awaitable[None]]


def crd_manifests() -> list[dict[str, Any]]:
    """lahar's CRDs as shipped in the package (the same files as ``deploy/crds``)."""
    folder = resources.files("lahar") / "manifests" / "crds"
    docs: list[dict[str, Any]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            docs.extend(d for d in yaml.load_all(entry.read_text(), Loader=_LOADER) if d)
    return docs


def install_crds(state: ServerState) -> int:
    """Create or update lahar's CRDs in the store; returns how many were installed."""
    rt = state.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert rt is not None
    opts = WriteOptions(field_manager="lahar-up")
    count = 0
    for crd in crd_manifests():
        name = meta(crd)["name"]
        live = state.store.get(crds.CRD_KEY, "", name)
        if live is None:
            result = state.objects.create(rt, "", crd, opts)
        else:
            desired = {**live, "spec": crd["spec"]}
            result = state.objects.update(rt, "", name, desired, opts)
        crds.established(state, result.object)
        count += 1
    return count


def admission_chain() -> AdmissionChain:
    """The admission plugins a cluster with lahar installed runs: KubeRay's validation
    and Volcano's (a real cluster gets the same rules from lahar's webhooks). Volcano's
    read the store, so :func:`install_volcano_admission` adds them once it exists."""
    from lahar.kuberay.admission import KubeRayAdmission

    return AdmissionChain([KubeRayAdmission()])


def install_volcano_admission(state: ServerState) -> None:
    from lahar.volcano.embedded import install_admission

    install_admission(state)


def default_components(options: UpOptions | None = None) -> list[tuple[str, Component]]:
    """The components ``lahar up`` runs next to the API server, in start order."""
    from lahar.controllers import run_builtin_controllers
    from lahar.kuberay.operator import OperatorOptions, run_operator
    from lahar.scheduler.daemon import SchedulerOptions, run_scheduler
    from lahar.volcano.controllers.manager import run_volcano_controllers

    up = options or UpOptions()
    scheduler_options = SchedulerOptions(
        schedule_period=up.schedule_period,
        scheduler_conf=up.scheduler_conf,
        health_port=None,
        queue_counts=False,  # the queue controller writes them here
    )

    # The Ray operator creates PodGroups so lahar's own scheduler gang-schedules Ray pods.
    # On one machine a RayJob's status poll costs one loopback request: every second
    # instead of KubeRay's three, so a finished job is seen finished sooner.
    operator_options = OperatorOptions(batch_scheduler="volcano", health_port=None, job_requeue=1.0)

    async def operator(client: Any, informers: Any) -> None:
        await run_operator(client, informers=informers, options=operator_options)

    async def scheduler(client: Any, informers: Any) -> None:
        await run_scheduler(client, informers=informers, options=scheduler_options)

    async def kube_controllers(client: Any, informers: Any) -> None:
        await run_builtin_controllers(client, informers=informers)

    async def volcano_controllers(client: Any, informers: Any) -> None:
        await run_volcano_controllers(client, informers=informers)

    components: list[tuple[str, Component]] = [
        ("kube-controllers", kube_controllers),
        ("volcano-controllers", volcano_controllers),
        ("scheduler", scheduler),
        ("operator", operator),
    ]
    if up.sim_nodes > 0:
        from lahar.node.sim import SimOptions, run_sim_nodes

        # Kept across restarts: `lahar up` on the same data dir finds its nodes and pods.
        sim_options = SimOptions(
            count=up.sim_nodes,
            cpu=up.sim_node_cpu,
            memory=up.sim_node_memory,
            gpu=up.sim_node_gpu,
            keep_nodes=True,
        )

        async def sim_nodes(client: Any, informers: Any) -> None:
            await run_sim_nodes(client, options=sim_options, informers=informers, logs=up.logs)

        components.append(("sim-nodes", sim_nodes))
    if up.local_node is not None:
        from lahar.node.local.agent import run_local_node

        local_options = up.local_node

        async def local_node(client: Any, informers: Any) -> None:
            await run_local_node(client, options=local_options, informers=informers, logs=up.logs)

        components.append(("local-node", local_node))
    if up.demo is not None:
        from lahar.demo import run_demo

        demo_file = up.demo

        async def demo(client: Any, informers: Any) -> None:
            await run_demo(client, demo_file, kubeconfig=up.kubeconfig)

        components.append(("demo", demo))
    return components


@dataclass
class UpOptions:
    """The knobs of ``lahar up`` that reach its components."""

    schedule_period: float = 1.0
    scheduler_conf: str | None = None
    sim_nodes: int = 0
    sim_node_cpu: str = "8"
    sim_node_memory: str = "32Gi"
    sim_node_gpu: int = 0
    logs: Any = None  # the API server's pods/log router, for in-process node agents
    local_node: Any = None  # LocalOptions of the local node, or None for none
    demo: Any = None  # a manifest file to apply and follow to its end (``--demo``)
    kubeconfig: Any = None  # shown to the user by the demo


@dataclass
class EmbeddedOptions:
    """What ``lahar up`` runs besides the API server."""

    components: list[tuple[str, Component]] = field(default_factory=default_components)


async def run(server: Any, options: EmbeddedOptions) -> None:
    """Serve until SIGINT/SIGTERM (or the server stops), with every component alongside."""
    from lahar.kube import client as kclient
    from lahar.kube.factory import InformerFactory

    serving = asyncio.create_task(server.serve(handle_signals=False), name="apiserver")
    while not server.state.ready and not serving.done():
        await asyncio.sleep(0.01)
    client = kclient.in_process(server.app, token=server.creds.token, field_manager="lahar")
    informers = InformerFactory(client)
    tasks: list[asyncio.Task[None]] = []
    for name, component in options.components:
        tasks.append(asyncio.create_task(_supervise(name, component, client, informers), name=name))
    stopping = asyncio.Event()
    if threading.current_thread() is threading.main_thread():
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopping.set)
    waiter = asyncio.create_task(stopping.wait())
    try:
        await asyncio.wait({serving, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Components first (they would otherwise see the server vanish under them), then
        # the informers and the client, then the server.
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await informers.stop()
        with contextlib.suppress(Exception):
            await client.close()
        waiter.cancel()
        server.shutdown()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await serving


async def _supervise(name: str, component: Component, client: Any, informers: Any) -> None:
    """Run a component; if it fails, log and restart it after a pause (like a Deployment)."""
    delay = 1.0
    while True:
        try:
            await component(client, informers)
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("component %s failed; restarting in %.0f s", name, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)
