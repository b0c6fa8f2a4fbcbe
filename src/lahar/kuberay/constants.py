"""Names KubeRay puts on objects: label and annotation keys, ports, fixed values.

They are part of the compatibility surface (users select pods by these labels,
dashboards read the annotations), so they live in one place and every builder
imports them from here.
"""

from __future__ import annotations

from typing import Final

# The KubeRay release whose behaviour lahar reproduces (shows up in annotations/env).
KUBERAY_VERSION: Final = "v1.7.0"
RAY_API_VERSION: Final = "ray.io/v1"
PODGROUP_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"

# Pod labels.
RAY_NODE_LABEL: Final = "ray.io/is-ray-node"
CLUSTER_LABEL: Final = "ray.io/cluster"
NODE_TYPE_LABEL: Final = "ray.io/node-type"
GROUP_LABEL: Final = "ray.io/group"
IDENTIFIER_LABEL: Final = "ray.io/identifier"
APP_NAME_LABEL: Final = "app.kubernetes.io/name"
CREATED_BY_LABEL: Final = "app.kubernetes.io/created-by"
APP_NAME: Final = "kuberay"
CREATED_BY: Final = "kuberay-operator"
REPLICA_INDEX_LABEL: Final = "ray.io/worker-group-replica-index"
REPLICA_NAME_LABEL: Final = "ray.io/worker-group-replica-name"
HOST_INDEX_LABEL: Final = "ray.io/replica-host-index"
HEADLESS_SVC_LABEL: Final = "ray.io/headless-worker-svc"
ORIGIN_NAME_LABEL: Final = "ray.io/originated-from-cr-name"
ORIGIN_CRD_LABEL: Final = "ray.io/originated-from-crd"
SUBMISSION_MODE_LABEL: Final = "ray.io/job-submission-mode"
HEAD_GROUP: Final = "headgroup"

# Annotations.
OVERWRITE_CMD_ANNOTATION: Final = "ray.io/overwrite-container-cmd"
SERVE_SERVICE_ANNOTATION: Final = "ray.io/enable-serve-service"
FT_ENABLED_ANNOTATION: Final = "ray.io/ft-enabled"
EXTERNAL_STORAGE_NS_ANNOTATION: Final = "ray.io/external-storage-namespace"
DISABLE_HEAD_RESTART_ANNOTATION: Final = "ray.io/disable-provisioned-head-restart"
KUBERAY_VERSION_ANNOTATION: Final = "ray.io/kuberay-version"
UPGRADE_HASH_ANNOTATION: Final = "ray.io/upgrade-strategy-recreate-hash"

# Ports and defaults that live in KubeRay's code, not in the CRD.
DEFAULT_GCS_PORT: Final = 6379
DEFAULT_DASHBOARD_PORT: Final = 8265
DEFAULT_CLIENT_PORT: Final = 10001
DEFAULT_METRICS_PORT: Final = 8080
DEFAULT_SERVE_PORT: Final = 8000
DEFAULT_AGENT_PORT: Final = 52365
DEFAULT_HEAD_PORTS: Final = {
    "client": DEFAULT_CLIENT_PORT,
    "gcs-server": DEFAULT_GCS_PORT,
    "dashboard": DEFAULT_DASHBOARD_PORT,
    "metrics": DEFAULT_METRICS_PORT,
    "serve": DEFAULT_SERVE_PORT,
}
CLUSTER_DOMAIN: Final = "cluster.local"
MAX_CLUSTER_NAME: Final = 53
MAX_RAYJOB_NAME: Final = 47
DEFAULT_SUBMITTER_BACKOFF_LIMIT: Final = 2
SUBMITTER_CONTAINER: Final = "ray-job-submitter"
AUTOSCALER_CONTAINER: Final = "autoscaler"
MANAGED_BY_KUBERAY: Final = "ray.io/kuberay-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
INT32_MAX: Final = 2147483647

SUBMISSION_MODES: Final = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
