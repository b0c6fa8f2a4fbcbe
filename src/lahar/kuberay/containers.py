"""Pieces KubeRay injects into Ray pods: env vars, probes, volumes, extra containers.

Each function changes one pod or container dict in place and mirrors one rule of
kuberay-semantics.md §3.3: the env vars appended to the Ray container (some only
when absent, others always), the liveness/readiness probes (exec ``wget`` checks
before Ray 2.53, one HTTP check from 2.53 on), the ``/dev/shm`` memory volume, the
worker init container that waits for the GCS, and the autoscaler sidecar.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from lahar.kuberay import constants as c

SHM_VOLUME = "shared-mem"
LOG_VOLUME = "ray-logs"
SHELL = ["/bin/bash", "-c", "--"]
_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def ray_version_at_least(version: str | None, wanted: tuple[int, int, int]) -> bool:
    """Version check on ``rayVersion``; an unparsable or empty version is "too old"."""
    match = _VERSION.match(version or "")
    if not match:
        return False
    got = (int(match[1]), int(match[2]), int(match[3] or 0))
    return got >= wanted


def has_env(container: dict[str, Any], name: str) -> bool:
    return any(e.get("name") == name for e in container.get("env") or [])


def append_env(container: dict[str, Any], name: str, value: str | None = None, **src: Any) -> None:
    entry: dict[str, Any] = {"name": name}
    if value is not None:
        entry["value"] = value
    entry.update(src)
    container.setdefault("env", []).append(entry)


def field_ref(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def set_ray_env(
    container: dict[str, Any],
    node_type: str,
    *,
    head_fqdn: str,
    head_port: str,
    ray_start: str,
    creator: str,
) -> None:
    """Append the env vars KubeRay gives the Ray container, in KubeRay's order."""
    ip = "127.0.0.1"
    if node_type == "worker":
        ip = head_fqdn
        append_env(container, "FQ_RAY_IP", head_fqdn)
        append_env(container, "RAY_IP", head_fqdn.split(".")[0])
    append_env(
        container, "RAY_CLUSTER_NAME", valueFrom=field_ref(f"metadata.labels['{c.CLUSTER_LABEL}']")
    )
    append_env(container, "RAY_CLUSTER_NAMESPACE", valueFrom=field_ref("metadata.namespace"))
    append_env(container, "RAY_CLOUD_INSTANCE_ID", valueFrom=field_ref("metadata.name"))
    append_env(
        container, "RAY_NODE_TYPE_NAME", valueFrom=field_ref(f"metadata.labels['{c.GROUP_LABEL}']")
    )
    append_env(container, "KUBERAY_GEN_RAY_START_CMD", ray_start)
    if not has_env(container, "RAY_PORT"):
        append_env(container, "RAY_PORT", head_port)
    if not has_env(container, "RAY_ADDRESS"):
        append_env(container, "RAY_ADDRESS", f"{ip}:{head_port}")
    if not has_env(container, "RAY_USAGE_STATS_KUBERAY_IN_USE"):
        append_env(container, "RAY_USAGE_STATS_KUBERAY_IN_USE", "1")
    if node_type == "head":
        append_env(
            container,
            "RAY_USAGE_STATS_EXTRA_TAGS",
            f"kuberay_version={c.KUBERAY_VERSION};kuberay_crd={creator}",
        )
    if not has_env(container, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"):
        append_env(container, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1")


def set_init_container_env(container: dict[str, Any], head_fqdn: str) -> None:
    append_env(container, "FQ_RAY_IP", head_fqdn)
    append_env(container, "RAY_IP", head_fqdn.split(".")[0])


def _port_param(params: dict[str, str], key: str, default: int) -> int:
    try:
        value = int(params[key])
    except (KeyError, ValueError):
        return default
    return value if -(2**31) <= value < 2**31 else default


def _wget(timeout: int, port: int, path: str) -> str:
    return f"wget --tries 1 -T {timeout} -q -O- http://localhost:{port}/{path} | grep success"


def set_probes(
    container: dict[str, Any], node_type: str, params: dict[str, str], ray_version: str | None
) -> None:
    """Liveness and readiness probes, each only when the user set none."""
    agent_port = _port_param(params, "dashboard-agent-listen-port", c.DEFAULT_AGENT_PORT)
    if ray_version_at_least(ray_version, (2, 53, 0)):
        action: dict[str, Any] = {"httpGet": {"path": "/api/healthz", "port": agent_port}}
    else:
        checks = [_wget(2, agent_port, "api/local_raylet_healthz")]
        if node_type == "head":
            dash = _port_param(params, "dashboard-port", c.DEFAULT_DASHBOARD_PORT)
            checks.append(_wget(10, dash, "api/gcs_healthz"))
        action = {"exec": {"command": ["bash", "-c", " && ".join(checks)]}}
    timeout = 5 if node_type == "head" else 2
    if container.get("livenessProbe") is None:
        container["livenessProbe"] = {
            **copy.deepcopy(action),
            "initialDelaySeconds": 30,
            "timeoutSeconds": timeout,
            "periodSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": 120,
        }
    if container.get("readinessProbe") is None:
        container["readinessProbe"] = {
            **copy.deepcopy(action),
            "initialDelaySeconds": 10,
            "timeoutSeconds": timeout,
            "periodSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": 10,
        }


def _mounted(container: dict[str, Any], path: str) -> bool:
    return any(m.get("mountPath") == path for m in container.get("volumeMounts") or [])


def add_empty_dir(
    pod_spec: dict[str, Any], container: dict[str, Any], name: str, path: str, memory: bool
) -> None:
    """Mount an emptyDir at ``path`` unless something is mounted there already."""
    if _mounted(container, path):
        return
    if not any(v.get("name") == name for v in pod_spec.get("volumes") or []):
        empty: dict[str, Any] = {}
        if memory:
            empty["medium"] = "Memory"
            res = container.get("resources") or {}
            size = (res.get("limits") or {}).get("memory") or (res.get("requests") or {}).get(
                "memory"
            )
            if size is not None:
                empty["sizeLimit"] = size
        pod_spec.setdefault("volumes", []).append({"name": name, "emptyDir": empty})
    container.setdefault("volumeMounts", []).append({"mountPath": path, "name": name})


def ensure_metrics_port(container: dict[str, Any]) -> None:
    ports = container.setdefault("ports", [])
    if not any(p.get("name") == "metrics" for p in ports):
        ports.append({"name": "metrics", "containerPort": c.DEFAULT_METRICS_PORT})


# The init container's loop (our wording; same behaviour as KubeRay's): quiet for
# the first 120 s, then show health-check errors; poll every 5 s.
_WAIT_GCS = """
SECONDS=0
while true; do
  if (( SECONDS <= 120 )); then
    if ray health-check --address {addr} > /dev/null 2>&1; then echo "GCS is ready."; break; fi
    echo "$SECONDS s: waiting for the GCS at {addr}."
  else
    if ray health-check --address {addr}; then echo "GCS is ready (earlier errors can be ignored)."; break; fi
    echo "$SECONDS s: still waiting for the GCS at {addr}."
  fi
  sleep 5
done
"""


def wait_gcs_init_container(
    ray: dict[str, Any], head_fqdn: str, head_port: str, shell: list[str] | None = None
) -> dict[str, Any]:
    """``wait-gcs-ready``: same image, pull policy and securityContext as the Ray
    container, a copy of its env and mounts as they are now, 200m/256Mi."""
    init: dict[str, Any] = {"name": "wait-gcs-ready", "image": ray.get("image")}
    if ray.get("imagePullPolicy"):
        init["imagePullPolicy"] = ray["imagePullPolicy"]
    init["command"] = list(shell or SHELL)
    init["args"] = [_WAIT_GCS.format(addr=f"{head_fqdn}:{head_port}")]
    if ray.get("securityContext") is not None:
        init["securityContext"] = copy.deepcopy(ray["securityContext"])
    if ray.get("env"):
        init["env"] = copy.deepcopy(ray["env"])
    if ray.get("volumeMounts"):
        init["volumeMounts"] = copy.deepcopy(ray["volumeMounts"])
    fixed = {"cpu": "200m", "memory": "256Mi"}
    init["resources"] = {"limits": dict(fixed), "requests": dict(fixed)}
    return init


def autoscaler_container(
    image: str, options: dict[str, Any] | None, shell: list[str] | None = None
) -> dict[str, Any]:
    """The ``autoscaler`` sidecar, with ``autoscalerOptions`` applied on top."""
    opts = options or {}
    start = (
        "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
        "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
    )
    fixed = {"cpu": "500m", "memory": "512Mi"}
    container: dict[str, Any] = {
        "name": c.AUTOSCALER_CONTAINER,
        "image": opts.get("image") or image,
        "imagePullPolicy": opts.get("imagePullPolicy") or "IfNotPresent",
        "env": [
            {
                "name": "RAY_CLUSTER_NAME",
                "valueFrom": field_ref(f"metadata.labels['{c.CLUSTER_LABEL}']"),
            },
            {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": field_ref("metadata.namespace")},
            {"name": "RAY_HEAD_POD_NAME", "valueFrom": field_ref("metadata.name")},
            {"name": "KUBERAY_CRD_VER", "value": "v1"},
        ],
        "command": list(shell or SHELL),
        "args": [start],
        "resources": {"limits": dict(fixed), "requests": dict(fixed)},
    }
    if opts.get("resources") is not None:
        container["resources"] = copy.deepcopy(opts["resources"])
    if opts.get("env"):
        container["env"].extend(copy.deepcopy(opts["env"]))
    if opts.get("envFrom"):
        container["envFrom"] = copy.deepcopy(opts["envFrom"])
    if opts.get("volumeMounts"):
        container["volumeMounts"] = copy.deepcopy(opts["volumeMounts"])
    if opts.get("securityContext") is not None:
        container["securityContext"] = copy.deepcopy(opts["securityContext"])
    if opts.get("command"):
        container["command"] = list(opts["command"])
    if opts.get("args"):
        container["args"] = list(opts["args"])
    return container
