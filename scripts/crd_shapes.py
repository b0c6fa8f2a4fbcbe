"""The spec and status shapes of lahar's CRDs, in a compact notation.

``scripts/gen_crds.py`` expands these into the openAPIV3Schema of each
CustomResourceDefinition. The facts were read from the upstream API types
(ray-project/kuberay ``ray-operator/apis/ray/v1`` at v1.7, volcano-sh/apis
``batch/v1alpha1`` and ``scheduling/v1beta1``); the notation is ours:

* a ``dict`` is an object; a key ending in ``!`` is required;
* a one-element ``list`` is an array of that element;
* a string is a leaf: ``str i32 i64 int num bool time qty smap rlist``, or
  ``enum:a|b``; ``=value`` adds a default (read as YAML) and ``;key=value``
  adds a keyword (``min max minlen maxlen minitems pattern``);
* ``K("io.k8s...")`` inlines a Kubernetes type (from lightkube-models via
  ``lahar.apiserver.schema.builtin``), ``Raw({...})`` is used as written and
  ``With(shape, **keywords)`` adds keywords (CEL rules, list types) to a shape.
"""

from __future__ import annotations

import warnings
from typing import Any

import yaml

Schema = dict[str, Any]

QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
PATTERNS = {
    "DNS": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    "LABEL": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    "NOCOLON": r"^[^:]+$",
}
_LEAVES: dict[str, Schema] = {
    "str": {"type": "string"},
    "i32": {"type": "integer", "format": "int32"},
    "i64": {"type": "integer", "format": "int64"},
    "int": {"type": "integer"},
    "num": {"type": "number"},
    "bool": {"type": "boolean"},
    "time": {"type": "string", "format": "date-time"},
    "qty": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY,
        "x-kubernetes-int-or-string": True,
    },
}
_KEYWORDS = {
    "min": "minimum",
    "max": "maximum",
    "minlen": "minLength",
    "maxlen": "maxLength",
    "minitems": "minItems",
    "pattern": "pattern",
}


class Raw(dict):  # type: ignore[type-arg]
    """A schema fragment used as written."""


class K(str):
    """The name of a Kubernetes definition to inline (``io.k8s.api.core.v1.Service``)."""


class With:
    """A shape plus extra schema keywords (CEL rules, list-map keys, ...)."""

    def __init__(self, shape: Any, **extra: Any) -> None:
        self.shape, self.extra = shape, extra


_warned: set[str] = set()


def inline(definition: str) -> Schema:
    """The inlined schema of a Kubernetes type, or an open object until one exists."""
    try:
        from lahar.apiserver.schema.builtin import inline_schema

        return inline_schema(definition, descriptions=False)
    except (ImportError, KeyError) as exc:
        if definition not in _warned:
            _warned.add(definition)
            warnings.warn(f"{definition}: no inlined schema ({exc}); open object", stacklevel=2)
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def leaf(text: str) -> Schema:
    head, *options = text.split(";")
    base, _, default = head.partition("=")
    if base.startswith("enum:"):
        out: Schema = {"type": "string", "enum": base[5:].split("|")}
    elif base == "smap":
        out = {"type": "object", "additionalProperties": {"type": "string"}}
    elif base == "rlist":
        out = {"type": "object", "additionalProperties": dict(_LEAVES["qty"])}
    else:
        out = dict(_LEAVES[base])
    if default:
        out["default"] = yaml.safe_load(default)
    for option in options:
        key, _, value = option.partition("=")
        out[_KEYWORDS[key]] = PATTERNS.get(value, value) if key == "pattern" else int(value)
    return out


def expand(shape: Any) -> Schema:
    """Turn the compact notation into an OpenAPI v3 schema."""
    if isinstance(shape, With):
        return {**expand(shape.shape), **shape.extra}
    if isinstance(shape, Raw):
        return dict(shape)
    if isinstance(shape, K):
        return inline(str(shape))
    if isinstance(shape, str):
        return leaf(shape)
    if isinstance(shape, list):
        return {"type": "array", "items": expand(shape[0])}
    props = {k.rstrip("!"): expand(v) for k, v in shape.items()}
    out: Schema = {"type": "object", "properties": props}
    required = sorted(k.rstrip("!") for k in shape if k.endswith("!"))
    if required:
        out["required"] = required
    return out


def mapof(value: Any) -> With:
    return With(Raw({"type": "object"}), additionalProperties=expand(value))


def list_map(shape: Any, *keys: str) -> With:
    return With(
        [shape], **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}
    )


