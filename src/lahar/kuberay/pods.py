"""RayCluster -> head and worker Pods, field for field as KubeRay builds them.

The input is a RayCluster with CRD defaults applied, a namespace and a uid; the
output is Pod dicts ready to create (``metadata.generateName`` plus the ``name``
the server would assign, drawn from :class:`~lahar.kuberay.naming.Suffixes`).
The build follows KubeRay's two stages: first the template (labels,
rayStartParams defaults, annotations, autoscaler sidecar, GCS fault tolerance,
metrics port, init container), then the pod (``/dev/shm``, the generated
command, env vars, probes). A batch-scheduler hook may annotate the result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from lahar.kuberay import constants as c
from lahar.kuberay import containers as k
from lahar.kuberay import naming, raystart
from lahar.kuberay.meta import (
    annotations_of,
    autoscaler_v2,
    autoscaling_enabled,
    deep,
    labels_of,
    namespace_of,
    owner_reference,
)
from lahar.kuberay.options import DEFAULT_OPTIONS, OperatorOptions
from lahar.kuberay.resources import clamped_replicas, num_of_hosts

# (parent, pod, task/group name) -> None: Volcano's AddMetadataToChildResource.
PodHook = Callable[[dict[str, Any], dict[str, Any], str], None]


def creator_crd(cluster: dict[str, Any]) -> str:
    origin = labels_of(cluster).get(c.ORIGIN_CRD_LABEL)
    return origin if origin in ("RayJob", "RayService") else "RayCluster"


def ft_enabled(cluster: dict[str, Any]) -> bool:
    if (cluster.get("spec") or {}).get("gcsFaultToleranceOptions") is not None:
        return True
    return annotations_of(cluster).get(c.FT_ENABLED_ANNOTATION, "").lower() == "true"


def pod_labels(
    node_type: str, cluster_name: str, group: str, user: dict[str, str]
) -> dict[str, str]:
    labels = {
        c.RAY_NODE_LABEL: "yes",
        c.CLUSTER_LABEL: cluster_name,
        c.NODE_TYPE_LABEL: node_type,
        c.GROUP_LABEL: group,
        c.IDENTIFIER_LABEL: naming.check_label(f"{cluster_name}-{node_type}"),
        c.APP_NAME_LABEL: c.APP_NAME,
        c.CREATED_BY_LABEL: c.CREATED_BY,
    }
    for key, value in user.items():
        if key not in (c.NODE_TYPE_LABEL, c.GROUP_LABEL, c.CLUSTER_LABEL):
            labels[key] = value
    return labels


def spec_hash(cluster_spec: dict[str, Any]) -> str:
    """lahar's value for ``ray.io/upgrade-strategy-recreate-hash``: a digest of the spec
    without the fields KubeRay's hash ignores. Only ever compared with itself."""
    spec = deep(cluster_spec)
    spec.pop("upgradeStrategy", None)
    for group in spec.get("workerGroupSpecs") or []:
        for key in ("replicas", "minReplicas", "maxReplicas", "scaleStrategy"):
            group.pop(key, None)
        tspec = (group.get("template") or {}).get("spec") or {}
        tspec.pop("tolerations", None)
        tspec.pop("schedulingGates", None)
    head = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    head.pop("tolerations", None)
    head.pop("schedulingGates", None)
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    return digest[:32]


def _configure_ft(
    cluster: dict[str, Any], template: dict[str, Any], params: dict[str, str], node_type: str
) -> None:
    enabled = ft_enabled(cluster)
    annotations = template["metadata"].setdefault("annotations", {})
    if node_type == "head":
        annotations[c.FT_ENABLED_ANNOTATION] = "true" if enabled else "false"
    if not enabled:
        return
    container = template["spec"]["containers"][0]
    options = (cluster.get("spec") or {}).get("gcsFaultToleranceOptions")
    if node_type == "worker":
        if not k.has_env(container, "RAY_gcs_rpc_server_reconnect_timeout_s"):
            k.append_env(container, "RAY_gcs_rpc_server_reconnect_timeout_s", "600")
        return
    storage_ns = (cluster.get("metadata") or {}).get("uid", "")
    storage_ns = annotations_of(cluster).get(c.EXTERNAL_STORAGE_NS_ANNOTATION, storage_ns)
    if options and options.get("externalStorageNamespace"):
        storage_ns = options["externalStorageNamespace"]
    annotations[c.EXTERNAL_STORAGE_NS_ANNOTATION] = storage_ns
    if not k.has_env(container, "RAY_external_storage_namespace"):
        k.append_env(container, "RAY_external_storage_namespace", storage_ns)
    if options is not None:
        k.append_env(container, "RAY_REDIS_ADDRESS", options.get("redisAddress", ""))
        for key, env_name in (
            ("redisUsername", "REDIS_USERNAME"),
            ("redisPassword", "REDIS_PASSWORD"),
        ):
            source = options.get(key)
            if source is None:
                continue
            params[f"redis-{key[5:].lower()}"] = f"${env_name}"
            entry: dict[str, Any] = {"name": env_name}
            if source.get("value"):
                entry["value"] = source["value"]
            if source.get("valueFrom") is not None:
                entry["valueFrom"] = deep(source["valueFrom"])
            container.setdefault("env", []).append(entry)
    elif not k.has_env(container, "REDIS_PASSWORD") and "redis-password" in params:
        k.append_env(container, "REDIS_PASSWORD", params["redis-password"])


