"""Object-metadata helpers shared by the builders: owner references, copies.

Every child the operator creates carries a controller owner reference to its
parent, so Kubernetes garbage collection deletes the tree with the parent. The
helpers here build that reference the way controller-runtime's
``SetControllerReference`` does.
"""

from __future__ import annotations

import copy
from typing import Any


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def deep(value: Any) -> Any:
    return copy.deepcopy(value)


def name_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def namespace_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def annotations_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def ray_container(template: dict[str, Any]) -> dict[str, Any]:
    """``containers[0]`` of a pod template: "the Ray container" everywhere in KubeRay."""
    return template["spec"]["containers"][0]


def autoscaling_enabled(cluster_spec: dict[str, Any]) -> bool:
    return bool(cluster_spec.get("enableInTreeAutoscaling"))


def env_value(container: dict[str, Any], name: str) -> str | None:
    for env in container.get("env") or []:
        if env.get("name") == name:
            return str(env.get("value", ""))
    return None


def autoscaler_v2(cluster_spec: dict[str, Any]) -> bool:
    """Autoscaler v2: ``autoscalerOptions.version: v2`` or the head env var set to 1/true."""
    if not autoscaling_enabled(cluster_spec):
        return False
    if (cluster_spec.get("autoscalerOptions") or {}).get("version") == "v2":
        return True
    head = ((cluster_spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    containers = head.get("containers") or []
    if not containers:
        return False
    value = env_value(containers[0], "RAY_enable_autoscaler_v2")
    return value is not None and value.lower() in ("1", "true")
