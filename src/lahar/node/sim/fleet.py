"""A fleet of simulated nodes, from registration to removal: ``run_sim_nodes``.

This is the daemon around :class:`~lahar.node.sim.pods.SimPods`. It registers the
nodes (and their Leases), keeps them alive with one :class:`Heartbeater`, feeds the
pod engine from the shared pod informer (one watch over all pods, looked up through
its node-name index: a field selector cannot say "any of these N nodes") and watches
the Nodes for the ``lahar.dev/sim-down`` annotation. Logs are served in-process when
the embedded server's ``LogRouter`` is given, otherwise from a loopback endpoint whose
port every Node advertises. Cancelling the run removes the nodes (unless
``keep_nodes``): their Leases go with them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import lightkube

from lahar.kube.factory import InformerFactory
from lahar.kube.informer import EventHandler, Informer
from lahar.node import admission
from lahar.node import registration as reg
from lahar.node.heartbeat import Heartbeater
from lahar.node.logserver import LogServer
from lahar.node.sim.addresses import SimNode, node_ips
from lahar.node.sim.logs import SimLogs
from lahar.node.sim.options import (
    ANN_DOWN,
    KUBELET_VERSION,
    NODE_TYPE,
    RUNTIME,
    SimOptions,
)
from lahar.node.sim.pods import SimPods
from lahar.node.writer import WriteQueue

if TYPE_CHECKING:
    from lahar.apiserver.logs import LogRouter

log = logging.getLogger("lahar.node.sim")
Obj = dict[str, Any]


def _is_down(node: Obj) -> bool:
    return (node["metadata"].get("annotations") or {}).get(ANN_DOWN) == "true"


class SimFleet:
    """``options.count`` simulated nodes on ``client``. :meth:`start`, then :meth:`close`
    (or :meth:`run` for both, until cancelled)."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        options: SimOptions,
        *,
        informers: InformerFactory | None = None,
        logs: LogRouter | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.logs = logs  # the embedded server's LogRouter, or None
        self._own_factory = informers is None
        self.factory = informers or InformerFactory(client)
        self.writer = WriteQueue(concurrency=options.concurrency)
        self.heartbeats = Heartbeater(
            client,
            lease_period=options.heartbeat,
            lease_duration=options.lease_duration,
            status_period=options.status_period,
            concurrency=min(options.concurrency, 16),
            on_gone=self._node_gone,
        )
        self.nodes: dict[str, SimNode] = {}
        self.specs: dict[str, reg.NodeSpec] = {}
        self.log_server: LogServer | None = None
        self.pod_informer: Informer = self.factory.informer(reg.PODS)
        self.node_informer: Informer = self.factory.informer(reg.NODES)
        self.pods = SimPods(
            client,
            self.pod_informer.cache,
            self.writer,
            self.nodes,
            ready_delay=options.ready_delay,
            stop_delay=options.stop_delay,
            is_down=self.heartbeats.is_down,
            admission=options.admission,
        )
        self.pod_logs = SimLogs(self.pods)
        self._handlers: list[tuple[Informer, EventHandler]] = []
        self._closing = False

    # -- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        """Start, then run until cancelled; clean up either way."""
        try:
            await self.start()
            await asyncio.Event().wait()
        finally:
            await asyncio.shield(self.close())

    async def start(self) -> None:
        opts = self.options
        if self.logs is None:
            self.log_server = LogServer(self.pod_logs, host=opts.log_host, port=opts.log_port)
            await self.log_server.start()
        self.writer.start()
        for i, name in enumerate(opts.node_names()):
            ip, cidr = node_ips(i)
            self.specs[name] = self._spec(name, ip, cidr)
        registered = await reg.bounded(
            [lambda i=i, s=s: self._register(i, s) for i, s in enumerate(self.specs.values())],
            opts.concurrency,
        )
        errors = [e for e in registered if e is not None]
        if errors:
            raise RuntimeError(
                f"registering {len(errors)} of {len(self.specs)} simulated nodes failed: {errors[0]}"
            ) from errors[0]
        self._handle(self.pod_informer, self.pods.observe, self.pods.on_update, self.pods.forget)
        self._handle(
            self.node_informer,
            self._node_seen,
            lambda old, new: self._node_seen(new),
            self._node_deleted,
        )
        if self._own_factory:
            self.factory.start()
        else:
            self.pod_informer.start()
            self.node_informer.start()
        self.heartbeats.start()
        log.info("%d simulated nodes registered", len(self.nodes))

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        ok = await self.pod_informer.wait_for_sync(timeout)
        return ok and await self.node_informer.wait_for_sync(timeout)

    async def close(self) -> None:
        """Stop everything; remove the nodes unless ``keep_nodes``."""
        self._closing = True
        await self.heartbeats.stop()
        for inf, handler in self._handlers:
            inf.remove_handler(handler)
        self._handlers.clear()
        await self.writer.stop()
        if self._own_factory:
            await self.factory.stop()
        for name in self.nodes:
            if self.logs is not None:
                self.logs.unregister(name)
        if not self.options.keep_nodes and self.nodes:
            await self._remove_nodes(list(self.nodes))
        for name in list(self.nodes):
            self.pods.forget_node(name)
        self.nodes.clear()
        if self.log_server is not None:
            await self.log_server.stop()
            self.log_server = None

    async def _remove_nodes(self, names: list[str], attempts: int = 3) -> None:
        """Delete the Nodes and their Leases, retrying the ones that failed (a connection
        dropped by the server, say) a couple of times."""
        for attempt in range(attempts):
            results = await reg.bounded(
                [lambda n=n: reg.unregister(self.client, n) for n in names],
                self.options.concurrency,
            )
            failed = [(n, e) for n, e in zip(names, results, strict=True) if e is not None]
            if not failed:
                return
            names = [n for n, _ in failed]
            if attempt == attempts - 1:
                log.warning("removing %d simulated nodes failed: %s", len(failed), failed[0][1])
            else:
                await asyncio.sleep(0.2 * (attempt + 1))

    # -- nodes ----------------------------------------------------------------------------

    def _spec(self, name: str, ip: str, cidr: str) -> reg.NodeSpec:
        opts = self.options
        labels = {
            reg.LABEL_INSTANCE_TYPE: opts.instance_type_label(),
            reg.LABEL_NODE_TYPE: NODE_TYPE,
            **opts.labels,
        }
        return reg.NodeSpec(
            name=name,
            capacity=opts.capacity(),
            internal_ip=ip,
            kubelet_version=KUBELET_VERSION,
            labels=labels,
            annotations={"node.alpha.kubernetes.io/ttl": "0"},
            taints=list(opts.taints),
            pod_cidr=cidr,
            provider_id=f"{RUNTIME}://{name}",
            log_port=self.log_server.port if self.log_server is not None else None,
            runtime_version=f"{RUNTIME}://0.1.0",
            os_image="lahar simulated node",
        )

    async def _register(self, index: int, spec: reg.NodeSpec) -> None:
        node, lease = await reg.register(
            self.client, spec, lease_duration=self.options.lease_duration
        )
        cidr = (node.get("spec") or {}).get("podCIDR") or spec.pod_cidr or ""
        allocatable = admission.allocatable(node["status"].get("allocatable") or spec.capacity)
        self.nodes[spec.name] = SimNode(spec.name, index, spec.internal_ip, cidr, allocatable)
        if self.logs is not None:
            self.logs.register(spec.name, self.pod_logs)
        self.heartbeats.add(
            spec.name, node["metadata"].get("uid"), lease=lease, down=_is_down(node)
        )

    def _node_seen(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if name not in self.nodes or self._closing:
            return
        down = _is_down(node)
        if self.heartbeats.set_down(name, down):
            log.info("simulated node %s is %s", name, "down" if down else "back up")
            if not down:
                self.pods.resync_node(name)

    def _node_deleted(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if name in self.nodes and not self._closing:
            log.warning("simulated node %s was deleted; it is no longer simulated", name)
            self.heartbeats.remove(name)
            self._node_gone(name)

    def _node_gone(self, name: str) -> None:
        if name in self.nodes:
            self.pods.forget_node(name)
            del self.nodes[name]
            if self.logs is not None:
                self.logs.unregister(name)

    def _handle(self, inf: Informer, on_add: Any, on_update: Any, on_delete: Any) -> None:
        handler = inf.add_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)
        self._handlers.append((inf, handler))


async def run_sim_nodes(
    client: lightkube.AsyncClient,
    *,
    options: SimOptions,
    informers: InformerFactory | None = None,
    logs: LogRouter | None = None,
) -> None:
    """Run ``options.count`` simulated nodes until cancelled, then remove them (unless
    ``options.keep_nodes``).

    ``informers`` is the process's shared informer factory (its pod and node informers
    are used; they are started if they are not); ``logs`` is the embedded API server's
    ``LogRouter`` (``server.state.logs``), to serve pod logs in-process. Without it the
    logs are served on a loopback port that the Nodes advertise.
    """
    await SimFleet(client, options, informers=informers, logs=logs).run()
