"""Facts about the built-in types that lightkube-models does not carry.

The generated models lose three things the real OpenAPI document has: the list
semantics (``x-kubernetes-list-type``/``-list-map-keys``) that server-side apply
and CRD validation depend on, the value type of map fields (every map is a bare
``dict``), and the few defaults that list-map keys need in a structural schema
(a map key must be required or defaulted). They are small, stable tables, kept
here apart from the generator so they are easy to review against Kubernetes.
"""

from __future__ import annotations

from typing import Any

CORE = "io.k8s.api.core.v1"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
APIEXT = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
TIME = f"{META}.Time"
OBJECT_META = f"{META}.ObjectMeta"

_CONTAINER_LISTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "env": ("map", ("name",)),
    "ports": ("map", ("containerPort", "protocol")),
    "volumeMounts": ("map", ("mountPath",)),
    "volumeDevices": ("map", ("devicePath",)),
    "envFrom": ("atomic", ()),
    "args": ("atomic", ()),
    "command": ("atomic", ()),
    "resizePolicy": ("atomic", ()),
}

# (definition, field) -> (x-kubernetes-list-type, x-kubernetes-list-map-keys)
LIST_TYPES: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    **{(f"{CORE}.Container", k): v for k, v in _CONTAINER_LISTS.items()},
    **{(f"{CORE}.EphemeralContainer", k): v for k, v in _CONTAINER_LISTS.items()},
    (f"{CORE}.PodSpec", "containers"): ("map", ("name",)),
    (f"{CORE}.PodSpec", "initContainers"): ("map", ("name",)),
    (f"{CORE}.PodSpec", "ephemeralContainers"): ("map", ("name",)),
    (f"{CORE}.PodSpec", "volumes"): ("map", ("name",)),
    (f"{CORE}.PodSpec", "imagePullSecrets"): ("map", ("name",)),
    (f"{CORE}.PodSpec", "hostAliases"): ("map", ("ip",)),
    (f"{CORE}.PodSpec", "resourceClaims"): ("map", ("name",)),
    (f"{CORE}.PodSpec", "schedulingGates"): ("map", ("name",)),
    (f"{CORE}.PodSpec", "tolerations"): ("atomic", ()),
    (f"{CORE}.PodSpec", "topologySpreadConstraints"): (
        "map",
        ("topologyKey", "whenUnsatisfiable"),
    ),
    (f"{CORE}.PodStatus", "conditions"): ("map", ("type",)),
    (f"{CORE}.PodStatus", "podIPs"): ("map", ("ip",)),
    (f"{CORE}.PodStatus", "containerStatuses"): ("atomic", ()),
    (f"{CORE}.PodStatus", "initContainerStatuses"): ("atomic", ()),
    (f"{CORE}.NodeStatus", "conditions"): ("map", ("type",)),
    (f"{CORE}.NodeStatus", "addresses"): ("map", ("type",)),
    (f"{CORE}.NodeSpec", "taints"): ("atomic", ()),
    (f"{CORE}.NamespaceStatus", "conditions"): ("map", ("type",)),
    (f"{CORE}.ServiceSpec", "ports"): ("map", ("port", "protocol")),
    (f"{META}.ObjectMeta", "ownerReferences"): ("map", ("uid",)),
    (f"{META}.ObjectMeta", "finalizers"): ("set", ()),
    (f"{META}.ObjectMeta", "managedFields"): ("atomic", ()),
    ("io.k8s.api.batch.v1.JobStatus", "conditions"): ("atomic", ()),
    (f"{APIEXT}.CustomResourceDefinitionSpec", "versions"): ("atomic", ()),
    (f"{APIEXT}.CustomResourceDefinitionStatus", "conditions"): ("map", ("type",)),
}

