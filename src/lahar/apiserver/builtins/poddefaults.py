"""Defaulting of a PodSpec, as the real server fills it in when decoding.

Applied to Pods and to pod templates alike: restart and DNS policy, scheduler
name, grace period, security context, per-container pull policy, termination
message settings, port protocols, probe timings, volume modes, env field
selectors, and canonical resource quantities. Pod-only extras (requests copied
from limits, service links, host-network ports) run only when ``is_pod`` is set,
exactly as upstream keeps them out of templates.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import quantities
from lahar.apiserver.builtins.podspec import VOLUME_SOURCES

DEFAULT_GRACE_SECONDS = 30
DEFAULT_SCHEDULER = "default-scheduler"
_VOLUME_DEFAULT_MODE = 420  # 0644
_SOURCES_WITH_MODE = ("secret", "configMap", "downwardAPI", "projected")


def image_tag(image: str) -> str:
    """The tag of an image reference: ``""`` with a digest, ``latest`` if absent."""
    if "@" in image:
        name, _, _ = image.partition("@")
        last = name.rsplit("/", 1)[-1]
        return last.split(":", 1)[1] if ":" in last else ""
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


def pull_policy_for(image: str) -> str:
    return "Always" if image and image_tag(image) == "latest" else "IfNotPresent"


def default_pod_spec(spec: dict[str, Any], *, is_pod: bool) -> None:
    """Fill defaults into ``spec`` in place."""
    for field, value in (
        ("dnsPolicy", "ClusterFirst"),
        ("restartPolicy", "Always"),
        ("schedulerName", DEFAULT_SCHEDULER),
    ):
        if not spec.get(field):
            spec[field] = value
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_GRACE_SECONDS
    # The v1 API mirrors serviceAccountName into the deprecated serviceAccount.
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for vol in spec.get("volumes") or []:
        if isinstance(vol, dict):
            _default_volume(vol)
    host_network = bool(spec.get("hostNetwork"))
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for ctr in spec.get(field) or []:
            if isinstance(ctr, dict):
                _default_container(ctr, is_pod=is_pod, host_network=host_network)
    if is_pod and spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True


def _default_volume(vol: dict[str, Any]) -> None:
    if not any(vol.get(s) is not None for s in VOLUME_SOURCES):
        vol["emptyDir"] = {}
    for source in _SOURCES_WITH_MODE:
        src = vol.get(source)
        if isinstance(src, dict) and src.get("defaultMode") is None:
            src["defaultMode"] = _VOLUME_DEFAULT_MODE
    host_path = vol.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    projected = vol.get("projected")
    if isinstance(projected, dict):
        for item in projected.get("sources") or []:
            token = (item or {}).get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600
    downward = vol.get("downwardAPI")
    if isinstance(downward, dict):
        for item in downward.get("items") or []:
            _default_field_ref((item or {}).get("fieldRef"))


def _default_field_ref(ref: Any) -> None:
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for field, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(field):
            probe[field] = value
    _default_http_get(probe.get("httpGet"))


def _default_http_get(action: Any) -> None:
    if isinstance(action, dict):
        if not action.get("path"):
            action["path"] = "/"
        if not action.get("scheme"):
            action["scheme"] = "HTTP"


def _default_container(ctr: dict[str, Any], *, is_pod: bool, host_network: bool) -> None:
    if not ctr.get("imagePullPolicy"):
        ctr["imagePullPolicy"] = pull_policy_for(str(ctr.get("image") or ""))
    if not ctr.get("terminationMessagePath"):
        ctr["terminationMessagePath"] = "/dev/termination-log"
    if not ctr.get("terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    for port in ctr.get("ports") or []:
        if isinstance(port, dict):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if is_pod and host_network and not port.get("hostPort"):
                port["hostPort"] = port.get("containerPort")
    for var in ctr.get("env") or []:
        if isinstance(var, dict) and isinstance(var.get("valueFrom"), dict):
            _default_field_ref(var["valueFrom"].get("fieldRef"))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(ctr.get(probe))
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            _default_http_get((lifecycle.get(hook) or {}).get("httpGet"))
    resources = ctr.get("resources")
    if resources is None:
        ctr["resources"] = resources = {}
    if isinstance(resources, dict):
        quantities.canonicalize_requirements(resources)
        limits = resources.get("limits")
        if is_pod and isinstance(limits, dict) and limits:
            requests = resources.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)
