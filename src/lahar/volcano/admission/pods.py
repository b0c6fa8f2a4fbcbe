"""Admission for Pods handed to the Volcano scheduler, with Volcano's messages.

Validation (CREATE, only when ``schedulerName`` is a Volcano scheduler):

* a pod naming its PodGroup (``scheduling.k8s.io/group-name``) needs that PodGroup to
  exist and its queue to be Open;
* a pod naming a queue (``scheduling.volcano.sh/queue-name``) needs that queue Open;
* at most one of the JDB annotations, each a positive integer or a 1%-99% percentage.

Defaulting: Volcano's pod mutator applies "resource groups" from its admission
configuration (node selectors, tolerations, schedulerName per namespace/label). lahar has
no such configuration yet, so :func:`mutate_pod` takes the groups as an argument and
applies the ones that match; with none it changes nothing.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from lahar.volcano import constants as c
from lahar.volcano.admission.common import AdmissionDenied, Obj, meta, not_found, spec
from lahar.volcano.lookup import Lookup

VALIDATE_WEBHOOK = "validatepod.volcano.sh"
MUTATE_WEBHOOK = "mutatepod.volcano.sh"


@dataclass
class ResourceGroup:
    """One resource group of Volcano's admission config: pods it matches get these."""

    name: str
    namespaces: list[str] = field(default_factory=list)
    label_selector: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    scheduler_name: str = ""

    def matches(self, pod: Obj) -> bool:
        if self.namespaces and meta(pod).get("namespace") in self.namespaces:
            return True
        labels = meta(pod).get("labels") or {}
        return bool(self.label_selector) and all(
            labels.get(k) == v for k, v in self.label_selector.items()
        )


def mutate_pod(pod: Obj, groups: list[ResourceGroup] | None = None) -> Obj:
    out = copy.deepcopy(pod)
    for group in groups or []:
        if not group.matches(out):
            continue
        s = out.setdefault("spec", {})
        if group.node_selector:
            s["nodeSelector"] = {**(s.get("nodeSelector") or {}), **group.node_selector}
        if group.tolerations:
            s["tolerations"] = [*(s.get("tolerations") or []), *group.tolerations]
        if group.scheduler_name:
            s["schedulerName"] = group.scheduler_name
        break
    return out


def _queue_state_message(queue_name: str, lookup: Lookup) -> str:
    queue = lookup.get_queue(queue_name)
    if queue is None:
        return (
            f" unable to find job queue: {not_found('queues.scheduling.volcano.sh', queue_name)};"
        )
    state = (queue.get("status") or {}).get("state", "")
    if state != "Open":
        return f" can only submit job to queue with state `Open`, queue `{queue_name}` status is `{state}`;"
    return ""


def _int_or_percent_message(key: str, value: str) -> str:
    if re.fullmatch(r"-?\d+", value):
        if int(value) <= 0:
            return f'invalid value <"{value}"> for {key}, it must be a positive integer'
        return ""
    digits = value.replace("%", "")
    if not re.fullmatch(r"[+-]?\d+", digits):
        return f'invalid value strconv.Atoi: parsing "{digits}": invalid syntax for {key}'
    number = int(digits)
    if number <= 0 or number >= 100:
        return f'invalid value <"{value}"> for {key}, it must be a valid percentage which between 1% ~ 99%'
    return ""


def _annotation_message(pod: Obj) -> str:
    annotations = meta(pod).get("annotations") or {}
    keys = [c.JDB_MIN_AVAILABLE, c.JDB_MAX_UNAVAILABLE]
    found = 0
    for key in keys:
        if key in annotations:
            found += 1
            msg = _int_or_percent_message(key, str(annotations[key]))
            if msg:
                return msg
    if found > 1:
        return f"not allow configure multiple annotations <[{' '.join(keys)}]> at same time"
    return ""


def pod_message(
    pod: Obj, lookup: Lookup, scheduler_names: tuple[str, ...] = (c.SCHEDULER_NAME,)
) -> str:
    if spec(pod).get("schedulerName") not in scheduler_names:
        return ""
    annotations = meta(pod).get("annotations") or {}
    namespace, name = meta(pod).get("namespace", ""), meta(pod).get("name", "")
    group = annotations.get(c.GROUP_NAME_KEY, "")
    if group:
        podgroup = lookup.get_podgroup(namespace, group)
        if podgroup is None:
            return (
                f"failed to get PodGroup for pod <{namespace}/{name}>: "
                f"{not_found('podgroups.scheduling.volcano.sh', group)}"
            )
        queue_name = spec(podgroup).get("queue") or ""
        if queue_name:
            msg = _queue_state_message(queue_name, lookup)
            if msg:
                return f"failed : {msg};"
        return ""
    queue_name = annotations.get(c.QUEUE_ANNOTATION, "")
    if queue_name:
        msg = _queue_state_message(queue_name, lookup)
        if msg:
            return msg
    return _annotation_message(pod)


def validate_pod(operation: str, pod: Obj | None, lookup: Lookup) -> None:
    if operation != "CREATE" or pod is None:
        return
    msg = pod_message(pod, lookup).strip()
    if msg:
        raise AdmissionDenied(VALIDATE_WEBHOOK, msg)
