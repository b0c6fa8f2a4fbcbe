"""``lahar node local``: one node whose pods run as real local processes.

The agent registers a Node with this machine's CPUs and memory (or what it is told),
keeps it alive, and runs every pod bound to it through a
:class:`~lahar.node.local.pods.PodWorker`. Around the workers it keeps what they share:
the pod network (a bridge, NAT, a namespace per pod), informers for Pods, Services,
ConfigMaps and Secrets (a pod's env, volumes and /etc/hosts come from them), the
/etc/hosts of every pod kept current as Services and their pods change, the log
provider behind ``kubectl logs``, and Events.

It starts by cleaning up: whatever an earlier agent left (pod directories, namespaces,
veths, processes) for pods that no longer exist on this node is removed; the runs of
pods that still exist are adopted by their workers. It stops by stopping every
container (briefly), removing the pod network, and keeping the pods' directories (their
logs) for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lightkube

from lahar.kube.events import EventRecorder
from lahar.kube.factory import InformerFactory
from lahar.kube.informer import EventHandler, Informer
from lahar.kube.resource import Resource
from lahar.node import registration as reg
from lahar.node.heartbeat import Heartbeater
from lahar.node.local import hosts, runtime, sandbox
from lahar.node.local.context import NodeContext, image_env
from lahar.node.local.env import Lookups
from lahar.node.local.logs import ContainerLogs, PodLogs
from lahar.node.local.network import PodNetwork, PodNetworkError, check_privileges
from lahar.node.local.pods import PodWorker
from lahar.node.logserver import LogServer
from lahar.node.writer import WriteQueue

if TYPE_CHECKING:
    from lahar.apiserver.logs import LogRouter

log = logging.getLogger("lahar.node.local")
Obj = dict[str, Any]

SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
NODE_TYPE = "local"
KUBELET_VERSION = "v1.32.0-lahar-local"
TERMINAL = ("Succeeded", "Failed")


class LocalNodeError(RuntimeError):
    """The node cannot run here (missing privileges, a clashing network, ...)."""


def default_node_name() -> str:
    name = re.sub(r"[^a-z0-9.-]", "-", socket.gethostname().lower()).strip("-.")
    return name or "lahar-local"


def machine_memory() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass
class LocalOptions:
    state_dir: Path
    node_name: str = field(default_factory=default_node_name)
    cpu: str | None = None  # default: this machine's CPUs
    memory: str | None = None  # default: this machine's memory
    max_pods: int = 110
    bridge: str = "lahar0"
    cidr: str = "10.244.0.0/16"
    owner_tag: str | None = None  # what this node's network pieces are tagged with
    path_prepend: list[str] | None = None  # default: the running Python's bin dir
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    heartbeat: float = 10.0
    lease_duration: int = 40
    log_host: str = "127.0.0.1"
    log_port: int = 0
    stop_grace: float = 5.0

    def tag(self) -> str:
        """The owner tag of the network pieces: ``lahar`` on the default bridge, else
        derived from the bridge, so two agents on two bridges never clean up each
        other's pods."""
        if self.owner_tag:
            return self.owner_tag
        if self.bridge == "lahar0":
            return "lahar"
        return (re.sub(r"[^A-Za-z0-9_]", "_", self.bridge) or "lahar")[:12]

    def capacity(self) -> dict[str, str]:
        return {
            "cpu": self.cpu or str(os.cpu_count() or 1),
            "memory": self.memory or str(machine_memory()),
            "pods": str(self.max_pods),
            "ephemeral-storage": str(shutil.disk_usage(self.state_dir.parent).total),
        }


