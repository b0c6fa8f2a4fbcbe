"""The node lifecycle controller: notice dead nodes, taint them, evict their pods.

Node agents heartbeat by renewing a Lease in ``kube-node-lease`` (named after the
node) and by posting the node's ``Ready`` condition. Two controllers act on that:

* **node health** (``node-lifecycle-controller``): a node whose Lease and Ready
  heartbeat have not changed for the grace period (40 s by default; the startup
  grace for a node that never posted Ready) gets every condition set to ``Unknown``
  (reason ``NodeStatusUnknown``, "Kubelet stopped posting node status."). Staleness
  is judged on this controller's own clock, from when it last *saw* the heartbeat
  change, never by comparing another machine's timestamps to ours; its pods' Ready
  conditions are set to False. The node's
  taints then follow its Ready status: ``Unknown`` gives
  ``node.kubernetes.io/unreachable`` and ``False`` gives ``node.kubernetes.io/not-ready``
  (each as NoSchedule and NoExecute); ``True`` removes them.
* **taint-based eviction** (``taint-eviction-controller``): a pod on a node with
  NoExecute taints is deleted at once if it does not tolerate one of them, else once
  its smallest matching ``tolerationSeconds`` has passed since the taint was added
  (pods get 300 s for these two taints by default). It is marked with a
  ``DisruptionTarget`` condition first, as upstream does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

import lightkube

from lahar.controllers import taints as tt
from lahar.controllers.common import (
    LEASES,
    NODE_LEASE_NAMESPACE,
    NODES,
    PODS,
    Obj,
    condition,
    delete,
    format_time,
    is_deleting,
    is_terminal,
    parse_time,
)
from lahar.controllers.options import ControllerOptions
from lahar.kube import rest
from lahar.kube.cache import BY_NODE_NAME
from lahar.kube.manager import Manager
from lahar.kube.reconcile import Request, Result

log = logging.getLogger("lahar.controllers.nodelifecycle")
HEALTH = "node-lifecycle-controller"
EVICTION = "taint-eviction-controller"
CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
MSG_STOPPED = "Kubelet stopped posting node status."
MSG_NEVER = "Kubelet never posted node status."


@dataclass
class _Seen:
    """A node's heartbeat as last observed, and when (on our monotonic clock)."""

    beat: tuple[str | None, str | None]
    at: float