def _finish_pod(
    cluster: dict[str, Any],
    template: dict[str, Any],
    node_type: str,
    params: dict[str, str],
    head_fqdn: str,
    head_port: str,
    options: OperatorOptions,
) -> dict[str, Any]:
    """KubeRay's BuildPod stage: volumes, command, env, probes."""
    spec = template["spec"]
    ray = spec["containers"][0]
    if "plasma-directory" not in params:
        k.add_empty_dir(spec, ray, k.SHM_VOLUME, "/dev/shm", memory=True)
    cluster_spec = cluster["spec"]
    if node_type == "head" and autoscaling_enabled(cluster_spec):
        sidecar = next(x for x in spec["containers"] if x.get("name") == c.AUTOSCALER_CONTAINER)
        k.add_empty_dir(spec, ray, k.LOG_VOLUME, "/tmp/ray", memory=False)
        k.add_empty_dir(spec, sidecar, k.LOG_VOLUME, "/tmp/ray", memory=False)
    raystart.resource_params(params, ray)
    ray_start = raystart.ray_start_command(node_type, params)
    overwrite = (template["metadata"].get("annotations") or {}).get(c.OVERWRITE_CMD_ANNOTATION, "")
    if overwrite.lower() != "true" and not raystart.user_cmd_has_ray_start(ray):
        args = raystart.container_command(
            ray.get("command") or [], ray.get("args") or [], ray_start
        )
        ray["command"] = options.shell()
        ray["args"] = [args]
    for init in spec.get("initContainers") or []:
        k.set_init_container_env(init, head_fqdn)
    k.set_ray_env(
        ray,
        node_type,
        head_fqdn=head_fqdn,
        head_port=head_port,
        ray_start=ray_start,
        creator=creator_crd(cluster),
    )
    if options.probes_injection:
        k.set_probes(ray, node_type, params, cluster_spec.get("rayVersion"))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": template["metadata"], "spec": spec}


def _base_template(
    cluster: dict[str, Any], group_spec: dict[str, Any], generate_name: str
) -> dict[str, Any]:
    template = deep(group_spec.get("template") or {})
    meta = template.setdefault("metadata", {})
    meta.pop("name", None)
    meta["generateName"] = generate_name
    meta["namespace"] = namespace_of(cluster)
    if annotations_of(cluster).get(c.OVERWRITE_CMD_ANNOTATION, "").lower() == "true":
        meta.setdefault("annotations", {})[c.OVERWRITE_CMD_ANNOTATION] = "true"
    return template