class LocalNode:
    def __init__(
        self,
        client: lightkube.AsyncClient,
        options: LocalOptions,
        *,
        informers: InformerFactory | None = None,
        logs: LogRouter | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.router = logs
        self._own_factory = informers is None
        self.factory = informers or InformerFactory(client)
        self.pod_informer: Informer = self.factory.informer(reg.PODS)
        self.svc_informer: Informer = self.factory.informer(SERVICES)
        self.cm_informer: Informer = self.factory.informer(CONFIGMAPS)
        self.secret_informer: Informer = self.factory.informer(SECRETS)
        self.writer = WriteQueue(concurrency=8)
        self.events = EventRecorder(client, "kubelet", host=options.node_name)
        self.heartbeats = Heartbeater(
            client, lease_period=options.heartbeat, lease_duration=options.lease_duration
        )
        self.network: PodNetwork | None = None
        self.workers: dict[str, PodWorker] = {}  # by pod uid
        self.logs = ContainerLogs(self._locate)
        self.log_server: LogServer | None = None
        self._handlers: list[tuple[Informer, EventHandler]] = []
        self._hosts_timer: asyncio.TimerHandle | None = None
        self._closing = False
        self.ctx: NodeContext | None = None

    # -- lifecycle -----------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self.start()
            await asyncio.Event().wait()
        finally:
            await asyncio.shield(self.close())

    async def start(self) -> None:
        opts = self.options
        problem = check_privileges()
        if problem:
            raise LocalNodeError(
                f"the local node needs privileges to give each pod its own network: {problem}"
            )
        opts.state_dir.mkdir(parents=True, exist_ok=True)
        self.network = PodNetwork(
            opts.state_dir, bridge=opts.bridge, cidr=opts.cidr, owner_tag=opts.tag()
        )
        try:
            await asyncio.to_thread(self.network.ensure)
        except PodNetworkError as exc:
            raise LocalNodeError(str(exc)) from exc
        self.ctx = NodeContext(
            client=self.client,
            writer=self.writer,
            events=self.events,
            network=self.network,
            node_name=opts.node_name,
            host_ip=self.network.gateway,
            root=opts.state_dir / "pods",
            base_env=image_env(opts.path_prepend, extra=opts.env),
            lookups=Lookups(configmap=self._configmap, secret=self._secret),
            pods=self.pod_informer.cache,
            hosts_for=self._hosts_for,
            paths_in_use=self._paths_in_use,
            keep_paths=sandbox.kept_under_tmp([sys.prefix, *(opts.path_prepend or [])]),
            allocatable=opts.capacity(),
            stop_grace=opts.stop_grace,
        )
        self.ctx.root.mkdir(parents=True, exist_ok=True)
        if self.router is None:
            self.log_server = LogServer(self.logs, host=opts.log_host, port=opts.log_port)
            await self.log_server.start()
        self.writer.start()
        await self._register()
        for inf in (self.svc_informer, self.cm_informer, self.secret_informer, self.pod_informer):
            inf.start()
        for inf in (self.svc_informer, self.cm_informer, self.secret_informer, self.pod_informer):
            await inf.wait_for_sync()
        await self._clean_orphans()
        self._handle(self.pod_informer, self._pod_added, self._pod_updated, self._pod_gone)
        refresh = self._schedule_hosts
        self._handle(
            self.svc_informer, lambda _o: refresh(), lambda _o, _n: refresh(), lambda _o: refresh()
        )
        self.heartbeats.start()
        log.info("local node %s is up (pods on %s)", opts.node_name, opts.cidr)

    async def close(self) -> None:
        self._closing = True
        for inf, handler in self._handlers:
            inf.remove_handler(handler)
        self._handlers.clear()
        await asyncio.gather(
            *(w.stop_for_agent() for w in self.workers.values()), return_exceptions=True
        )
        self.workers.clear()
        await self.heartbeats.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_idle(), timeout=5)
        await self.writer.stop()
        await self.events.close()
        if self._own_factory:
            await self.factory.stop()
        if self.router is not None:
            self.router.unregister(self.options.node_name)
        if self.log_server is not None:
            await self.log_server.stop()
        if self.network is not None:
            await asyncio.to_thread(self.network.teardown)

    async def _register(self) -> None:
        opts = self.options
        assert self.network is not None
        spec = reg.NodeSpec(
            name=opts.node_name,
            capacity=opts.capacity(),
            internal_ip=self.network.gateway,
            kubelet_version=KUBELET_VERSION,
            labels={reg.LABEL_NODE_TYPE: NODE_TYPE, **opts.labels},
            pod_cidr=str(self.network.network),
            provider_id=f"lahar://{opts.node_name}",
            log_port=self.log_server.port if self.log_server is not None else None,
            runtime_version="lahar-local://0.1.0",
            os_image="lahar local node (pods as local processes)",
        )
        node, lease = await reg.register(self.client, spec, lease_duration=opts.lease_duration)
        if self.router is not None:
            self.router.register(opts.node_name, self.logs)
        self.heartbeats.add(opts.node_name, node["metadata"].get("uid"), lease=lease)

    # -- pods -----------------------------------------------------------------------------

    def _mine(self, pod: Obj) -> bool:
        return (pod.get("spec") or {}).get("nodeName") == self.options.node_name

    def _pod_added(self, pod: Obj) -> None:
        self._pod_seen(pod)
        if _endpoint_view(pod)[0]:
            self._schedule_hosts()

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        self._pod_seen(new)
        if _endpoint_view(old) != _endpoint_view(new):
            self._schedule_hosts()  # an address behind some Service may have changed

    def _pod_seen(self, pod: Obj) -> None:
        if self._closing or not self._mine(pod):
            return
        uid = pod["metadata"]["uid"]
        worker = self.workers.get(uid)
        if worker is not None:
            worker.update(pod)
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in TERMINAL and not (self.ctx and self.ctx.pod_dir(uid).exists()):
            if pod["metadata"].get("deletionTimestamp"):
                asyncio.get_running_loop().create_task(self._confirm_gone(pod))
            return
        assert self.ctx is not None
        worker = PodWorker(self.ctx, pod)
        self.workers[uid] = worker
        worker.update(pod)
        worker.start()
        assert worker.task is not None
        worker.task.add_done_callback(lambda _t, uid=uid: self._worker_done(uid))
        self._schedule_hosts()

    def _worker_done(self, uid: str) -> None:
        worker = self.workers.get(uid)
        if worker is not None and worker.deleting.is_set() and not worker.agent_stopping:
            self.workers.pop(uid, None)

    def _pod_gone(self, pod: Obj) -> None:
        worker = self.workers.get(pod["metadata"]["uid"])
        if worker is not None:
            worker.pod = dict(worker.pod)
            worker.pod["metadata"] = dict(worker.pod["metadata"], deletionGracePeriodSeconds=0)
            worker.deleting.set()
        self._schedule_hosts()

    async def _confirm_gone(self, pod: Obj) -> None:
        from lahar.kube import rest

        md = pod["metadata"]
        with contextlib.suppress(rest.ApiError):
            await rest.request(
                self.client,
                "DELETE",
                reg.PODS.path(md["namespace"], md["name"]),
                body={"gracePeriodSeconds": 0, "preconditions": {"uid": md["uid"]}},
            )

    async def _clean_orphans(self) -> None:
        """Remove what an earlier agent left for pods that are no longer here."""
        assert self.ctx is not None and self.network is not None
        live = {p["metadata"]["uid"] for p in self.pod_informer.cache if self._mine(p)}
        for pod_dir in self.ctx.root.iterdir():
            if pod_dir.name not in live:
                runtime.kill_everything(pod_dir)
                shutil.rmtree(pod_dir, ignore_errors=True)
                log.info("removed the leftovers of pod %s", pod_dir.name)
        removed = await asyncio.to_thread(self.network.cleanup_orphans, live)
        if removed:
            log.info("removed leftover network pieces: %s", ", ".join(removed))

    # -- what workers look up -----------------------------------------------------------

    def _configmap(self, namespace: str, name: str) -> Obj | None:
        return self.cm_informer.cache.get(name, namespace)

    def _secret(self, namespace: str, name: str) -> Obj | None:
        return self.secret_informer.cache.get(name, namespace)

    def _hosts_for(self, pod: Obj, pod_ip: str) -> str:
        return hosts.hosts_file(
            pod,
            services=list(self.svc_informer.cache),
            pods=list(self.pod_informer.cache),
            pod_ip=pod_ip,
        )

    def _paths_in_use(self, exclude_uid: str) -> set[str]:
        paths: set[str] = set()
        for uid, worker in self.workers.items():
            if uid == exclude_uid:
                continue
            spec = worker.pod.get("spec") or {}
            for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
                paths.update(m.get("mountPath", "") for m in c.get("volumeMounts") or ())
        return paths

    def _schedule_hosts(self) -> None:
        if self._hosts_timer is None and not self._closing:
            self._hosts_timer = asyncio.get_running_loop().call_later(0.1, self._refresh_hosts)

    def _refresh_hosts(self) -> None:
        self._hosts_timer = None
        for worker in list(self.workers.values()):
            worker.refresh_hosts()

    def _locate(self, namespace: str, name: str) -> PodLogs | None:
        pod = self.pod_informer.cache.get(name, namespace)
        if pod is None or not self._mine(pod) or self.ctx is None:
            return None
        uid = pod["metadata"]["uid"]
        worker = self.workers.get(uid)
        spec = pod.get("spec") or {}
        names = [c["name"] for c in (spec.get("initContainers") or []) + spec.get("containers", [])]
        return PodLogs(
            pod_dir=self.ctx.pod_dir(uid),
            containers=tuple(names),
            restart_counts=worker.restart_counts() if worker else {},
            is_running=(lambda c, w=worker: bool(w and w.running_containers().get(c))),
        )

    def _handle(self, inf: Informer, on_add: Any, on_update: Any, on_delete: Any) -> None:
        handler = inf.add_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)
        self._handlers.append((inf, handler))


def _endpoint_view(pod: Obj) -> tuple[Any, ...]:
    """What of a pod the /etc/hosts files depend on."""
    st = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or ()
    )
    return (
        st.get("podIP"),
        st.get("phase"),
        ready,
        bool(pod["metadata"].get("deletionTimestamp")),
        tuple(sorted((pod["metadata"].get("labels") or {}).items())),
    )


async def run_local_node(
    client: lightkube.AsyncClient,
    *,
    options: LocalOptions,
    informers: InformerFactory | None = None,
    logs: LogRouter | None = None,
) -> None:
    """Run the local node until cancelled."""
    await LocalNode(client, options, informers=informers, logs=logs).run()
