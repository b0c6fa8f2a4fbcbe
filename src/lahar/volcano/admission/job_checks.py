"""The per-part checks behind vcjob validation: lifecycle policies, volumes, task
templates, topology and partition policies, and the task dependency graph.

Each returns Volcano's message fragment (or ``""``); ``jobs.py`` strings them together
the way Volcano's webhook does, so one request reports every problem it has.
"""

from __future__ import annotations

from typing import Any

from lahar.api.quantity import QuantityError, parse_quantity
from lahar.volcano import constants as c
from lahar.volcano.admission.common import (
    Obj,
    dns1123_label_errors,
    field_invalid,
    field_required,
    go_list,
    multierror,
)

_EXTERNAL_EVENTS = frozenset(c.USER_EVENTS)
_EXTERNAL_ACTIONS = frozenset(
    {c.ABORT_JOB, c.RESTART_JOB, c.RESTART_TASK, c.TERMINATE_JOB, c.COMPLETE_JOB, c.RESUME_JOB}
    | {c.RESTART_POD, c.RESTART_PARTITION}
)


def policy_events(policy: Obj) -> list[str]:
    """``events`` plus ``event``, de-duplicated, in order."""
    out: list[str] = []
    for event in [
        *(policy.get("events") or []),
        *([policy["event"]] if policy.get("event") else []),
    ]:
        if event not in out:
            out.append(event)
    return out


def validate_policies(policies: list[Obj] | None, path: str) -> str:
    """The go-multierror text for bad lifecycle policies, or ``""``."""
    errors: list[str] = []
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for policy in policies or []:
        has_event = bool(policy.get("event")) or bool(policy.get("events"))
        exit_code = policy.get("exitCode")
        if has_event and exit_code is not None:
            errors.append("must not specify event and exitCode simultaneously")
            break
        if not has_event and exit_code is None:
            errors.append("either event and exitCode should be specified")
            break
        if has_event:
            bad = False
            for event in policy_events(policy):
                if event not in _EXTERNAL_EVENTS:
                    errors.append(field_invalid(path, event, "invalid policy event"))
                    bad = True
                    break
                action = policy.get("action", "")
                if action not in _EXTERNAL_ACTIONS:
                    errors.append(field_invalid(path, action, "invalid policy action"))
                    bad = True
                    break
                if event in seen_events:
                    errors.append(f"duplicate event {event}  across different policy")
                    bad = True
                    break
                seen_events.add(event)
            if bad:
                break
        else:
            if exit_code == 0:
                errors.append("0 is not a valid error code")
                break
            if exit_code in seen_codes:
                errors.append(f"duplicate exitCode {exit_code}")
                break
            seen_codes.add(exit_code)
    if c.ANY_EVENT in seen_events and len(seen_events) > 1:
        errors.append("if there's * here, no other policy should be here")
    return multierror(errors) if errors else ""


def valid_events_and_actions() -> str:
    valid_actions = [a for a in c.USER_ACTIONS if a in _EXTERNAL_ACTIONS]
    return (
        f" valid events are {go_list(c.USER_EVENTS)}, valid actions are {go_list(valid_actions)};"
    )


def validate_volumes(volumes: list[Obj] | None) -> str:
    mount_paths: set[str] = set()
    for volume in volumes or []:
        mount_path = volume.get("mountPath") or ""
        if not mount_path:
            return " mountPath is required;"
        if mount_path in mount_paths:
            return f" duplicated mountPath: {mount_path};"
        claim, claim_name = volume.get("volumeClaim"), volume.get("volumeClaimName") or ""
        if claim is None and not claim_name:
            return " either VolumeClaim or VolumeClaimName must be specified;"
        if claim_name:
            if claim is not None:
                return (
                    "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
                    "If you want to create a new PVC, you do not need to specify VolumeClaimName"
                )
            errs = dns1123_subdomain_errors(claim_name)
            if errs:
                return f"invalid VolumeClaimName {claim_name} : {go_list(errs)}"
        mount_paths.add(mount_path)
    return ""


def dns1123_subdomain_errors(value: str) -> list[str]:
    import re

    errs: list[str] = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return errs


