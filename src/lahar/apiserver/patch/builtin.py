"""Merge rules of the built-in kinds lahar serves.

Kubernetes declares, on each list field of its Go types, a strategic-merge-patch
strategy and merge key (``patchStrategy``/``patchMergeKey``) and a server-side
apply list type (``listType``/``listMapKey``); a few structs and maps are
declared atomic. This module restates those declarations for the kinds the
embedded server stores, as a table keyed by field path. Only lists that merge,
and objects that are maps or atomic, need an entry: anything not listed is an
atomic list (replaced whole by both engines) or a struct.

The PodSpec and Container tables are shared: a Job's ``spec.template.spec``
merges exactly like a Pod's ``spec``.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.patch.lists import FieldNode, ListSemantics, ListType, build


def _map_list(*keys: str, strategy: str = "merge", **defaults: Any) -> ListType:
    """A list of objects keyed by ``keys`` for apply, merged on ``keys[0]`` by SMP."""
    return ListType("map", keys, strategy, tuple(defaults.items()))


# Lists that strategic merge patch merges but server-side apply replaces whole
# (a pod's hostIPs, a job's conditions).
def _smp_only(key: str) -> ListType:
    return ListType("atomic", (key,), "merge")


MERGE_SET = ListType("set", (), "merge")  # list of scalars merged as a set by both engines
APPLY_SET = ListType("set")  # a set for apply, replaced whole by SMP

OBJECT_META: dict[str, Any] = {
    "labels": "map",
    "annotations": "map",
    "finalizers": MERGE_SET,
    # OwnerReference is an atomic struct: an item is owned as a whole.
    "ownerReferences": (_map_list("uid"), "atomic"),
}

_ENV_VAR: dict[str, Any] = {
    "valueFrom": {
        "configMapKeyRef": "atomic",
        "secretKeyRef": "atomic",
        "fieldRef": "atomic",
        "resourceFieldRef": "atomic",
    },
}

CONTAINER: dict[str, Any] = {
    "ports": (_map_list("containerPort", "protocol", protocol="TCP"), {}),
    "env": (_map_list("name"), _ENV_VAR),
    "volumeMounts": (_map_list("mountPath"), {}),
    "volumeDevices": (_map_list("devicePath"), {}),
    "resources": {
        "limits": "map",
        "requests": "map",
        "claims": (_map_list("name", strategy=""), {}),
    },
}

_POD_AFFINITY_TERM: dict[str, Any] = {"labelSelector": "atomic", "namespaceSelector": "atomic"}

POD_SPEC: dict[str, Any] = {
    "volumes": (_map_list("name", strategy="merge,retainKeys"), {}),
    "initContainers": (_map_list("name"), CONTAINER),
    "containers": (_map_list("name"), CONTAINER),
    "ephemeralContainers": (_map_list("name"), CONTAINER),
    "imagePullSecrets": (_map_list("name"), "atomic"),
    "hostAliases": (_map_list("ip"), {}),
    "topologySpreadConstraints": (
        _map_list("topologyKey", "whenUnsatisfiable"),
        {"labelSelector": "atomic"},
    ),
    "resourceClaims": (_map_list("name", strategy="merge,retainKeys"), {}),
    "schedulingGates": (_map_list("name"), {}),
    "nodeSelector": "atomic",
    "overhead": "map",
    "affinity": {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "atomic"},
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": (ListType(), _POD_AFFINITY_TERM),
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": (ListType(), _POD_AFFINITY_TERM),
        },
    },
}

POD_STATUS: dict[str, Any] = {
    "conditions": (_map_list("type"), {}),
    "podIPs": (_map_list("ip"), {}),
    "hostIPs": _smp_only("ip"),
    "resourceClaimStatuses": (_map_list("name", strategy="merge,retainKeys"), {}),
}

_CONDITIONS_BY_TYPE: dict[str, Any] = {"conditions": (_map_list("type"), {})}

POD_TEMPLATE: dict[str, Any] = {"metadata": OBJECT_META, "spec": POD_SPEC}

_KINDS: dict[tuple[str, str], dict[str, Any]] = {
    ("v1", "Namespace"): {"status": _CONDITIONS_BY_TYPE},
    ("v1", "Node"): {
        "spec": {"podCIDRs": MERGE_SET},
        "status": {
            "conditions": (_map_list("type"), {}),
            "addresses": (_map_list("type"), {}),
            "capacity": "map",
            "allocatable": "map",
        },
    },
    ("v1", "Pod"): {"spec": POD_SPEC, "status": POD_STATUS},
    ("v1", "PodTemplate"): {"template": POD_TEMPLATE},
    ("v1", "Service"): {
        "spec": {
            "ports": (_map_list("port", "protocol", protocol="TCP"), {}),
            "selector": "atomic",
        },
        "status": _CONDITIONS_BY_TYPE,
    },
    ("v1", "Endpoints"): {},
    ("v1", "ConfigMap"): {"data": "map", "binaryData": "map"},
    ("v1", "Secret"): {"data": "map", "stringData": "map"},
    ("v1", "ServiceAccount"): {"secrets": (_map_list("name"), "atomic")},
    ("v1", "Event"): {"involvedObject": "atomic", "related": "atomic"},
    ("events.k8s.io/v1", "Event"): {"regarding": "atomic", "related": "atomic"},
    ("coordination.k8s.io/v1", "Lease"): {},
    ("batch/v1", "Job"): {
        "spec": {
            "selector": "atomic",
            "template": POD_TEMPLATE,
            "podFailurePolicy": {"rules": (ListType(), {"onExitCodes": {"values": APPLY_SET}})},
        },
        "status": {
            "conditions": _smp_only("type"),
            "uncountedTerminatedPods": {"succeeded": APPLY_SET, "failed": APPLY_SET},
        },
    },
    ("scheduling.k8s.io/v1", "PriorityClass"): {},
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): {
        "status": {"conditions": (_map_list("type", strategy=""), {})},
    },
}


def object_meta_node() -> FieldNode:
    """The merge rules of ``metadata`` (ObjectMeta), shared by every kind."""
    return build(OBJECT_META)


def builtin_list_semantics(api_version: str, kind: str) -> ListSemantics:
    """Merge rules of a built-in kind; unknown kinds get ObjectMeta's rules only."""
    spec = dict(_KINDS.get((api_version, kind), {}))
    spec["metadata"] = OBJECT_META
    return ListSemantics(build(spec))


def is_builtin(api_version: str, kind: str) -> bool:
    """Whether this table knows the kind (the REST layer may still serve others)."""
    return (api_version, kind) in _KINDS