def _user_labels(group_spec: dict[str, Any]) -> dict[str, str]:
    merged = dict(((group_spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
    merged.update(group_spec.get("labels") or {})
    return merged


def _head_context(cluster: dict[str, Any], options: OperatorOptions) -> tuple[str, str]:
    name = cluster["metadata"]["name"]
    svc = naming.head_service_name(name, cluster["spec"])
    fqdn = naming.fqdn(svc, namespace_of(cluster), options.cluster_domain)
    return fqdn, raystart.head_port(cluster["spec"])


def build_head_pod(
    cluster: dict[str, Any],
    suffixes: naming.Suffixes,
    hook: PodHook | None = None,
    options: OperatorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    cluster_spec = cluster["spec"]
    head_spec = cluster_spec["headGroupSpec"]
    head_fqdn, head_port = _head_context(cluster, options)
    template = _base_template(cluster, head_spec, naming.pod_generate_name(name, "head"))
    template["metadata"]["labels"] = pod_labels("head", name, c.HEAD_GROUP, _user_labels(head_spec))
    params = {k_: str(v) for k_, v in (head_spec.get("rayStartParams") or {}).items()}
    raystart.apply_group_resources(params, head_spec.get("resources"), head_spec.get("labels"))
    autoscaling = autoscaling_enabled(cluster_spec)
    raystart.default_params(
        params, "head", head_port=head_port, head_fqdn=head_fqdn, autoscaling=autoscaling
    )
    spec = template["spec"]
    ray = spec["containers"][0]
    if autoscaling:
        spec["serviceAccountName"] = naming.autoscaler_service_account(cluster)
        spec["containers"].append(
            k.autoscaler_container(
                ray.get("image", ""), cluster_spec.get("autoscalerOptions"), options.shell()
            )
        )
        version = (cluster_spec.get("autoscalerOptions") or {}).get("version")
        if version in ("v1", "v2"):
            k.append_env(ray, "RAY_enable_autoscaler_v2", "true" if version == "v2" else "false")
        if autoscaler_v2(cluster_spec):
            spec["restartPolicy"] = "Never"
    _configure_ft(cluster, template, params, "head")
    k.ensure_metrics_port(ray)
    pod = _finish_pod(cluster, template, "head", params, head_fqdn, head_port, options)
    annotations = pod["metadata"].setdefault("annotations", {})
    annotations[c.KUBERAY_VERSION_ANNOTATION] = c.KUBERAY_VERSION
    annotations[c.UPGRADE_HASH_ANNOTATION] = spec_hash(cluster_spec)
    _name_and_own(pod, cluster, suffixes)
    if options.deterministic_head_pod_name:
        pod["metadata"].pop("generateName", None)
        pod["metadata"]["name"] = f"{name}-head"
    if hook:
        hook(cluster, pod, c.HEAD_GROUP)
    return pod


def build_worker_pod(
    cluster: dict[str, Any],
    group: dict[str, Any],
    suffixes: naming.Suffixes,
    *,
    replica_index: int,
    replica_name: str | None = None,
    host_index: int | None = None,
    hook: PodHook | None = None,
    options: OperatorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    group_name = group.get("groupName", "")
    head_fqdn, head_port = _head_context(cluster, options)
    template = _base_template(
        cluster, group, naming.pod_generate_name(f"{name}-{group_name}", "worker")
    )
    spec = template["spec"]
    ray = spec["containers"][0]
    if options.init_container_injection:
        spec.setdefault("initContainers", []).append(
            k.wait_gcs_init_container(ray, head_fqdn, head_port, options.shell())
        )
    params = {k_: str(v) for k_, v in (group.get("rayStartParams") or {}).items()}
    raystart.apply_group_resources(params, group.get("resources"), group.get("labels"))
    labels = pod_labels("worker", name, group_name, _user_labels(group))
    labels[c.REPLICA_INDEX_LABEL] = str(replica_index)
    if num_of_hosts(group) > 1 and replica_name is not None:
        labels[c.REPLICA_NAME_LABEL] = replica_name
        labels[c.HOST_INDEX_LABEL] = str(host_index or 0)
    template["metadata"]["labels"] = labels
    raystart.default_params(
        params, "worker", head_port=head_port, head_fqdn=head_fqdn, autoscaling=False
    )
    _configure_ft(cluster, template, params, "worker")
    k.ensure_metrics_port(ray)
    if autoscaler_v2(cluster["spec"]):
        spec["restartPolicy"] = "Never"
    pod = _finish_pod(cluster, template, "worker", params, head_fqdn, head_port, options)
    _name_and_own(pod, cluster, suffixes)
    if hook:
        hook(cluster, pod, group_name)
    return pod


def build_worker_pods(
    cluster: dict[str, Any],
    suffixes: naming.Suffixes,
    hook: PodHook | None = None,
    options: OperatorOptions = DEFAULT_OPTIONS,
) -> list[dict[str, Any]]:
    """Every worker pod a fresh cluster gets, group by group in spec order."""
    pods: list[dict[str, Any]] = []
    ns, name = namespace_of(cluster), cluster["metadata"]["name"]
    for group in cluster["spec"].get("workerGroupSpecs") or []:
        replicas, hosts = clamped_replicas(group), num_of_hosts(group)
        group_name = group.get("groupName", "")
        for index in range(replicas):
            if hosts > 1:
                replica = (
                    f"{group_name}-{suffixes.suffix(f'{ns}/{name}/{group_name}/replica/{index}')}"
                )
                for host in range(hosts):
                    pods.append(
                        build_worker_pod(
                            cluster,
                            group,
                            suffixes,
                            replica_index=index,
                            replica_name=replica,
                            host_index=host,
                            hook=hook,
                            options=options,
                        )
                    )
            elif hosts == 1:
                pods.append(
                    build_worker_pod(
                        cluster, group, suffixes, replica_index=index, hook=hook, options=options
                    )
                )
    return pods


def _name_and_own(pod: dict[str, Any], cluster: dict[str, Any], suffixes: naming.Suffixes) -> None:
    meta = pod["metadata"]
    key = f"{meta['namespace']}/{meta['generateName']}{json.dumps(meta.get('labels'), sort_keys=True)}"
    meta["name"] = meta["generateName"] + suffixes.suffix(key)
    meta["ownerReferences"] = [owner_reference(cluster)]