CORE = "io.k8s.api.core.v1"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
POD_TEMPLATE = K(f"{CORE}.PodTemplateSpec")
RESOURCES, ENV = K(f"{CORE}.ResourceRequirements"), K(f"{CORE}.EnvVar")
ATOMIC_STRINGS = With(["str"], **{"x-kubernetes-list-type": "atomic"})


def validations(*pairs: tuple[str, str]) -> dict[str, list[dict[str, str]]]:
    """``x-kubernetes-validations`` (CEL rules) with their messages."""
    return {"x-kubernetes-validations": [{"rule": r, "message": m} for r, m in pairs]}


# fmt: off
# --- KubeRay (ray.io/v1) ------------------------------------------------------------

MANAGED_BY = With("str", **validations(
    ("self == oldSelf", "the managedBy field is immutable"),
    ("self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",
     "the managedBy field value must be either 'ray.io/kuberay-operator' or "
     "'kueue.x-k8s.io/multikueue'"),
))
REDIS_CREDENTIAL = {"value": "str", "valueFrom": K(f"{CORE}.EnvVarSource")}
# networking/v1 is not among the built-in schemas, so its two rule types are written here.
POLICY_PEER = {
    "podSelector": K(f"{META}.LabelSelector"), "namespaceSelector": K(f"{META}.LabelSelector"),
    "ipBlock": {"cidr!": "str", "except": ATOMIC_STRINGS},
}
POLICY_PORTS = With([{"protocol": "str", "port": Raw({"x-kubernetes-int-or-string": True}),
                      "endPort": "i32"}], **{"x-kubernetes-list-type": "atomic"})
