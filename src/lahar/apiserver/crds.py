"""CustomResourceDefinition lifecycle: serve a CRD's kinds the moment it is written.

After a CRD is created or updated the server marks it ``NamesAccepted`` and
``Established`` (as the real apiextensions controllers do within milliseconds) and
refreshes the registry, which refreshes discovery and OpenAPI. Deleting a CRD
deletes its custom objects first, like the ``customresourcecleanup`` finalizer.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from lahar.apiserver import store as storemod
from lahar.apiserver.meta import meta, now_rfc3339
from lahar.apiserver.resources import from_crd
from lahar.apiserver.state import ServerState

CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"


def established(state: ServerState, crd: dict[str, Any]) -> dict[str, Any]:
    """Serve the CRD's kinds and record the Established/NamesAccepted conditions."""
    state.registry.set_crd(crd)
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", names.get("kind", "").lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    status = copy.deepcopy(crd.get("status") or {})
    now = now_rfc3339()
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    for ctype, reason, message in (
        ("NamesAccepted", "NoConflicts", "no conflicts found"),
        ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ):
        if conditions.get(ctype, {}).get("status") != "True":
            conditions[ctype] = {
                "type": ctype,
                "status": "True",
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }
    stored = sorted(
        set(status.get("storedVersions") or [])
        | {v["name"] for v in spec.get("versions") or [] if v.get("storage")}
    )
    new_status = {
        "conditions": list(conditions.values()),
        "acceptedNames": names,
        "storedVersions": stored,
    }
    if new_status == crd.get("status"):
        return crd
    new = {**crd, "status": new_status}
    try:
        return state.store.update(CRD_KEY, new, expected_rv=int(meta(crd)["resourceVersion"]))
    except storemod.StoreError:
        return crd


def remove(state: ServerState, crd: dict[str, Any]) -> None:
    """Stop serving a deleted CRD and delete its objects."""
    for rt in from_crd(crd)[:1]:
        gr = rt.group_resource
        with state.store.transaction():
            for obj in state.store.list(gr)[0]:
                with contextlib.suppress(storemod.KeyNotFound):
                    state.store.delete(gr, meta(obj).get("namespace", "") or "", meta(obj)["name"])
    state.registry.remove_crd(meta(crd).get("name", ""))
