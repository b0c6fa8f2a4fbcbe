"""The ``ray start`` command KubeRay generates from rayStartParams and resources.

Order of operations (kuberay-semantics.md §1.1 and §3.3): the group's top-level
``resources``/``labels`` are written into the params, then the params are
defaulted (``dashboard-host``, ``address``, ``metrics-export-port``,
``dashboard-agent-listen-port``, ``block``, ``no-monitor``), then the Ray
container's resources fill ``num-cpus``/``memory``/``num-gpus`` and the custom
accelerator entry of ``resources``. Explicit params always win. The result is
rendered with sorted keys and a space on both sides of every flag, so the string
matches KubeRay's byte for byte (``KUBERAY_GEN_RAY_START_CMD`` exposes it).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from lahar.api.quantity import parse_quantity
from lahar.kuberay import constants as c

ULIMIT = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}"
_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")
# Custom accelerators written into the ``resources`` JSON (container name -> Ray name).
_ACCELERATORS = {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
# Values that are rendered as --key=value even when they are true/false.
_ALWAYS_VALUED = ("log-color", "include-dashboard", "include-log-monitor")


def is_gpu_key(name: str) -> bool:
    return name.endswith("gpu") or bool(_MIG.search(name))


def _ceil(quantity: Any) -> int:
    return math.ceil(parse_quantity(quantity))


def go_json_number(value: float) -> int | float:
    """Go's encoding/json prints a whole float64 without a fraction (4, not 4.0)."""
    return int(value) if float(value).is_integer() else float(value)


def go_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def head_port(cluster_spec: dict[str, Any]) -> str:
    params = (cluster_spec.get("headGroupSpec") or {}).get("rayStartParams") or {}
    return str(params.get("port", c.DEFAULT_GCS_PORT))


def apply_group_resources(
    params: dict[str, str], resources: dict[str, Any] | None, labels: dict[str, str] | None
) -> None:
    """Write a group's top-level Ray ``resources`` and ``labels`` into its params."""
    custom: dict[str, int | float] = {}
    for name, qty in sorted((resources or {}).items()):
        if name == "cpu":
            params["num-cpus"] = str(_ceil(qty))
        elif name == "memory":
            params["memory"] = str(_ceil(qty))
        elif is_gpu_key(name):
            params["num-gpus"] = str(_ceil(qty))
        else:
            custom[name] = go_json_number(float(parse_quantity(qty)))
    if custom:
        params["resources"] = f"'{go_json(custom)}'"
    if labels:
        params["labels"] = ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def default_params(
    params: dict[str, str],
    node_type: str,
    *,
    head_port: str,
    head_fqdn: str,
    autoscaling: bool,
) -> None:
    if node_type == "worker":
        params.setdefault("address", f"{head_fqdn}:{head_port}")
    else:
        params.setdefault("dashboard-host", "0.0.0.0")
        if autoscaling:
            params["no-monitor"] = "true"
    params.setdefault("metrics-export-port", str(c.DEFAULT_METRICS_PORT))
    params["block"] = "true"
    params.setdefault("dashboard-agent-listen-port", str(c.DEFAULT_AGENT_PORT))


def _resources_json(params: dict[str, str]) -> dict[str, Any] | None:
    text = params.get("resources")
    if text is None:
        return {}
    try:
        value = json.loads(text.strip("'\"` "))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _nonzero(qty: Any) -> bool:
    return qty is not None and parse_quantity(qty) != 0


def resource_params(params: dict[str, str], container: dict[str, Any]) -> None:
    """Fill num-cpus/memory/num-gpus/accelerators from the Ray container's resources."""
    res = container.get("resources") or {}
    limits = res.get("limits") or {}
    requests = res.get("requests") or {}
    if "num-cpus" not in params:
        if _nonzero(limits.get("cpu")):
            params["num-cpus"] = str(_ceil(limits["cpu"]))
        elif _nonzero(requests.get("cpu")):
            params["num-cpus"] = str(_ceil(requests["cpu"]))
    if "memory" not in params and _nonzero(limits.get("memory")):
        params["memory"] = str(_ceil(limits["memory"]))
    if not limits:
        return
    existing = _resources_json(params)
    if existing is None:
        # KubeRay logs the parse failure and skips GPUs and accelerators entirely.
        return
    accelerator_done = any(v in existing for v in _ACCELERATORS.values())
    for name in sorted(limits):
        qty = limits[name]
        if "num-gpus" not in params and is_gpu_key(name) and _nonzero(qty):
            params["num-gpus"] = str(_ceil(qty))
        if not accelerator_done and name in _ACCELERATORS and _nonzero(qty):
            ray_name = _ACCELERATORS[name]
            if ray_name not in existing:
                existing[ray_name] = go_json_number(float(parse_quantity(qty)))
                params["resources"] = f"'{go_json(existing)}'"
            accelerator_done = True


def render_flags(params: dict[str, str]) -> str:
    out = []
    for key in sorted(params):
        value = str(params[key])
        lowered = value.lower()
        if lowered in ("true", "false") and key not in _ALWAYS_VALUED:
            if lowered == "true":
                out.append(f" --{key} ")
        else:
            out.append(f" --{key}={value} ")
    return "".join(out)


def ray_start_command(node_type: str, params: dict[str, str]) -> str:
    if node_type == "head":
        return f"ray start --head {render_flags(params)}"
    return f"ray start {render_flags(params)}"


def container_command(user_command: list[str], user_args: list[str], ray_start: str) -> str:
    """``args[0]`` of the Ray container: the user's command and args in front, if any."""
    generated = f"{ULIMIT}; {ray_start}"
    prefix = "".join(f" {part} " for part in [*user_command, *user_args])
    return f"{prefix} && {generated}" if prefix else generated


def user_cmd_has_ray_start(container: dict[str, Any]) -> bool:
    joined = "".join(
        f" {p} " for p in [*(container.get("command") or []), *(container.get("args") or [])]
    )
    return "ray start" in joined
