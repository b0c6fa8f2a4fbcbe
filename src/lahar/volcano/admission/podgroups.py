"""Admission for ``scheduling.volcano.sh/v1beta1`` PodGroups, with Volcano's messages.

Defaulting (CREATE): an empty queue becomes ``default``; a ``default`` queue is replaced by
the namespace's ``scheduling.volcano.sh/queue-name`` annotation when it has one.
Validation (CREATE): the queue must exist and be Open; network topology (also in each
subGroupPolicy) may not set both ``highestTierAllowed`` and ``highestTierName``.
UPDATE only re-checks the topology (a PodGroup stays editable after its queue closes).
"""

from __future__ import annotations

import copy

from lahar.volcano import constants as c
from lahar.volcano.admission.common import AdmissionDenied, Obj, meta, not_found, spec
from lahar.volcano.lookup import Lookup

VALIDATE_WEBHOOK = "validatepodgroup.volcano.sh"
MUTATE_WEBHOOK = "mutatepodgroup.volcano.sh"
_TOPOLOGY_MSG = "must not specify 'highestTierAllowed' and 'highestTierName' at the same time"


def mutate_podgroup(podgroup: Obj, lookup: Lookup) -> Obj:
    out = copy.deepcopy(podgroup)
    s = out.setdefault("spec", {})
    if not s.get("queue"):
        s["queue"] = c.DEFAULT_QUEUE
    if s["queue"] == c.DEFAULT_QUEUE:
        namespace = lookup.get_namespace(meta(out).get("namespace", ""))
        queue = ((namespace or {}).get("metadata", {}).get("annotations") or {}).get(
            c.QUEUE_ANNOTATION
        )
        if queue:
            s["queue"] = queue
    return out


def _topology_errors(podgroup: Obj) -> list[str]:
    errs: list[str] = []

    def both(topology: Obj | None) -> bool:
        return (
            bool(topology)
            and topology.get("highestTierAllowed") is not None
            and bool(topology.get("highestTierName"))
        )

    if both(spec(podgroup).get("networkTopology")):
        errs.append(f"networkTopology: {_TOPOLOGY_MSG}")
    for policy in spec(podgroup).get("subGroupPolicy") or []:
        if both(policy.get("networkTopology")):
            errs.append(f"subGroupPolicy {policy.get('name', '')} networkTopology: {_TOPOLOGY_MSG}")
    return errs


def podgroup_message(operation: str, podgroup: Obj, lookup: Lookup) -> str:
    errs: list[str] = []
    if operation == "CREATE":
        queue_name = spec(podgroup).get("queue") or ""
        if queue_name:
            queue = lookup.get_queue(queue_name)
            if queue is None:
                errs.append(
                    f"unable to find queue: {not_found('queue.scheduling.volcano.sh', queue_name)}"
                )
            else:
                state = (queue.get("status") or {}).get("state", "")
                if state != "Open":
                    errs.append(
                        f"can only submit PodGroup to queue with state `Open`, queue `{queue_name}` status is `{state}`"
                    )
    errs += _topology_errors(podgroup)
    return "; ".join(errs)


def validate_podgroup(operation: str, podgroup: Obj | None, lookup: Lookup) -> None:
    if podgroup is None or operation not in ("CREATE", "UPDATE"):
        return
    msg = podgroup_message(operation, podgroup, lookup)
    if msg:
        raise AdmissionDenied(VALIDATE_WEBHOOK, msg)
