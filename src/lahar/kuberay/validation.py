"""RayCluster validation: the rules KubeRay's ValidateRayCluster* functions apply.

Each rule returns a :class:`~lahar.apiserver.errors.Cause` with the field path
(``spec.workerGroupSpecs[0].minReplicas``; under ``spec.rayClusterSpec`` when the
spec belongs to a RayJob) and a message that names the field. KubeRay runs these
in the reconciler and only emits an event; lahar also runs them at admission so a
bad object is refused when it is written (see docs/kuberay-compat.md).
"""

from __future__ import annotations

import json
from typing import Any

from lahar.apiserver.errors import Cause
from lahar.kuberay import constants as c
from lahar.kuberay import naming
from lahar.kuberay.containers import ray_version_at_least
from lahar.kuberay.meta import autoscaler_v2, autoscaling_enabled, env_value

_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def invalid(field: str, value: Any, message: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_show(value)}: {message}", field)


def required(field: str, message: str) -> Cause:
    return Cause("FieldValueRequired", f"Required value: {message}", field)


def forbidden(field: str, message: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {message}", field)


def duplicate(field: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {_show(value)}", field)


def not_supported(field: str, value: Any, allowed: tuple[str, ...]) -> Cause:
    options = ", ".join(f'"{a}"' for a in allowed)
    return Cause(
        "FieldValueNotSupported",
        f"Unsupported value: {_show(value)}: supported values: {options}",
        field,
    )


def validate_name(name: str, limit: int, kind: str) -> list[Cause]:
    out: list[Cause] = []
    if len(name) > limit:
        out.append(
            invalid("metadata.name", name, f"a {kind} name must be no more than {limit} characters")
        )
    if not naming.is_dns1035_label(name):
        out.append(
            invalid(
                "metadata.name",
                name,
                f"a {kind} name must be a DNS-1035 label: lower-case letters, digits and '-', "
                "starting with a letter and ending with a letter or digit",
            )
        )
    return out


def _containers(group: dict[str, Any]) -> list[dict[str, Any]]:
    return ((group.get("template") or {}).get("spec") or {}).get("containers") or []


def _group_rules(
    group: dict[str, Any], path: str, spec: dict[str, Any], is_head: bool
) -> list[Cause]:
    out: list[Cause] = []
    if not _containers(group):
        out.append(
            required(
                f"{path}.template.spec.containers",
                "the Ray pod template needs at least one container (containers[0] runs Ray)",
            )
        )
    params = group.get("rayStartParams") or {}
    if "labels" in params:
        out.append(
            forbidden(
                f"{path}.rayStartParams.labels",
                f"set Ray node labels with {path}.labels, not rayStartParams.labels",
            )
        )
    if group.get("resources"):
        clash = [p for p in _RESOURCE_PARAMS if p in params]
        if clash:
            out.append(
                forbidden(
                    f"{path}.resources",
                    f"{path}.resources cannot be combined with rayStartParams {', '.join(clash)}",
                )
            )
    if is_head:
        return out
    for key in ("minReplicas", "maxReplicas"):
        if group.get(key) is None:
            out.append(required(f"{path}.{key}", f"{key} must be set"))
    for key in ("replicas", "minReplicas", "maxReplicas", "numOfHosts"):
        value = group.get(key)
        if value is not None and value < 0:
            out.append(invalid(f"{path}.{key}", value, f"{key} must be non-negative"))
    lo, hi = group.get("minReplicas"), group.get("maxReplicas")
    if lo is not None and hi is not None and lo > hi:
        out.append(
            invalid(
                f"{path}.minReplicas",
                lo,
                f"minReplicas ({lo}) must not be greater than maxReplicas ({hi})",
            )
        )
    v2 = autoscaler_v2(spec)
    idle = group.get("idleTimeoutSeconds")
    if idle is not None:
        if idle < 0:
            out.append(
                invalid(
                    f"{path}.idleTimeoutSeconds", idle, "idleTimeoutSeconds must be non-negative"
                )
            )
        if not v2:
            out.append(
                forbidden(
                    f"{path}.idleTimeoutSeconds",
                    "idleTimeoutSeconds is only read by the Ray autoscaler v2; set autoscalerOptions.version: v2",
                )
            )
    priority = group.get("priority") or 0
    if priority != 0:
        if not v2:
            out.append(
                forbidden(
                    f"{path}.priority",
                    "a non-zero priority needs the Ray autoscaler v2 (autoscalerOptions.version: v2)",
                )
            )
        if not ray_version_at_least(spec.get("rayVersion"), (2, 56, 0)):
            out.append(
                forbidden(f"{path}.priority", "a non-zero priority needs rayVersion >= 2.56")
            )
    if group.get("suspend") and autoscaling_enabled(spec):
        out.append(
            forbidden(
                f"{path}.suspend",
                "suspending a worker group is not allowed with enableInTreeAutoscaling",
            )
        )
    return out


def validate_cluster_spec(
    spec: dict[str, Any],
    path: str = "spec",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    for_rayjob: bool = False,
) -> list[Cause]:
    labels, annotations = labels or {}, annotations or {}
    out: list[Cause] = []
    head = spec.get("headGroupSpec")
    if not head:
        return [required(f"{path}.headGroupSpec", "headGroupSpec must be set")]
    out += _group_rules(head, f"{path}.headGroupSpec", spec, is_head=True)
    seen: set[str] = set()
    for i, group in enumerate(spec.get("workerGroupSpecs") or []):
        gpath = f"{path}.workerGroupSpecs[{i}]"
        name = group.get("groupName", "")
        if name in seen:
            out.append(duplicate(f"{gpath}.groupName", name))
        seen.add(name)
        out += _group_rules(group, gpath, spec, is_head=False)
    out += _autoscaler_rules(spec, path)
    managed = spec.get("managedBy")
    if managed is not None and managed not in (c.MANAGED_BY_KUBERAY, c.MANAGED_BY_MULTIKUEUE):
        out.append(
            not_supported(
                f"{path}.managedBy", managed, (c.MANAGED_BY_KUBERAY, c.MANAGED_BY_MULTIKUEUE)
            )
        )
    if spec.get("gcsFaultToleranceOptions") is not None:
        for key in (c.FT_ENABLED_ANNOTATION, c.EXTERNAL_STORAGE_NS_ANNOTATION):
            if key in annotations:
                out.append(
                    forbidden(
                        f"metadata.annotations[{key}]",
                        f"the annotation {key} cannot be combined with {path}.gcsFaultToleranceOptions",
                    )
                )
    if spec.get("upgradeStrategy") is not None:
        origin = "RayJob" if for_rayjob else labels.get(c.ORIGIN_CRD_LABEL)
        if origin in ("RayJob", "RayService"):
            out.append(
                forbidden(
                    f"{path}.upgradeStrategy",
                    f"upgradeStrategy is not allowed on a RayCluster created by a {origin}",
                )
            )
    return out


def _autoscaler_rules(spec: dict[str, Any], path: str) -> list[Cause]:
    out: list[Cause] = []
    version = (spec.get("autoscalerOptions") or {}).get("version")
    head_containers = _containers(spec.get("headGroupSpec") or {})
    if (
        version
        and head_containers
        and env_value(head_containers[0], "RAY_enable_autoscaler_v2") is not None
    ):
        out.append(
            forbidden(
                f"{path}.autoscalerOptions.version",
                "autoscalerOptions.version cannot be combined with the head env var RAY_enable_autoscaler_v2",
            )
        )
    if autoscaler_v2(spec):
        groups = [("headGroupSpec", spec.get("headGroupSpec") or {})]
        groups += [
            (f"workerGroupSpecs[{i}]", g) for i, g in enumerate(spec.get("workerGroupSpecs") or [])
        ]
        for gpath, group in groups:
            policy = ((group.get("template") or {}).get("spec") or {}).get("restartPolicy")
            if policy not in (None, "", "Never"):
                out.append(
                    invalid(
                        f"{path}.{gpath}.template.spec.restartPolicy",
                        policy,
                        "the Ray autoscaler v2 needs restartPolicy Never (or unset)",
                    )
                )
    return out


def validate_raycluster(obj: dict[str, Any]) -> list[Cause]:
    meta = obj.get("metadata") or {}
    out = validate_name(meta.get("name", ""), c.MAX_CLUSTER_NAME, "RayCluster")
    out += validate_cluster_spec(
        obj.get("spec") or {},
        labels=meta.get("labels") or {},
        annotations=meta.get("annotations") or {},
    )
    return out


def cluster_warnings(spec: dict[str, Any], path: str = "spec") -> list[str]:
    """Accepted but surprising: ``replicas`` outside [minReplicas, maxReplicas], and
    (KubeRay's Warning event) autoscaler v1 with a worker restartPolicy other than Never."""
    out = []
    v1 = autoscaling_enabled(spec) and not autoscaler_v2(spec)
    for i, group in enumerate(spec.get("workerGroupSpecs") or []):
        policy = ((group.get("template") or {}).get("spec") or {}).get("restartPolicy")
        if v1 and policy not in (None, "", "Never"):
            out.append(
                f"{path}.workerGroupSpecs[{i}].template.spec.restartPolicy: {policy} with the "
                "autoscaler: a restarted worker container is not seen by the autoscaler; use Never"
            )
        replicas, lo, hi = group.get("replicas"), group.get("minReplicas"), group.get("maxReplicas")
        if replicas is None or lo is None or hi is None or lo > hi:
            continue
        if not lo <= replicas <= hi:
            out.append(
                f"{path}.workerGroupSpecs[{i}].replicas: {replicas} is outside "
                f"[minReplicas {lo}, maxReplicas {hi}]; the operator will run "
                f"{max(lo, min(replicas, hi))} replicas but Volcano's minResources counts {replicas}"
            )
    return out