# (definition, field) -> (x-kubernetes-patch-strategy, x-kubernetes-patch-merge-key): how
# strategic merge patch merges a list. kubectl reads these from /openapi/v3 to compute
# client-side apply patches; without them it treats every list as replaced whole.
PATCH_STRATEGIES: dict[tuple[str, str], tuple[str, str]] = {
    **{
        (f"{CORE}.{owner}", field): strategy
        for owner in ("Container", "EphemeralContainer")
        for field, strategy in {
            "ports": ("merge", "containerPort"),
            "env": ("merge", "name"),
            "volumeMounts": ("merge", "mountPath"),
            "volumeDevices": ("merge", "devicePath"),
        }.items()
    },
    (f"{CORE}.PodSpec", "containers"): ("merge", "name"),
    (f"{CORE}.PodSpec", "initContainers"): ("merge", "name"),
    (f"{CORE}.PodSpec", "ephemeralContainers"): ("merge", "name"),
    (f"{CORE}.PodSpec", "volumes"): ("merge,retainKeys", "name"),
    (f"{CORE}.PodSpec", "imagePullSecrets"): ("merge", "name"),
    (f"{CORE}.PodSpec", "hostAliases"): ("merge", "ip"),
    (f"{CORE}.PodSpec", "resourceClaims"): ("merge,retainKeys", "name"),
    (f"{CORE}.PodSpec", "schedulingGates"): ("merge", "name"),
    (f"{CORE}.PodSpec", "topologySpreadConstraints"): ("merge", "topologyKey"),
    (f"{CORE}.PodStatus", "conditions"): ("merge", "type"),
    (f"{CORE}.PodStatus", "podIPs"): ("merge", "ip"),
    (f"{CORE}.PodStatus", "hostIPs"): ("merge", "ip"),
    (f"{CORE}.NodeStatus", "conditions"): ("merge", "type"),
    (f"{CORE}.NodeStatus", "addresses"): ("merge", "type"),
    (f"{CORE}.NodeSpec", "podCIDRs"): ("merge", ""),
    (f"{CORE}.NamespaceStatus", "conditions"): ("merge", "type"),
    (f"{CORE}.ServiceSpec", "ports"): ("merge", "port"),
    (f"{CORE}.ServiceAccount", "secrets"): ("merge", "name"),
    (f"{META}.ObjectMeta", "ownerReferences"): ("merge", "uid"),
    (f"{META}.ObjectMeta", "finalizers"): ("merge", ""),
    ("io.k8s.api.batch.v1.JobStatus", "conditions"): ("merge", "type"),
}

# Lists whose duplicates Kubernetes accepts for built-in kinds (it only warns), so
# the validation schemas of :func:`builtin.schema_for` must not enforce uniqueness.
TOLERATES_DUPLICATES: frozenset[tuple[str, str]] = frozenset(
    (f"{CORE}.{kind}", name)
    for kind in ("Container", "EphemeralContainer")
    for name in ("env", "ports")
)

# Defaults that list-map keys rely on.
DEFAULTS: dict[tuple[str, str], Any] = {
    (f"{CORE}.ContainerPort", "protocol"): "TCP",
    (f"{CORE}.ServicePort", "protocol"): "TCP",
    (f"{CORE}.LocalObjectReference", "name"): "",
}

_QUANTITY_MAPS = frozenset(
    {
        "limits",
        "requests",
        "capacity",
        "allocatable",
        "hard",
        "used",
        "overhead",
        "allocatedResources",
        "default",
        "defaultRequest",
        "max",
        "min",
        "maxLimitRequestRatio",
        "podFixed",
    }
)


_BYTE_MAPS = frozenset({(f"{CORE}.Secret", "data"), (f"{CORE}.ConfigMap", "binaryData")})


def map_values(definition: str, field: str) -> dict[str, Any]:
    """The ``additionalProperties`` schema of a map field (``$ref`` or inline)."""
    if definition == f"{APIEXT}.JSONSchemaProps":
        if field in ("properties", "definitions", "patternProperties"):
            return {"$ref": f"#/components/schemas/{APIEXT}.JSONSchemaProps"}
        return {"$ref": f"#/components/schemas/{APIEXT}.JSONSchemaPropsOrStringArray"}
    if field in _QUANTITY_MAPS:
        return {"$ref": f"#/components/schemas/{QUANTITY}"}
    if field == "extra":
        return {"type": "array", "items": {"type": "string"}}
    if field == "disruptedPods":
        return {"$ref": f"#/components/schemas/{TIME}"}
    if (definition, field) in _BYTE_MAPS:
        return {"type": "string", "format": "byte"}
    return {"type": "string"}


# Descriptions of the special (alias) types, in our words.
SPECIAL_DESCRIPTIONS = {
    "Quantity": "A fixed-point number with an optional unit suffix, written as a string "
    '(for example "100m", "1.5Gi", "2") or a plain number.',
    "IntOrString": "A value that holds either an integer or a string.",
    "Time": "A timestamp in RFC 3339 form, with second precision.",
    "MicroTime": "A timestamp in RFC 3339 form, with microsecond precision.",
    "RawExtension": "An embedded object of any kind, kept as given.",
    "FieldsV1": "The set of fields owned by a field manager, in the FieldsV1 trie encoding.",
    "Patch": "A patch body; its content depends on the patch type.",
    "JSON": "Any JSON value.",
}