class NodeLifecycleController:
    def __init__(self, mgr: Manager, options: ControllerOptions) -> None:
        self.client: lightkube.AsyncClient = mgr.client
        self.options = options
        self.nodes = mgr.cache(NODES)
        self.leases = mgr.cache(LEASES, namespace=NODE_LEASE_NAMESPACE)
        self.pods = mgr.cache(PODS)
        self.recorder = mgr.recorder(HEALTH)
        self.seen: dict[str, _Seen] = {}
        mgr.controller(HEALTH, self.reconcile_health, max_concurrent_reconciles=2).for_(
            NODES
        ).watches(
            LEASES,
            lambda lease: (Request("", lease["metadata"]["name"]),),
            namespace=NODE_LEASE_NAMESPACE,
        )
        mgr.controller(EVICTION, self.reconcile_eviction, max_concurrent_reconciles=2).for_(
            NODES
        ).watches(PODS, _node_of_pod)

    # -- health ------------------------------------------------------------------------

    def _heartbeat(self, node: Obj) -> tuple[str | None, str | None]:
        name = node["metadata"]["name"]
        lease = self.leases.get(name, NODE_LEASE_NAMESPACE)
        renew = ((lease or {}).get("spec") or {}).get("renewTime")
        ready = condition(node, "Ready")
        return renew, (ready or {}).get("lastHeartbeatTime")

    async def reconcile_health(self, req: Request) -> Result | None:
        try:
            return await self._health(req)
        except rest.ApiError as exc:
            if rest.is_status(exc, 409):  # the node changed meanwhile: look again
                return Result(requeue=True)
            raise

    async def _health(self, req: Request) -> Result | None:
        node = self.nodes.get(req.name)
        if node is None:
            self.seen.pop(req.name, None)
            return None
        now = time.monotonic()
        beat = self._heartbeat(node)
        seen = self.seen.get(req.name)
        if seen is None or seen.beat != beat:
            seen = self.seen[req.name] = _Seen(beat, now)
        ready = condition(node, "Ready")
        grace = (
            self.options.node_monitor_grace_period
            if ready is not None
            else self.options.node_startup_grace_period
        )
        stale = now - seen.at > grace
        if stale and (ready is None or ready.get("status") != "Unknown"):
            node = await self._mark_unknown(node)
            ready = condition(node, "Ready")
            await self._mark_pods_not_ready(req.name)
        await self._sync_taints(node, (ready or {}).get("status"))
        if stale:
            return Result(requeue_after=self.options.node_monitor_period)
        return Result(requeue_after=max(grace - (now - seen.at), 0.0) + 0.01)

    async def _mark_unknown(self, node: Obj) -> Obj:
        stamp = format_time(self.options.clock())
        status = dict(node.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or ()]
        by_type = {c.get("type"): c for c in conditions}
        for kind in CONDITIONS:
            cond = by_type.get(kind)
            if cond is None:
                if kind == "Ready":
                    conditions.append(
                        {
                            "type": kind,
                            "status": "Unknown",
                            "reason": "NodeStatusNeverUpdated",
                            "message": MSG_NEVER,
                            "lastHeartbeatTime": stamp,
                            "lastTransitionTime": stamp,
                        }
                    )
                continue
            if cond.get("status") != "Unknown":
                cond.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message=MSG_STOPPED,
                    lastTransitionTime=stamp,
                )
        status["conditions"] = conditions
        name = node["metadata"]["name"]
        log.info("node %s stopped posting its status: marking it Unknown", name)
        self.recorder.normal(node, "NodeNotReady", f"Node {name} status is now: NodeNotReady")
        return await rest.request(
            self.client, "PUT", NODES.path(None, name, "status"), body={**node, "status": status}
        )

    async def _mark_pods_not_ready(self, node: str) -> None:
        """Pods on a node that stopped reporting are no longer known to be Ready (so
        Services and controllers stop counting on them), as upstream marks them."""
        stamp = format_time(self.options.clock())
        patch = {
            "status": {
                "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": stamp}]
            }
        }
        for pod in self.pods.by_index(BY_NODE_NAME, node):
            if is_terminal(pod) or condition(pod, "Ready") is None:
                continue
            if (condition(pod, "Ready") or {}).get("status") == "False":
                continue
            md = pod["metadata"]
            try:
                await rest.request(
                    self.client,
                    "PATCH",
                    PODS.path(md["namespace"], md["name"], "status"),
                    body=patch,
                    content_type="application/strategic-merge-patch+json",
                )
            except rest.ApiError as exc:
                if not rest.is_status(exc, 404):
                    log.warning("could not mark pod %s not ready: %s", md["name"], exc)

    async def _sync_taints(self, node: Obj, ready_status: str | None) -> None:
        spec = node.get("spec") or {}
        taints = list(spec.get("taints") or ())
        new = tt.with_health_taints(
            taints, tt.wanted_key(ready_status), format_time(self.options.clock())
        )
        if new == taints:
            return
        body = {**node, "spec": {**spec, "taints": new}}
        if not new:
            body["spec"].pop("taints")
        await rest.request(
            self.client, "PUT", NODES.path(None, node["metadata"]["name"]), body=body
        )

    # -- taint-based eviction ----------------------------------------------------------

    async def reconcile_eviction(self, req: Request) -> Result | None:
        node = self.nodes.get(req.name)
        taints = [
            t
            for t in ((node or {}).get("spec") or {}).get("taints") or ()
            if t.get("effect") == tt.NO_EXECUTE
        ]
        if node is None or not taints:
            return None
        now = self.options.clock()
        added = [parse_time(t.get("timeAdded")) for t in taints]
        since = max((a for a in added if a is not None), default=now)
        wait: float | None = None
        for pod in self.pods.by_index(BY_NODE_NAME, req.name):
            if is_terminal(pod) or is_deleting(pod):
                continue
            secs = tt.toleration_seconds((pod.get("spec") or {}).get("tolerations") or (), taints)
            if secs is None or since + secs <= now:
                await self._evict(pod, taints)
            elif secs != float("inf"):
                left = since + secs - now
                wait = left if wait is None else min(wait, left)
        return Result(requeue_after=wait + 0.01) if wait is not None else None

    async def _evict(self, pod: Obj, taints: Iterable[Obj]) -> None:
        md = pod["metadata"]
        keys = ", ".join(sorted({t.get("key", "") for t in taints}))
        log.info("evicting pod %s/%s from its node (taints: %s)", md["namespace"], md["name"], keys)
        stamp = format_time(self.options.clock())
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "DeletionByTaintManager",
                        "message": "Taint manager: deleting due to NoExecute taint",
                        "lastTransitionTime": stamp,
                    }
                ]
            }
        }
        try:
            await rest.request(
                self.client,
                "PATCH",
                PODS.path(md["namespace"], md["name"], "status"),
                body=patch,
                content_type="application/strategic-merge-patch+json",
            )
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return
            log.warning("could not mark pod %s/%s: %s", md["namespace"], md["name"], exc)
        self.recorder.normal(
            pod, "TaintManagerEviction", f"Marking for deletion Pod {md['namespace']}/{md['name']}"
        )
        await delete(self.client, PODS, pod)


def _node_of_pod(pod: Obj) -> tuple[Request, ...]:
    node = (pod.get("spec") or {}).get("nodeName")
    return (Request("", node),) if node else ()


def add_node_lifecycle_controller(
    mgr: Manager, options: ControllerOptions
) -> NodeLifecycleController:
    return NodeLifecycleController(mgr, options)
