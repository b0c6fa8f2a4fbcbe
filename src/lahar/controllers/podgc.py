"""The pod garbage collector: remove the pods nobody else will.

Every ``pod_gc_period`` seconds it deletes, with a zero grace period:

* **terminated pods beyond the threshold** (``--terminated-pod-gc-threshold``, 12500):
  when more pods than that are Succeeded or Failed, the oldest (by creation) go, so
  finished pods cannot grow without bound;
* **orphaned pods**: pods bound to a node that no longer exists (confirmed with a
  fresh read, after the node has been missing for ``orphan_quarantine`` seconds, so a
  node that is being re-registered is not mistaken for a deleted one);
* **unscheduled terminating pods**: pods being deleted that were never bound, so no
  node agent will ever confirm their deletion.

Pods that are not yet terminal are first marked ``Failed`` with a ``DisruptionTarget``
condition (reason ``DeletionByPodGC``), so their controllers (a Job counting
failures, say) see why they went, as upstream does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import lightkube

from lahar.controllers.common import (
    NODES,
    PODS,
    Obj,
    delete,
    format_time,
    is_deleting,
    is_terminal,
)
from lahar.controllers.options import ControllerOptions
from lahar.kube import rest
from lahar.kube.manager import Manager

log = logging.getLogger("lahar.controllers.podgc")


class PodGC:
    def __init__(self, mgr: Manager, options: ControllerOptions) -> None:
        self.client: lightkube.AsyncClient = mgr.client
        self.options = options
        self.nodes = mgr.cache(NODES)
        self.pods = mgr.cache(PODS)
        self._informers = mgr.informers
        self._missing_since: dict[str, float] = {}
        self.deleted = 0
        mgr.add(self.run)

    async def run(self) -> None:
        await self._informers.wait_for_sync()
        while True:
            try:
                await self.collect_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pod garbage collection failed")
            await asyncio.sleep(self.options.pod_gc_period)

    async def collect_once(self) -> int:
        """One pass over the cache; how many pods were deleted."""
        pods = list(self.pods)
        done = 0
        done += await self._terminated(pods)
        done += await self._orphaned(pods)
        done += await self._unscheduled_terminating(pods)
        self.deleted += done
        return done

    async def _terminated(self, pods: list[Obj]) -> int:
        threshold = self.options.terminated_pod_gc_threshold
        if threshold <= 0:
            return 0
        terminated = [p for p in pods if is_terminal(p) and not is_deleting(p)]
        excess = len(terminated) - threshold
        if excess <= 0:
            return 0
        terminated.sort(
            key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"])
        )
        log.info("deleting %d terminated pods beyond the threshold of %d", excess, threshold)
        return await self._delete_all(terminated[:excess], "")

    async def _orphaned(self, pods: list[Obj]) -> int:
        now = time.monotonic()
        missing: set[str] = set()
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and self.nodes.get(node) is None:
                missing.add(node)
        for node in list(self._missing_since):
            if node not in missing:
                del self._missing_since[node]
        gone: set[str] = set()
        for node in missing:
            since = self._missing_since.setdefault(node, now)
            if now - since < self.options.orphan_quarantine:
                continue
            try:
                await rest.request(self.client, "GET", NODES.path(None, node))
            except rest.ApiError as exc:
                if rest.is_status(exc, 404):
                    gone.add(node)
                    continue
                raise
        orphans = [p for p in pods if (p.get("spec") or {}).get("nodeName") in gone]
        return await self._delete_all(orphans, "PodGC: node no longer exists")

    async def _unscheduled_terminating(self, pods: list[Obj]) -> int:
        stuck = [
            p
            for p in pods
            if is_deleting(p)
            and not (p.get("spec") or {}).get("nodeName")
            # already force-deleted and failed: only its finalizers hold it now
            and not (is_terminal(p) and p["metadata"].get("deletionGracePeriodSeconds") == 0)
        ]
        return await self._delete_all(stuck, "PodGC: unscheduled pod is terminating")

    async def _delete_all(self, pods: list[Obj], message: str) -> int:
        results = await asyncio.gather(
            *(self._delete(p, message) for p in pods), return_exceptions=True
        )
        for pod, res in zip(pods, results, strict=True):
            if isinstance(res, BaseException):
                log.warning("could not delete pod %s: %s", pod["metadata"]["name"], res)
        return sum(1 for r in results if r is True)

    async def _delete(self, pod: Obj, message: str) -> bool:
        md = pod["metadata"]
        if message and not is_terminal(pod):
            patch = {
                "status": {
                    "phase": "Failed",
                    "conditions": [
                        {
                            "type": "DisruptionTarget",
                            "status": "True",
                            "reason": "DeletionByPodGC",
                            "message": message,
                            "lastTransitionTime": format_time(self.options.clock()),
                        }
                    ],
                }
            }
            with contextlib.suppress(rest.ApiError):
                await rest.request(
                    self.client,
                    "PATCH",
                    PODS.path(md["namespace"], md["name"], "status"),
                    body=patch,
                    content_type="application/strategic-merge-patch+json",
                )
        log.info("garbage-collecting pod %s/%s", md["namespace"], md["name"])
        return await delete(self.client, PODS, pod, grace=0)


def add_pod_gc(mgr: Manager, options: ControllerOptions) -> PodGC:
    return PodGC(mgr, options)
