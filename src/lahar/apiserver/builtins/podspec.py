"""Validation of a PodSpec, shared by Pods and by pod templates (Jobs).

Covers what users of a batch system actually trip over: missing or duplicate
containers, names, images, ports, environment variables, volumes and their
mounts, resource requests above limits, enum fields (restart and DNS policy),
node selectors, tolerations and basic affinity. Field paths and messages mirror
kube-apiserver so kubectl output matches a real cluster. Security-context and
exotic volume-source details are deliberately not validated.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names, quantities, scheduling
from lahar.apiserver.builtins.metadata import validate_labels
from lahar.apiserver.errors import Cause

VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO",
    "storageos", "csi", "ephemeral", "image",
)  # fmt: skip
RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]
_MAX_INT32 = 2**31 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_pod_spec(spec: Any, path: str, *, is_pod: bool) -> list[Cause]:
    if not isinstance(spec, dict):
        return (
            [fe.required(fe.child(path, "containers"))]
            if spec is None
            else [fe.invalid(path, spec, "must be an object")]
        )
    causes: list[Cause] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        causes.append(fe.required(fe.child(path, "terminationGracePeriodSeconds")))
    volumes, vol_causes = validate_volumes(spec.get("volumes"), fe.child(path, "volumes"))
    causes += vol_causes
    containers = spec.get("containers")
    causes += _validate_containers(
        containers, volumes, fe.child(path, "containers"), init=False, is_pod=is_pod
    )
    taken = {c.get("name") for c in containers or [] if isinstance(c, dict)}
    causes += _validate_containers(
        spec.get("initContainers"),
        volumes,
        fe.child(path, "initContainers"),
        init=True,
        is_pod=is_pod,
        taken=taken,
    )
    causes += _enum(spec.get("restartPolicy"), fe.child(path, "restartPolicy"), RESTART_POLICIES)
    causes += _enum(spec.get("dnsPolicy"), fe.child(path, "dnsPolicy"), DNS_POLICIES)
    causes += validate_labels(spec.get("nodeSelector"), fe.child(path, "nodeSelector"))
    for field in ("serviceAccountName", "nodeName", "priorityClassName"):
        value = spec.get(field)
        if value:
            causes += [
                fe.invalid(fe.child(path, field), value, m)
                for m in names.dns1123_subdomain(str(value))
            ]
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not _is_int(deadline) or not 1 <= deadline <= _MAX_INT32):
        causes.append(
            fe.invalid(
                fe.child(path, "activeDeadlineSeconds"), deadline, names.range_error(1, _MAX_INT32)
            )
        )
    for field in ("hostname", "subdomain"):
        if spec.get(field):
            causes += [
                fe.invalid(fe.child(path, field), spec[field], m)
                for m in names.dns1123_label(str(spec[field]))
            ]
    causes += scheduling.validate_tolerations(
        spec.get("tolerations"), fe.child(path, "tolerations")
    )
    if spec.get("preemptionPolicy") is not None:
        causes += _enum(
            spec["preemptionPolicy"], fe.child(path, "preemptionPolicy"), PREEMPTION_POLICIES
        )
    causes += scheduling.validate_scheduling_gates(
        spec.get("schedulingGates"), fe.child(path, "schedulingGates")
    )
    causes += scheduling.validate_node_affinity(spec.get("affinity"), fe.child(path, "affinity"))
    return causes


def _enum(value: Any, path: str, supported: list[str]) -> list[Cause]:
    if value in (None, ""):
        return [fe.required(path)]
    if value not in supported:
        return [fe.not_supported(path, value, supported)]
    return []


def validate_volumes(volumes: Any, path: str) -> tuple[set[str], list[Cause]]:
    """Names of the valid volumes, and the problems found."""
    causes: list[Cause] = []
    seen: set[str] = set()
    if volumes is None:
        return seen, causes
    if not isinstance(volumes, list):
        return seen, [fe.invalid(path, volumes, "must be a list")]
    for i, vol in enumerate(volumes):
        vol_path = fe.index(path, i)
        if not isinstance(vol, dict):
            causes.append(fe.invalid(vol_path, vol, "must be an object"))
            continue
        name = vol.get("name") or ""
        vol_causes: list[Cause] = []
        if not name:
            vol_causes.append(fe.required(fe.child(vol_path, "name")))
        else:
            vol_causes += [
                fe.invalid(fe.child(vol_path, "name"), name, m) for m in names.dns1123_label(name)
            ]
        if name and name in seen:
            vol_causes.append(fe.duplicate(fe.child(vol_path, "name"), name))
        sources = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        for extra in sources[1:]:
            vol_causes.append(
                fe.forbidden(fe.child(vol_path, extra), "may not specify more than 1 volume type")
            )
        if not sources:
            vol_causes.append(fe.required(vol_path, "must specify a volume type"))
        if vol.get("hostPath") is not None and not (vol["hostPath"] or {}).get("path"):
            vol_causes.append(fe.required(fe.child(vol_path, "hostPath", "path")))
        for ref in ("configMap", "secret", "persistentVolumeClaim"):
            src = vol.get(ref)
            field = {
                "configMap": "name",
                "secret": "secretName",
                "persistentVolumeClaim": "claimName",
            }[ref]
            if isinstance(src, dict) and not src.get(field):
                vol_causes.append(fe.required(fe.child(vol_path, ref, field)))
        causes += vol_causes
        if name:
            seen.add(name)
    return seen, causes


def _validate_containers(
    containers: Any,
    volumes: set[str],
    path: str,
    *,
    init: bool,
    is_pod: bool,
    taken: set[Any] | None = None,
) -> list[Cause]:
    if not init and not containers:
        return [fe.required(path)]
    if containers is None:
        return []
    if not isinstance(containers, list):
        return [fe.invalid(path, containers, "must be a list")]
    causes: list[Cause] = []
    seen: set[Any] = set(taken or ())
    host_ports: set[str] = set()
    for i, ctr in enumerate(containers):
        ctr_path = fe.index(path, i)
        if not isinstance(ctr, dict):
            causes.append(fe.invalid(ctr_path, ctr, "must be an object"))
            continue
        causes += _validate_container(ctr, volumes, ctr_path, is_pod=is_pod)
        name = ctr.get("name")
        if name in seen:
            causes.append(fe.duplicate(fe.child(ctr_path, "name"), name))
        elif name:
            seen.add(name)
        policy = ctr.get("restartPolicy")
        if init and policy is not None and policy != "Always":
            causes.append(fe.not_supported(fe.child(ctr_path, "restartPolicy"), policy, ["Always"]))
        if not init and policy is not None:
            causes.append(
                fe.forbidden(
                    fe.child(ctr_path, "restartPolicy"), "may not be set for non-init containers"
                )
            )
        if init and policy != "Always":
            for probe in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(probe) is not None:
                    causes.append(
                        fe.forbidden(
                            fe.child(ctr_path, probe),
                            "may not be set for init containers without restartPolicy=Always",
                        )
                    )
        else:
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                causes += _validate_probe(ctr.get(probe), fe.child(ctr_path, probe))
        # Init containers run one at a time, so only regular ones share host ports.
        causes += _host_port_conflicts(ctr, ctr_path, set() if init else host_ports)
    return causes


def _host_port_conflicts(ctr: dict[str, Any], path: str, taken: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    for j, port in enumerate(ctr.get("ports") or []):
        if not isinstance(port, dict) or not port.get("hostPort"):
            continue
        key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{port['hostPort']}"
        if key in taken:
            causes.append(
                fe.duplicate(fe.child(fe.index(fe.child(path, "ports"), j), "hostPort"), key)
            )
        taken.add(key)
    return causes


def _validate_container(
    ctr: dict[str, Any], volumes: set[str], path: str, *, is_pod: bool
) -> list[Cause]:
    causes: list[Cause] = []
    name = ctr.get("name") or ""
    if not name:
        causes.append(fe.required(fe.child(path, "name")))
    else:
        causes += [
            fe.invalid(fe.child(path, "name"), name, m) for m in names.dns1123_label(str(name))
        ]
    image = ctr.get("image")
    if not image:
        causes.append(fe.required(fe.child(path, "image")))
    elif is_pod and isinstance(image, str) and image != image.strip():
        causes.append(
            fe.invalid(
                fe.child(path, "image"), image, "must not have leading or trailing whitespace"
            )
        )
    causes += _enum(
        ctr.get("terminationMessagePolicy"),
        fe.child(path, "terminationMessagePolicy"),
        TERMINATION_MESSAGE_POLICIES,
    )
    causes += _validate_ports(ctr.get("ports"), fe.child(path, "ports"))
    causes += _validate_env(ctr.get("env"), fe.child(path, "env"))
    causes += _validate_mounts(ctr.get("volumeMounts"), volumes, fe.child(path, "volumeMounts"))
    causes += _enum(ctr.get("imagePullPolicy"), fe.child(path, "imagePullPolicy"), PULL_POLICIES)
    causes += quantities.validate_requirements(ctr.get("resources"), fe.child(path, "resources"))
    return causes


def _validate_ports(ports: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, port in enumerate(ports or []):
        p = fe.index(path, i)
        if not isinstance(port, dict):
            causes.append(fe.invalid(p, port, "must be an object"))
            continue
        name = port.get("name")
        if name:
            problems = names.port_name(str(name))
            if problems:
                causes += [fe.invalid(fe.child(p, "name"), name, m) for m in problems]
            elif name in seen:
                causes.append(fe.duplicate(fe.child(p, "name"), name))
            seen.add(name)
        number = port.get("containerPort")
        if number in (None, 0):
            causes.append(fe.required(fe.child(p, "containerPort")))
        else:
            causes += [
                fe.invalid(fe.child(p, "containerPort"), number, m)
                for m in names.port_number(number)
            ]
        if port.get("hostPort") not in (None, 0):
            causes += [
                fe.invalid(fe.child(p, "hostPort"), port["hostPort"], m)
                for m in names.port_number(port["hostPort"])
            ]
        protocol = port.get("protocol")
        if not protocol:
            causes.append(fe.required(fe.child(p, "protocol")))
        elif protocol not in PROTOCOLS:
            causes.append(fe.not_supported(fe.child(p, "protocol"), protocol, PROTOCOLS))
    return causes


def _validate_env(env: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, var in enumerate(env or []):
        p = fe.index(path, i)
        if not isinstance(var, dict):
            causes.append(fe.invalid(p, var, "must be an object"))
            continue
        name = var.get("name") or ""
        if not name:
            causes.append(fe.required(fe.child(p, "name")))
        else:
            causes += [
                fe.invalid(fe.child(p, "name"), name, m) for m in names.env_var_name(str(name))
            ]
        source = var.get("valueFrom")
        if source is None:
            continue
        kinds = [
            k
            for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
            if source.get(k)
        ]
        vf = fe.child(p, "valueFrom")
        if not kinds:
            causes.append(
                fe.invalid(
                    vf,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                    "or `secretKeyRef`",
                )
            )
        elif var.get("value"):
            causes.append(fe.invalid(vf, "", "may not be specified when `value` is not empty"))
        elif len(kinds) > 1:
            causes.append(
                fe.invalid(vf, "", "may not have more than one field specified at a time")
            )
        for ref in ("configMapKeyRef", "secretKeyRef"):
            sel = source.get(ref)
            if isinstance(sel, dict) and not sel.get("key"):
                causes.append(fe.required(fe.child(vf, ref, "key")))
    return causes


def _validate_mounts(mounts: Any, volumes: set[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    points: set[str] = set()
    for i, mount in enumerate(mounts or []):
        p = fe.index(path, i)
        if not isinstance(mount, dict):
            causes.append(fe.invalid(p, mount, "must be an object"))
            continue
        name = mount.get("name") or ""
        if not name:
            causes.append(fe.required(fe.child(p, "name")))
        if name not in volumes:
            causes.append(fe.not_found(fe.child(p, "name"), name))
        point = mount.get("mountPath") or ""
        if not point:
            causes.append(fe.required(fe.child(p, "mountPath")))
        if point in points:
            causes.append(fe.invalid(fe.child(p, "mountPath"), point, "must be unique"))
        points.add(point)
    return causes


def _validate_probe(probe: Any, path: str) -> list[Cause]:
    if probe is None:
        return []
    if not isinstance(probe, dict):
        return [fe.invalid(path, probe, "must be an object")]
    causes: list[Cause] = []
    handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(h) is not None]
    for extra in handlers[1:]:
        causes.append(
            fe.forbidden(fe.child(path, extra), "may not specify more than 1 handler type")
        )
    if not handlers:
        causes.append(fe.required(path, "must specify a handler type"))
    for field in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        causes += fe.nonnegative(fe.child(path, field), probe.get(field))
    return causes