def _template_errors(template: Obj) -> list[str]:
    """The subset of Kubernetes' PodTemplate validation lahar applies to task templates."""
    pod_spec = template.get("spec") or {}
    errs: list[str] = []
    containers = pod_spec.get("containers") or []
    if not containers:
        errs.append(field_required("template.spec.containers"))
    for kind in ("initContainers", "containers"):
        names: set[str] = set()
        for j, container in enumerate(pod_spec.get(kind) or []):
            path = f"template.spec.{kind}[{j}]"
            name = container.get("name") or ""
            if not name:
                errs.append(field_required(f"{path}.name"))
            elif name in names:
                errs.append(f'{path}.name: Duplicate value: "{name}"')
            else:
                for detail in dns1123_label_errors(name):
                    errs.append(field_invalid(f"{path}.name", name, detail))
            names.add(name)
            if not container.get("image"):
                errs.append(field_required(f"{path}.image"))
    return errs


def _qty(value: Any) -> Any:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return None


def _qos(containers: list[Obj]) -> str:
    """Kubernetes' pod QoS class (requests default to limits when absent)."""
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or dict(limits)
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if (
                name not in limits
                or name not in requests
                or _qty(limits[name]) != _qty(requests[name])
            ):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def validate_task_template(task: Obj, index: int) -> str:
    template = task.get("template") or {}
    errs = _template_errors(template)
    if errs:
        return f"spec.task[{index}]." + "".join(e + ". " for e in errs)
    policy = task.get("topologyPolicy") or ""
    if policy in ("", "none"):
        return ""
    pod_spec = template.get("spec") or {}
    containers = [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
    qos = _qos(containers)
    if qos != "Guaranteed":
        return f"spec.task[{index}] isn't Guaranteed pod, kind={qos}"
    for j, container in enumerate(containers):
        resources = container.get("resources") or {}
        requests = resources.get("requests") or resources.get("limits") or {}
        cpu = _qty(requests.get("cpu", 0))
        if cpu is None or cpu.denominator != 1 or cpu == 0:
            return f"the cpu request isn't  an integer in spec.task[{index}] container[{j}]."
    return ""


def validate_network_topology(topology: Obj | None) -> str:
    if (
        topology
        and topology.get("highestTierAllowed") is not None
        and topology.get("highestTierName")
    ):
        return " must not specify 'highestTierAllowed' and 'highestTierName' at the same time;"
    return ""


def validate_partition_policy(task: Obj) -> str:
    """lahar's wording: Volcano checks the same arithmetic."""
    policy = task.get("partitionPolicy")
    if not policy:
        return ""
    name = task.get("name", "")
    total = int(policy.get("totalPartitions") or 0)
    size = int(policy.get("partitionSize") or 0)
    minimum = int(policy.get("minPartitions") or 0)
    msg = ""
    if total <= 0:
        msg += f" 'totalPartitions' must be greater than 0 in task: {name};"
    if size <= 0:
        msg += f" 'partitionSize' must be greater than 0 in task: {name};"
    if msg:
        return msg
    if int(task.get("replicas") or 0) != total * size:
        msg += f" 'replicas' must equal 'totalPartitions' * 'partitionSize' in task: {name};"
    if (
        minimum > 0
        and task.get("minAvailable") is not None
        and int(task["minAvailable"]) != minimum * size
    ):
        msg += f" 'minAvailable' must equal 'minPartitions' * 'partitionSize' in task: {name};"
    msg += validate_network_topology(policy.get("networkTopology"))
    return msg


def is_dag(tasks: list[Obj]) -> bool:
    """Whether the tasks' ``dependsOn.name`` edges form a DAG (Kahn's algorithm)."""
    names = [t.get("name", "") for t in tasks]
    indegree = dict.fromkeys(names, 0)
    edges: dict[str, list[str]] = {}
    for task in tasks:
        for dep in (task.get("dependsOn") or {}).get("name") or []:
            edges.setdefault(dep, []).append(task.get("name", ""))
            indegree[task.get("name", "")] = indegree.get(task.get("name", ""), 0) + 1
    ready = [n for n, d in indegree.items() if d == 0]
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        for nxt in edges.get(node, []):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return done == len(indegree) and len(indegree) == len(names)


def plugin_arg(args: list[str] | None, flag: str, default: str) -> str:
    """``--flag=value`` (or ``--flag value``) from a job plugin's argument list."""
    args = list(args or [])
    for i, arg in enumerate(args):
        if arg.startswith(f"--{flag}="):
            return arg.split("=", 1)[1]
        if arg == f"--{flag}" and i + 1 < len(args):
            return args[i + 1]
    return default


def plugin_flag(args: list[str] | None, flag: str) -> bool:
    return any(arg == f"--{flag}" or arg == f"--{flag}=true" for arg in args or [])
