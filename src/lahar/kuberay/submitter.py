"""The RayJob submitter: the ``ray job submit`` script, the K8sJobMode batch Job and
the SidecarMode container (kuberay-semantics.md §2.5).

The K8sJobMode script is idempotent for one submission id: it waits for the GCS to
be healthy through the dashboard, submits only if ``ray job status`` does not know
the id yet (so a retried pod never submits twice), then follows the logs. The id
is fixed per RayJob attempt (``status.jobId``).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from lahar.kuberay import constants as c
from lahar.kuberay.containers import ray_version_at_least
from lahar.kuberay.meta import deep, namespace_of, owner_reference
from lahar.kuberay.options import DEFAULT_OPTIONS, OperatorOptions
from lahar.kuberay.raystart import go_json

SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


class SubmitterError(ValueError):
    """The submit command cannot be built (KubeRay keeps the RayJob in Initializing)."""


def go_quote(text: str) -> str:
    """Double-quoted like Go's strconv.Quote (close enough for printable text)."""
    return json.dumps(text, ensure_ascii=False)


def runtime_env_json(runtime_env_yaml: str) -> str:
    try:
        value = yaml.safe_load(runtime_env_yaml)
    except yaml.YAMLError as exc:
        raise SubmitterError(f"spec.runtimeEnvYAML: not valid YAML: {exc}") from None
    return go_json(value)


def _gcs_probe(health_url: str) -> str:
    code = (
        "import sys, urllib.request; "
        f"sys.exit(0 if b'success' in urllib.request.urlopen('{health_url}', timeout=10).read() else 1)"
    )
    return f'python -c "{code}"'


def _submit_flags(rayjob: dict[str, Any], job_id: str) -> list[str]:
    spec = rayjob["spec"]
    flags: list[str] = []
    if spec.get("runtimeEnvYAML"):
        flags += ["--runtime-env-json", go_quote(runtime_env_json(spec["runtimeEnvYAML"]))]
    if spec.get("metadata"):
        version = (spec.get("rayClusterSpec") or {}).get("rayVersion")
        if version and not ray_version_at_least(version, (2, 6, 0)):
            raise SubmitterError(
                f"spec.metadata: --metadata-json needs Ray >= 2.6.0, rayVersion is {version!r}"
            )
        flags += ["--metadata-json", go_quote(go_json(spec["metadata"]))]
    if job_id:
        flags += ["--submission-id", job_id]
    if (spec.get("entrypointNumCpus") or 0) > 0:
        flags += ["--entrypoint-num-cpus", f"{float(spec['entrypointNumCpus']):f}"]
    if (spec.get("entrypointNumGpus") or 0) > 0:
        flags += ["--entrypoint-num-gpus", f"{float(spec['entrypointNumGpus']):f}"]
    if spec.get("entrypointResources"):
        flags += ["--entrypoint-resources", go_quote(spec["entrypointResources"])]
    return flags


def _wait_loop(address: str, health_url: str) -> list[str]:
    message = go_quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
    return ["until", _gcs_probe(health_url), ">/dev/null", "2>&1", ";", "do", "echo", message,
            ";", "sleep", "2", ";", "done", ";"]  # fmt: skip


def k8s_job_script(rayjob: dict[str, Any], dashboard_url: str, job_id: str) -> str:
    """``args[0]`` of the K8sJobMode submitter: wait, status-then-submit, follow logs."""
    address = dashboard_url if "://" in dashboard_url else f"http://{dashboard_url}"
    entrypoint = (rayjob["spec"].get("entrypoint") or "").strip()
    parts = _wait_loop(address, f"{address}/api/gcs_healthz")
    parts += ["if", "!", "ray", "job", "status", "--address", address, job_id,
              ">/dev/null", "2>&1", ";", "then", "ray", "job", "submit", "--address", address,
              "--no-wait", *_submit_flags(rayjob, job_id), "--", entrypoint, ";", "fi", ";"]  # fmt: skip
    parts += ["ray", "job", "logs", "--address", address, "--follow", job_id]
    return " ".join(parts)


