"""Keeping a Volcano PodGroup in step with what the adapter computes.

The pure adapter (:mod:`lahar.kuberay.volcano`) says what a PodGroup should be;
this module writes it the way KubeRay's plug-in does (§5.2): create it when
missing (AlreadyExists counts as done), and otherwise update only ``minMember`` and
``minResources``, only when they differ (quota-equal resource lists are equal).
Queue, priority class, topology and annotations are set at creation and never
re-synced.
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.kube import rest
from lahar.kuberay.operator import kinds
from lahar.kuberay.operator.context import OperatorContext
from lahar.kuberay.volcano import needs_update

Obj = dict[str, Any]


async def _live(ctx: OperatorContext, ns: str, name: str) -> Obj | None:
    cache = ctx.caches.podgroups
    if cache is not None:
        return cache.get(name, ns)
    return await kinds.get(ctx.client, kinds.PODGROUPS, ns, name)


async def sync_podgroup(ctx: OperatorContext, desired: Obj) -> bool:
    """Create ``desired`` or bring the live PodGroup's sizing to it; True if written."""
    ns, name = kinds.ns_name(desired)
    live = await _live(ctx, ns, name)
    if live is None:
        created = await kinds.create(ctx.client, kinds.PODGROUPS, desired)
        return created is not None
    sizing = {"minMember": desired["spec"]["minMember"],
              "minResources": desired["spec"].get("minResources") or {}}  # fmt: skip
    if not needs_update(live, sizing):
        return False
    updated = copy.deepcopy(live)
    updated["spec"]["minMember"] = sizing["minMember"]
    updated["spec"]["minResources"] = sizing["minResources"]
    try:
        await kinds.update(ctx.client, kinds.PODGROUPS, updated)
    except rest.ApiError as exc:
        if rest.is_status(exc, 404):  # deleted under us: create on the next pass
            return False
        raise
    return True