POLICY_RULES = {
    "ingressRules": [{"ports": POLICY_PORTS,
                      "from": With([POLICY_PEER], **{"x-kubernetes-list-type": "atomic"})}],
    "egressRules": [{"ports": POLICY_PORTS,
                     "to": With([POLICY_PEER], **{"x-kubernetes-list-type": "atomic"})}],
}
HEAD_GROUP = {
    "template!": POD_TEMPLATE, "headService": K(f"{CORE}.Service"), "enableIngress": "bool",
    "ingressOptions": {
        "host": "str", "path": "str", "pathType": "enum:Exact|Prefix|ImplementationSpecific",
        "tls": [{"hosts": ATOMIC_STRINGS, "secretName": "str"}],
    },
    "resources": "smap", "labels": "smap", "rayStartParams": "smap", "serviceType": "str",
}
WORKER_GROUP = {
    "suspend": "bool", "groupName!": "str", "replicas": "i32=0", "minReplicas!": "i32=0",
    "maxReplicas!": "i32=2147483647", "idleTimeoutSeconds": "i32", "priority": "i32=0",
    "resources": "smap", "labels": "smap", "rayStartParams": "smap", "template!": POD_TEMPLATE,
    "scaleStrategy": {"workersToDelete": ["str"]}, "numOfHosts": "i32=1",
}
AUTOSCALER = {
    "resources": RESOURCES, "image": "str", "imagePullPolicy": "str",
    "securityContext": K(f"{CORE}.SecurityContext"), "idleTimeoutSeconds": "i32",
    "upscalingMode": "enum:Default|Aggressive|Conservative", "version": "enum:v1|v2",
    "env": [ENV], "envFrom": [K(f"{CORE}.EnvFromSource")],
    "volumeMounts": [K(f"{CORE}.VolumeMount")], "command": ["str"], "args": ["str"],
}
GCS_FAULT_TOLERANCE = {
    "backend": With("enum:redis|rocksdb", **validations(
        ("self == oldSelf", "gcsFaultToleranceOptions.backend is immutable"))),
    "redisUsername": REDIS_CREDENTIAL, "redisPassword": REDIS_CREDENTIAL,
    "externalStorageNamespace": "str", "redisAddress": "str",
    "storage": {"claimName": "str", "size": "qty", "storageClassName": "str",
                "accessModes": ["str"], "subPath": "str",
                "deletionPolicy": "enum:DeleteWithCluster|Retain"},
}
RAY_CLUSTER_SPEC = {
    "upgradeStrategy": {"type": "enum:Recreate|None"},
    "authOptions": {"enableK8sTokenAuth": "bool", "secretName": "str",
                    "mode": "enum:disabled|token"},
    "suspend": "bool", "managedBy": MANAGED_BY, "autoscalerOptions": AUTOSCALER,
    "headServiceAnnotations": "smap", "enableInTreeAutoscaling": "bool",
    "gcsFaultToleranceOptions": GCS_FAULT_TOLERANCE,
    "historyServerOptions": {"collectorOptions": {
        "image": "str", "imagePullPolicy": "str", "resources": RESOURCES, "env": [ENV]}},
    "networkPolicy": {
        "mode": "enum:DenyAll|DenyAllIngress|DenyAllEgress=DenyAll",
        "head": POLICY_RULES, "worker": POLICY_RULES,
        "workerGroups": list_map({"groupName!": "str", **POLICY_RULES}, "groupName"),
    },
    "tlsOptions": {"enabled": "bool"},
    "headGroupSpec!": HEAD_GROUP, "rayVersion": "str", "workerGroupSpecs": [WORKER_GROUP],
}
RAY_CLUSTER_STATUS = {
    "state": "str", "reason": "str", "endpoints": "smap", "observedGeneration": "i64",
    "desiredCPU": "qty", "desiredMemory": "qty", "desiredGPU": "qty", "desiredTPU": "qty",
    "lastUpdateTime": With("time", nullable=True), "stateTransitionTimes": mapof("time"),
    "head": {"podIP": "str", "serviceIP": "str", "podName": "str", "serviceName": "str"},
    "conditions": list_map(K(f"{META}.Condition"), "type"),
    "readyWorkerReplicas": "i32", "availableWorkerReplicas": "i32",
    "desiredWorkerReplicas": "i32", "minWorkerReplicas": "i32", "maxWorkerReplicas": "i32",
}
DELETION_POLICY = "enum:DeleteCluster|DeleteWorkers|DeleteSelf|DeleteNone"
DELETION_CONDITION = With(
    {"jobStatus": "enum:SUCCEEDED|FAILED", "jobDeploymentStatus": "enum:Failed",
     "ttlSeconds": "i32=0;min=0"},
    **validations(
        ("!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
         "JobStatus and JobDeploymentStatus cannot be used together within the same "
         "deletion condition."),
        ("has(self.jobStatus) || has(self.jobDeploymentStatus)",
         "the deletion condition requires either the JobStatus or the JobDeploymentStatus "
         "field."),
    ),
)
DELETION_STRATEGY = With(
    {"onSuccess": {"policy": DELETION_POLICY}, "onFailure": {"policy": DELETION_POLICY},
     "deletionRules": With([{"policy!": DELETION_POLICY, "condition!": DELETION_CONDITION}],
                           minItems=1, **{"x-kubernetes-list-type": "atomic"})},
    **validations(
        ("!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
         "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together "
         "within the same deletionStrategy"),
        ("((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
         "deletionStrategy requires either BOTH onSuccess and onFailure, OR the "
         "deletionRules field (cannot be empty)"),
    ),
)
RAY_JOB_SPEC = {
    "activeDeadlineSeconds": "i32", "backoffLimit": "i32=0", "rayClusterSpec": RAY_CLUSTER_SPEC,
    "submitterPodTemplate": POD_TEMPLATE, "metadata": "smap", "clusterSelector": "smap",
    "submitterConfig": {"backoffLimit": "i32"}, "managedBy": MANAGED_BY,
    "deletionStrategy": DELETION_STRATEGY, "entrypoint": "str", "runtimeEnvYAML": "str",
    "jobId": "str", "submissionMode": "str=K8sJobMode", "entrypointResources": "str",
    "entrypointNumCpus": "num", "entrypointNumGpus": "num", "ttlSecondsAfterFinished": "i32=0",
    "preRunningDeadlineSeconds": "i32;min=1", "shutdownAfterJobFinishes": "bool",
    "suspend": "bool",
}
RAY_JOB_STATUS = {
    "rayJobInfo": {"startTime": "time", "endTime": "time"}, "jobId": "str",
    "rayClusterName": "str", "dashboardURL": "str", "jobStatus": "str",
    "jobDeploymentStatus": "str", "reason": "str", "message": "str", "startTime": "time",
    "endTime": "time", "succeeded": "i32=0", "failed": "i32=0",
    "rayClusterStatus": RAY_CLUSTER_STATUS, "jobStatusCheckFailureStartTime": "time",
    "observedGeneration": "i64",
}

# --- Volcano (scheduling.volcano.sh/v1beta1, batch.volcano.sh/v1alpha1) --------------

TOPOLOGY = {"mode": "enum:hard|soft=hard", "highestTierAllowed": "int;min=0",
            "highestTierName": "str;maxlen=253;pattern=DNS"}
