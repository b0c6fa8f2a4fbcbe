"""The autoscaler's RBAC objects: ServiceAccount, Role and RoleBinding.

KubeRay creates them, named after the cluster, when ``enableInTreeAutoscaling`` is
on, so the autoscaler sidecar can read pods and patch its RayCluster. lahar builds
them the same way; note that lahar's embedded API server does not serve RBAC kinds
yet, so the operator will create these only on a real cluster.
"""

from __future__ import annotations

from typing import Any

from lahar.kuberay import constants as c
from lahar.kuberay import naming
from lahar.kuberay.meta import namespace_of, owner_reference


def _meta(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    cname = cluster["metadata"]["name"]
    return {
        "name": name,
        "namespace": namespace_of(cluster),
        "labels": {
            c.CLUSTER_LABEL: cname,
            c.APP_NAME_LABEL: c.APP_NAME,
            c.CREATED_BY_LABEL: c.CREATED_BY,
        },
        "ownerReferences": [owner_reference(cluster)],
    }


def build_autoscaler_rbac(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """ServiceAccount (unless the head template names its own), Role, RoleBinding."""
    name = cluster["metadata"]["name"]
    sa_name = naming.autoscaler_service_account(cluster)
    head_spec = cluster["spec"]["headGroupSpec"]["template"].get("spec") or {}
    out: list[dict[str, Any]] = []
    if not head_spec.get("serviceAccountName"):
        out.append(
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(cluster, sa_name)}
        )
    out.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(cluster, name),
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
            ],
        }
    )
    out.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(cluster, name),
            "subjects": [
                {"kind": "ServiceAccount", "name": sa_name, "namespace": namespace_of(cluster)}
            ],
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": naming.check_name(name),
            },
        }
    )
    return out
