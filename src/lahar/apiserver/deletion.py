"""Deletion: preconditions, finalizers, propagation policies and graceful pod deletion.

A DELETE either removes the object at once or marks it (``deletionTimestamp``)
and leaves the rest to whoever holds a finalizer: the garbage collector for
``foregroundDeletion`` and ``orphan``, the namespace finaliser for namespaces,
and the node agent for bound pods, which confirms a graceful deletion by deleting
again with a zero grace period.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from lahar.apiserver import store as storemod
from lahar.apiserver.admission import AdmissionRequest
from lahar.apiserver.errors import APIError, bad_request, conflict
from lahar.apiserver.meta import meta, now_rfc3339
from lahar.apiserver.objects import ObjectService
from lahar.apiserver.resources import ResourceType

Obj = dict[str, Any]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
# batch/v1 Jobs orphan their pods unless told otherwise (kept for compatibility upstream).
_ORPHAN_BY_DEFAULT = {"jobs.batch"}


def _policy(rt: ResourceType, options: dict[str, Any]) -> str:
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy is None:
        policy = "Orphan" if rt.group_resource in _ORPHAN_BY_DEFAULT else "Background"
    if policy not in ("Background", "Foreground", "Orphan"):
        raise bad_request(
            f'propagationPolicy: Unsupported value: "{policy}": supported values: '
            '"Foreground", "Background", "Orphan"'
        )
    return policy


class DeletionService:
    def __init__(self, objects: ObjectService) -> None:
        self.objects = objects
        self.store = objects.store

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: dict[str, Any],
        *,
        dry_run: bool = False,
    ) -> Obj:
        key = self.objects.storage_key(rt)
        ns = namespace if rt.namespaced else ""
        old = self.store.get(key, ns, name)
        if old is None:
            from lahar.apiserver.errors import not_found

            raise not_found(rt.plural, name, rt.group)
        m = meta(old)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != m.get("uid"):
            raise conflict(
                rt.plural,
                name,
                rt.group,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {m.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != m.get("resourceVersion"):
            raise conflict(
                rt.plural,
                name,
                rt.group,
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {m.get('resourceVersion')}",
            )
        policy = _policy(rt, options)
        self.objects.admission.run(
            AdmissionRequest("DELETE", rt, ns, name, None, old, dry_run=dry_run)
        )
        grace = options.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or grace < 0):
            grace = 0 if isinstance(grace, int) else None
        new = copy.deepcopy(old)
        nm = meta(new)
        finalizers = list(nm.get("finalizers") or [])
        if rt.group_resource == "namespaces":
            return self._mark_namespace(key, new, dry_run)
        if rt.group_resource == "pods":
            grace = self._pod_grace(new, grace)
            if grace > 0:
                return self._mark(key, new, old, grace, finalizers, policy, dry_run)
        if policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if (
            policy == "Orphan"
            and ORPHAN not in finalizers
            and self._has_dependents(m.get("uid", ""))
        ):
            finalizers.append(ORPHAN)
        if finalizers:
            return self._mark(key, new, old, 0, finalizers, policy, dry_run)
        if dry_run:
            return self.objects.present(rt, old)
        gone = self.store.delete(key, ns, name, expected_rv=int(m["resourceVersion"]))
        return self.objects.present(rt, gone)

    def _has_dependents(self, uid: str) -> bool:
        gc = getattr(self, "gc", None)
        return True if gc is None else gc.has_dependents(uid)

    @staticmethod
    def _pod_grace(pod: Obj, grace: int | None) -> int:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        current = meta(pod).get("deletionGracePeriodSeconds")
        if current is not None:
            grace = min(grace, current)
        return int(grace)

    def _mark(
        self,
        key: str,
        new: Obj,
        old: Obj,
        grace: int,
        finalizers: list[str],
        policy: str,
        dry_run: bool,
    ) -> Obj:
        nm = meta(new)
        if finalizers:
            nm["finalizers"] = finalizers
        if not nm.get("deletionTimestamp") or grace < int(
            nm.get("deletionGracePeriodSeconds") or 0
        ):
            when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=grace)
            nm["deletionTimestamp"] = now_rfc3339(when)
            nm["deletionGracePeriodSeconds"] = grace
        if dry_run or new == old:
            return new
        try:
            return self.store.update(key, new, expected_rv=int(meta(old)["resourceVersion"]))
        except storemod.RVConflict as exc:
            raise conflict(key, nm.get("name", ""), "") from exc

    def _mark_namespace(self, key: str, ns: Obj, dry_run: bool) -> Obj:
        """A namespace is only marked: the namespace controller empties it and removes
        the ``kubernetes`` finalizer (one without finalizers goes at once)."""
        m = meta(ns)
        if not (ns.get("spec") or {}).get("finalizers") and not m.get("finalizers"):
            if dry_run:
                return ns
            return self.store.delete(key, "", m["name"], expected_rv=int(m["resourceVersion"]))
        if not m.get("deletionTimestamp"):
            m["deletionTimestamp"] = now_rfc3339()
            m["deletionGracePeriodSeconds"] = 0
            ns.setdefault("status", {})["phase"] = "Terminating"
            if not dry_run:
                return self.store.update(key, ns)
        return ns

    def finish_pod(self, namespace: str, name: str) -> None:
        """Remove a pod whose grace period is over (its node agent is gone or confirmed)."""
        try:
            self.store.delete("pods", namespace, name)
        except storemod.KeyNotFound:
            pass


def require_no_body_kind_mismatch(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise bad_request("DeleteOptions must be an object")
    kind = options.get("kind")
    if kind not in (None, "DeleteOptions"):
        raise APIError(400, "BadRequest", f"expected DeleteOptions, got {kind}")
    return options
