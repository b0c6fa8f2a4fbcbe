"""Garbage collection inside the embedded server.

A real cluster runs these in kube-controller-manager; the embedded server runs
them in-process so that ownerReferences, deletion propagation, namespace
deletion and pod grace periods behave the same without extra processes:

- dependents whose owners are all gone are deleted (Background);
- an owner marked with ``foregroundDeletion`` loses its finalizer once its
  dependents are gone; one marked ``orphan`` has its dependents' references
  removed first;
- a bound pod past its grace period is removed when no node agent holds a fresh
  Lease for its node (an agent that is alive confirms the deletion itself).

The collector is level-triggered: each pass reads the store, so a restart in the
middle of a cascade simply continues it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections import defaultdict
from typing import Any

from lahar.apiserver import store as storemod
from lahar.apiserver.deletion import FOREGROUND, ORPHAN, DeletionService
from lahar.apiserver.meta import meta, parse_time

log = logging.getLogger("lahar.apiserver.gc")
Obj = dict[str, Any]
Ref = tuple[str, str, str]  # group-resource, namespace, name


class GarbageCollector:
    def __init__(
        self, deletion: DeletionService, *, period: float = 0.5, min_gap: float = 0.05
    ) -> None:
        self.deletion = deletion
        self.store = deletion.store
        self.registry = deletion.objects.registry
        self.period = period
        # Passes are at least this far apart: under a stream of writes every commit marks
        # the collector dirty, and a pass per commit (each walks every owner) cost the
        # server 4-6% of its CPU in ``lahar bench e2e`` for nothing a pass 50 ms later
        # would not do as well.
        self.min_gap = min_gap
        self._dependents: dict[str, set[Ref]] = defaultdict(set)  # owner uid -> dependents
        self._uids: dict[str, Ref] = {}  # uid -> where the object lives
        self._terminating: set[Ref] = set()  # objects with a deletionTimestamp
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        deletion.gc = self  # type: ignore[attr-defined]
        self._index_all()
        self.store.subscribe(self._on_events)

    # ---- the owner index -------------------------------------------------------

    def _index_all(self) -> None:
        for gr in self.store.list_resources():
            for obj in self.store.list(gr)[0]:
                self._index(gr, obj)

    def _index(self, gr: str, obj: Obj) -> None:
        m = obj.get("metadata") or {}
        ref = (gr, m.get("namespace", "") or "", m.get("name", ""))
        uid = m.get("uid")
        if uid:
            self._uids[uid] = ref
        if m.get("deletionTimestamp"):
            self._terminating.add(ref)
        for owner in m.get("ownerReferences") or []:
            if owner.get("uid"):
                self._dependents[owner["uid"]].add(ref)

    def _unindex(self, gr: str, obj: Obj) -> None:
        m = obj.get("metadata") or {}
        ref = (gr, m.get("namespace", "") or "", m.get("name", ""))
        self._uids.pop(m.get("uid", ""), None)
        self._terminating.discard(ref)
        for owner in m.get("ownerReferences") or []:
            deps = self._dependents.get(owner.get("uid", ""))
            if deps is not None:
                deps.discard(ref)

    def _on_events(self, events: list[storemod.WatchEvent]) -> None:
        for ev in events:
            if ev.type == "DELETED":
                self._unindex(ev.gr, ev.object)
            else:
                self._index(ev.gr, ev.object)
        self._dirty.set()

    def has_dependents(self, uid: str) -> bool:
        return any(self._exists(ref) for ref in self._dependents.get(uid, ()))

    def _exists(self, ref: Ref) -> Obj | None:
        return self.store.get(*ref)

    # ---- the loop ---------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gc")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            # asyncio.timeout, not wait_for: on Python 3.11, wait_for swallows a cancel
            # that arrives just after a write set the event, and stop() (so the server's
            # close()) then waited forever for a collector that went on collecting.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.period):
                    await self._dirty.wait()
            self._dirty.clear()
            try:
                self.collect_once()
            except Exception:  # keep collecting; a bad object must not stop GC
                log.exception("garbage collection pass failed")
            await asyncio.sleep(self.min_gap)

    def collect_once(self) -> None:
        self._orphans_and_dangling()
        self._owners_being_deleted()
        self._expired_pods()

    def _orphans_and_dangling(self) -> None:
        for uid, deps in list(self._dependents.items()):
            if uid in self._uids or not deps:
                continue
            for ref in list(deps):
                obj = self._exists(ref)
                if obj is None:
                    deps.discard(ref)
                    continue
                owners = meta(obj).get("ownerReferences") or []
                if not any(o.get("uid") == uid for o in owners):
                    deps.discard(ref)  # the reference was removed since it was indexed
                    continue
                alive = [o for o in owners if o.get("uid") in self._uids]
                if alive:
                    self._set_owners(ref, obj, alive)
                elif not meta(obj).get("deletionTimestamp") or ref[0] == "pods":
                    self._delete(ref, {"propagationPolicy": "Background"})

    def _owners_being_deleted(self) -> None:
        for ref in sorted(self._terminating):
            obj = self._exists(ref)
            if obj is None:
                continue
            m = meta(obj)
            finalizers = m.get("finalizers") or []
            if not (FOREGROUND in finalizers or ORPHAN in finalizers):
                continue
            uid = m.get("uid", "")
            deps = [
                d
                for d in self._dependents.get(uid, set())
                if any(
                    o.get("uid") == uid
                    for o in meta(self._exists(d) or {}).get("ownerReferences") or []
                )
            ]
            if ORPHAN in finalizers:
                for d in deps:
                    dep = self._exists(d)
                    if dep is not None:
                        keep = [
                            o
                            for o in meta(dep).get("ownerReferences") or []
                            if o.get("uid") != m.get("uid")
                        ]
                        self._set_owners(d, dep, keep)
                self._drop_finalizer(ref, ORPHAN)
            elif FOREGROUND in finalizers:
                blocking = []
                for d in deps:
                    self._delete(d, {"propagationPolicy": "Foreground"})
                    if self._exists(d) is not None:
                        blocking.append(d)
                if not blocking:
                    self._drop_finalizer(ref, FOREGROUND)

    def _expired_pods(self) -> None:
        now = dt.datetime.now(dt.UTC)
        for ref in sorted(r for r in self._terminating if r[0] == "pods"):
            pod = self._exists(ref)
            if pod is None:
                continue
            m = meta(pod)
            ts = m.get("deletionTimestamp")
            if not ts or m.get("finalizers"):
                continue
            if parse_time(ts) > now:
                continue
            node = (pod.get("spec") or {}).get("nodeName")
            if node and self._agent_alive(node, now):
                continue
            self.deletion.finish_pod(m.get("namespace", ""), m["name"])

    def _agent_alive(self, node: str, now: dt.datetime) -> bool:
        lease = self.store.get("leases.coordination.k8s.io", "kube-node-lease", node)
        if lease is None:
            return False
        spec = lease.get("spec") or {}
        renew = spec.get("renewTime")
        if not renew:
            return False
        try:
            renewed = dt.datetime.fromisoformat(renew.replace("Z", "+00:00"))
        except ValueError:
            return False
        return (now - renewed).total_seconds() <= float(spec.get("leaseDurationSeconds") or 40)

    # ---- writes -------------------------------------------------------------------

    def _rt(self, gr: str):
        plural, _, group = gr.partition(".")
        return self.registry.storage_type(group, plural)

    def _delete(self, ref: Ref, options: dict[str, Any]) -> None:
        rt = self._rt(ref[0])
        if rt is None:
            with contextlib.suppress(storemod.KeyNotFound):
                self.store.delete(*ref)
            return
        with contextlib.suppress(storemod.StoreError, Exception):
            self.deletion.delete(rt, ref[1], ref[2], options)

    def _set_owners(self, ref: Ref, obj: Obj, owners: list[Obj]) -> None:
        new = {**obj, "metadata": {**meta(obj)}}
        if owners:
            new["metadata"]["ownerReferences"] = owners
        else:
            new["metadata"].pop("ownerReferences", None)
        with contextlib.suppress(storemod.StoreError):
            self.store.update(ref[0], new, expected_rv=int(meta(obj)["resourceVersion"]))

    def _drop_finalizer(self, ref: Ref, finalizer: str) -> None:
        obj = self._exists(ref)
        if obj is None:
            return
        finalizers = [f for f in meta(obj).get("finalizers") or [] if f != finalizer]
        with contextlib.suppress(storemod.StoreError):
            if finalizers:
                new = {**obj, "metadata": {**meta(obj), "finalizers": finalizers}}
                self.store.update(ref[0], new, expected_rv=int(meta(obj)["resourceVersion"]))
            else:
                self.store.delete(*ref, expected_rv=int(meta(obj)["resourceVersion"]))