PODGROUP_SPEC = {
    "minMember": "i32=1;min=0", "minTaskMember": mapof("i32"), "queue": "str=default",
    "priorityClassName": "str", "minResources": "rlist", "networkTopology": TOPOLOGY,
    "subGroupPolicy": [{
        "name": "str", "networkTopology": TOPOLOGY, "subGroupSize": "i32",
        "minSubGroups": "i32=0", "labelSelector": K(f"{META}.LabelSelector"),
        "matchLabelKeys": ATOMIC_STRINGS,
    }],
}
PODGROUP_STATUS = {
    "phase": "str", "running": "i32", "succeeded": "i32", "failed": "i32",
    "conditions": [{"type": "str", "status": "str", "transitionID": "str", "reason": "str",
                    "message": "str", "lastTransitionTime": "time"}],
}
NODE_GROUPS = {"requiredDuringSchedulingIgnoredDuringExecution": ["str"],
               "preferredDuringSchedulingIgnoredDuringExecution": ["str"]}
QUEUE_SPEC = {
    "weight": "i32=1;min=1;max=65535", "capability": "rlist", "reclaimable": "bool=true",
    "extendClusters": [{"name": "str", "weight": "i32", "capacity": "rlist"}],
    "guarantee": {"resource": "rlist"},
    "affinity": {"nodeGroupAffinity": NODE_GROUPS, "nodeGroupAntiAffinity": NODE_GROUPS},
    "type": "str;maxlen=253", "parent": "str;maxlen=253;pattern=DNS", "deserved": "rlist",
    "priority": "i32", "dequeueStrategy": "enum:fifo|traverse=traverse",
}
QUEUE_STATUS = {
    "state": "enum:Open|Closed|Closing|Unknown", "unknown": "i32;min=0",
    "pending": "i32;min=0", "running": "i32;min=0", "inqueue": "i32;min=0",
    "completed": "i32;min=0", "reservation": {"nodes": ["str"], "resource": "rlist"},
    "allocated": "rlist",
}
LIFECYCLE_POLICY = {"action": "str", "event": "str", "events": ["str"], "exitCode": "i32",
                    "timeout": "str"}
VCJOB_TASK = {
    "name": "str;maxlen=63;pattern=LABEL", "replicas": "i32;min=0",
    "minAvailable": "i32;min=0", "template": POD_TEMPLATE, "policies": [LIFECYCLE_POLICY],
    "topologyPolicy": "enum:none|best-effort|restricted|single-numa-node",
    "maxRetry": "i32;min=0", "dependsOn": {"name": ["str"], "iteration": "str"},
    "partitionPolicy": {"totalPartitions!": "i32;min=1", "partitionSize!": "i32;min=1",
                        "networkTopology": TOPOLOGY, "minPartitions": "i32=0;min=0"},
}
VCJOB_SPEC = {
    "schedulerName": "str;maxlen=63", "minAvailable": "i32;min=0",
    "volumes": [{"mountPath!": "str;minlen=1;pattern=NOCOLON", "volumeClaimName": "str;maxlen=253",
                 "volumeClaim": K(f"{CORE}.PersistentVolumeClaimSpec")}],
    "tasks": With([VCJOB_TASK], minItems=1), "policies": [LIFECYCLE_POLICY],
    "plugins": mapof(["str"]), "runningEstimate": "str",
    "queue": "str=default;maxlen=253;pattern=DNS", "maxRetry": "i32=3;min=0",
    "ttlSecondsAfterFinished": "i32;min=0", "priorityClassName": "str;maxlen=253;pattern=DNS",
    "minSuccess": "i32;min=1", "networkTopology": TOPOLOGY,
}
VCJOB_PHASES = ("Pending|Aborting|Aborted|Running|Restarting|Completing|Completed|Terminating|"
                "Terminated|Failed")
VCJOB_STATUS = {
    "state": {"phase": f"enum:{VCJOB_PHASES}", "reason": "str", "message": "str",
              "lastTransitionTime": "time"},
    "minAvailable": "i32;min=0", "taskStatusCount": mapof({"phase": mapof("i32")}),
    "pending": "i32;min=0", "running": "i32;min=0", "succeeded": "i32;min=0",
    "failed": "i32;min=0", "terminating": "i32;min=0", "unknown": "i32;min=0",
    "version": "i32;min=0", "retryCount": "i32;min=0", "runningDuration": "str",
    "controlledResources": "smap", "conditions": [{"status!": "str", "lastTransitionTime": "time"}],
}
# fmt: on