def sidecar_script(rayjob: dict[str, Any], dashboard_port: int, job_id: str) -> str:
    """SidecarMode (gate SidecarSubmitterRestart off): wait, then submit in the foreground."""
    address = f"http://127.0.0.1:{dashboard_port}"
    entrypoint = (rayjob["spec"].get("entrypoint") or "").strip()
    parts = _wait_loop(address, f"http://localhost:{dashboard_port}/api/gcs_healthz")
    parts += ["ray", "job", "submit", "--address", address, *_submit_flags(rayjob, job_id),
              "--", entrypoint, ";"]  # fmt: skip
    return " ".join(parts)


def _submitter_env(container: dict[str, Any], dashboard_url: str, job_id: str) -> None:
    env = container.setdefault("env", [])
    env.append({"name": "PYTHONUNBUFFERED", "value": "1"})
    env.append({"name": "RAY_DASHBOARD_ADDRESS", "value": dashboard_url})
    env.append({"name": "RAY_JOB_SUBMISSION_ID", "value": job_id})


def _head_image(rayjob: dict[str, Any]) -> str:
    spec = rayjob["spec"].get("rayClusterSpec") or {}
    containers = spec.get("headGroupSpec", {}).get("template", {}).get("spec", {}).get("containers")
    return (containers or [{}])[0].get("image", "")


def default_submitter_container(
    image: str, script: str, options: OperatorOptions = DEFAULT_OPTIONS
) -> dict[str, Any]:
    return {
        "name": c.SUBMITTER_CONTAINER,
        "image": image,
        "command": options.submitter_shell(),
        "args": [script],
        "resources": deep(SUBMITTER_RESOURCES),
    }


def job_labels(rayjob: dict[str, Any]) -> dict[str, str]:
    """The three labels on the submitter Job and its pod template."""
    return {
        c.ORIGIN_NAME_LABEL: rayjob["metadata"]["name"],
        c.ORIGIN_CRD_LABEL: "RayJob",
        c.CREATED_BY_LABEL: c.CREATED_BY,
    }


def submitter_pod_template(
    rayjob: dict[str, Any],
    dashboard_url: str,
    job_id: str,
    options: OperatorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    """The user's ``submitterPodTemplate`` or the default pod, labels and env added."""
    origin = job_labels(rayjob)
    user = rayjob["spec"].get("submitterPodTemplate")
    script = k8s_job_script(rayjob, dashboard_url, job_id)
    if user:
        template = deep(user)
        container = template["spec"]["containers"][0]
        if not container.get("command"):
            container["command"] = options.submitter_shell()
            container["args"] = [script]
    else:
        container = default_submitter_container(_head_image(rayjob), script, options)
        template = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    _submitter_env(container, dashboard_url, job_id)
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **origin}
    return template


def build_submitter_job(
    rayjob: dict[str, Any],
    dashboard_url: str,
    job_id: str,
    hook: Any = None,
    options: OperatorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    """The K8sJobMode ``batch/v1`` Job named after the RayJob."""
    name = rayjob["metadata"]["name"]
    template = submitter_pod_template(rayjob, dashboard_url, job_id, options)
    if hook:
        hook(rayjob, template, "submittergroup")
    backoff = (rayjob["spec"].get("submitterConfig") or {}).get("backoffLimit")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace_of(rayjob),
            "labels": job_labels(rayjob),
            "ownerReferences": [owner_reference(rayjob)],
        },
        "spec": {
            "backoffLimit": c.DEFAULT_SUBMITTER_BACKOFF_LIMIT if backoff is None else int(backoff),
            "template": template,
        },
    }


def sidecar_container(
    rayjob: dict[str, Any],
    dashboard_port: int,
    job_id: str,
    options: OperatorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    container = default_submitter_container(
        _head_image(rayjob), sidecar_script(rayjob, dashboard_port, job_id), options
    )
    _submitter_env(container, "", job_id)
    return container
