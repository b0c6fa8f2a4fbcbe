"""The vcjob plugins that shape pods and add helper objects: ``env`` and ``svc``.

* ``env``: every container learns its index in the task (``VK_TASK_INDEX`` and
  ``VC_TASK_INDEX``).
* ``svc``: a headless Service named after the job gives each pod a stable DNS name
  ``<pod>.<job>``; a ConfigMap ``<job>-svc`` lists them per task (``<task>.host`` files
  mounted at ``/etc/volcano``, plus ``VC_<TASK>_HOSTS``/``VC_<TASK>_NUM`` exposed as env);
  a NetworkPolicy lets only the job's own pods reach them (``--disable-network-policy``
  turns it off, ``--publish-not-ready-addresses`` publishes pods before they are ready).
"""

from __future__ import annotations

from lahar.volcano import constants as c
from lahar.volcano.jobs import spec as js
from lahar.volcano.jobs.spec import Obj

CONFIGMAP_MOUNT_PATH = "/etc/volcano"


def _has_flag(args: list[str], flag: str) -> bool:
    return any(a in (f"--{flag}", f"--{flag}=true") for a in args)


def plugins(job: Obj) -> dict[str, list[str]]:
    return dict((job.get("spec") or {}).get("plugins") or {})


def _containers(pod: Obj) -> list[Obj]:
    s = pod.setdefault("spec", {})
    return [*(s.get("containers") or []), *(s.get("initContainers") or [])]


def env_on_pod(pod: Obj, index: int) -> None:
    for container in _containers(pod):
        env = container.setdefault("env", [])
        env.append({"name": "VK_TASK_INDEX", "value": str(index)})
        env.append({"name": "VC_TASK_INDEX", "value": str(index)})


def svc_configmap_name(job: Obj) -> str:
    return f"{js.name(job)}-svc"


def hosts(job: Obj) -> dict[str, str]:
    """The hosts ConfigMap's data."""
    data: dict[str, str] = {}
    for i, task in enumerate(js.tasks(job)):
        tname = js.task_name(task, i)
        pod_spec = (task.get("template") or {}).get("spec") or {}
        fixed_host, subdomain = (
            pod_spec.get("hostname") or "",
            pod_spec.get("subdomain") or js.name(job),
        )
        names: list[str] = []
        for index in range(js.replicas(task)):
            names.append(
                f"{fixed_host or js.make_pod_name(js.name(job), tname, index)}.{subdomain}"
            )
            if fixed_host:
                break
        data[f"{tname.replace('-', '_')}.host"] = "\n".join(names)
        data[f"VC_{js.env_key(tname)}_HOSTS"] = ",".join(names)
        data[f"VC_{js.env_key(tname)}_NUM"] = str(len(names))
    return data


def svc_on_pod(pod: Obj, job: Obj) -> None:
    s = pod.setdefault("spec", {})
    if not s.get("hostname"):
        s["hostname"] = pod["metadata"]["name"]
    if not s.get("subdomain"):
        s["subdomain"] = js.name(job)
    cm = svc_configmap_name(job)
    host_env: list[Obj] = []
    for i, task in enumerate(js.tasks(job)):
        key = js.env_key(js.task_name(task, i))
        for env_name in (f"VC_{key}_HOSTS", f"VC_{key}_NUM"):
            host_env.append(
                {"name": env_name, "valueFrom": {"configMapKeyRef": {"name": cm, "key": env_name}}}
            )
    s.setdefault("volumes", []).append({"name": cm, "configMap": {"name": cm}})
    for container in _containers(pod):
        container.setdefault("env", []).extend(dict(e) for e in host_env)
        container.setdefault("volumeMounts", []).append(
            {"name": cm, "mountPath": CONFIGMAP_MOUNT_PATH}
        )


def svc_objects(job: Obj) -> list[Obj]:
    """The ConfigMap, headless Service and (unless disabled) NetworkPolicy of ``svc``."""
    args = plugins(job).get("svc") or []
    selector = {c.JOB_NAME_KEY: js.name(job), c.JOB_NAMESPACE_KEY: js.namespace(job)}

    def meta(name: str) -> Obj:
        return {
            "name": name,
            "namespace": js.namespace(job),
            "ownerReferences": [js.owner_reference(job)],
        }

    out: list[Obj] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(svc_configmap_name(job)),
            "data": hosts(job),
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta(js.name(job)),
            "spec": {
                "clusterIP": "None",
                "selector": dict(selector),
                "publishNotReadyAddresses": _has_flag(args, "publish-not-ready-addresses"),
                "ports": [
                    {"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}
                ],
            },
        },
    ]
    if not _has_flag(args, "disable-network-policy"):
        out.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": meta(js.name(job)),
                "spec": {
                    "podSelector": {"matchLabels": dict(selector)},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": dict(selector)}}]}],
                    "policyTypes": ["Ingress"],
                },
            }
        )
    return out


def plugin_objects(job: Obj) -> list[Obj]:
    return svc_objects(job) if "svc" in plugins(job) else []


def apply_pod_plugins(pod: Obj, job: Obj, index: int) -> None:
    active = plugins(job)
    if "env" in active:
        env_on_pod(pod, index)
    if "svc" in active:
        svc_on_pod(pod, job)
