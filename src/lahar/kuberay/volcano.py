"""The Volcano batch-scheduler adapter (kuberay-semantics.md §5.2), as pure functions.

One PodGroup ``ray-<name>-pg`` gangs a RayCluster's pods: a standalone RayCluster
owns its own; a RayJob owns the PodGroup of the cluster it creates (the cluster
path skips it). ``minMember`` counts the head and the workers but never the RayJob
submitter (it waits for the cluster, so counting it would deadlock the gang),
while ``minResources`` does include the submitter's resources. Child pods are
annotated into the group and get ``schedulerName: volcano``.

The reconciler decides *when* to call these (every pod reconcile for a
RayCluster, every Initializing pass and every terminal pass for a RayJob); the
functions here only compute *what* the PodGroup should be, including the
"recompute, do not delete" sizing used once a RayJob has finished.
"""

from __future__ import annotations

from typing import Any

from lahar.api.quantity import parse_quantity
from lahar.kuberay import constants as c
from lahar.kuberay import naming
from lahar.kuberay.meta import (
    annotations_of,
    autoscaling_enabled,
    labels_of,
    namespace_of,
    owner_reference,
)
from lahar.kuberay.resources import (
    ResourceSum,
    clamped_replicas,
    container_resources,
    min_replicas,
    num_of_hosts,
    pod_template_resources,
    raw_replicas,
)
from lahar.kuberay.submitter import SUBMITTER_RESOURCES

SCHEDULER_NAME = "volcano"
QUEUE_LABEL = "volcano.sh/queue-name"
PRIORITY_LABEL = "ray.io/priority-class-name"
TOPOLOGY_MODE_LABEL = "volcano.sh/network-topology-mode"
TOPOLOGY_TIER_LABEL = "volcano.sh/network-topology-highest-tier-allowed"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"


class VolcanoError(ValueError):
    """The adapter refuses the object (KubeRay returns an error and retries)."""


def cluster_sizing(cluster_spec: dict[str, Any]) -> tuple[int, ResourceSum]:
    """(minMember, minResources) of a cluster spec, without any submitter.

    Autoscaling off: 1 + sum(clamped replicas x hosts) members, and resources of
    the head plus each group's pod x *raw* replicas x hosts (quirk 2). Autoscaling
    on: minReplicas in both. Suspended groups count nothing.
    """
    autoscaling = autoscaling_enabled(cluster_spec)
    members = 1
    total = ResourceSum()
    total.add_sum(pod_template_resources(cluster_spec["headGroupSpec"].get("template") or {}))
    for group in cluster_spec.get("workerGroupSpecs") or []:
        if group.get("suspend"):
            continue
        hosts = num_of_hosts(group)
        count = min_replicas(group) if autoscaling else clamped_replicas(group)
        members += count * hosts
        factor = (min_replicas(group) if autoscaling else raw_replicas(group)) * hosts
        total.add_sum(pod_template_resources(group.get("template") or {}), factor)
    return members, total


def submitter_sizing(rayjob: dict[str, Any]) -> ResourceSum:
    """The submitter's share of minResources: K8sJobMode = its pod template,
    SidecarMode = the default container; HTTPMode/InteractiveMode add nothing."""
    spec = rayjob["spec"]
    mode = spec.get("submissionMode") or "K8sJobMode"
    if mode == "K8sJobMode" and spec.get("submitterPodTemplate"):
        return pod_template_resources(spec["submitterPodTemplate"])
    if mode in ("K8sJobMode", "SidecarMode"):
        return container_resources({"resources": SUBMITTER_RESOURCES})
    return ResourceSum()


def _podgroup(owner: dict[str, Any], members: int, resources: ResourceSum) -> dict[str, Any]:
    labels = labels_of(owner)
    spec: dict[str, Any] = {"minMember": members, "minResources": resources.to_list()}
    if QUEUE_LABEL in labels:
        spec["queue"] = labels[QUEUE_LABEL]
    if PRIORITY_LABEL in labels:
        spec["priorityClassName"] = labels[PRIORITY_LABEL]
    if TOPOLOGY_MODE_LABEL in labels:
        topology: dict[str, Any] = {"mode": labels[TOPOLOGY_MODE_LABEL]}
        if TOPOLOGY_TIER_LABEL in labels:
            try:
                topology["highestTierAllowed"] = int(labels[TOPOLOGY_TIER_LABEL])
            except ValueError:
                raise VolcanoError(
                    f"metadata.labels[{TOPOLOGY_TIER_LABEL}]: must be an integer, "
                    f"got {labels[TOPOLOGY_TIER_LABEL]!r}"
                ) from None
        spec["networkTopology"] = topology
    meta: dict[str, Any] = {
        "name": naming.podgroup_name(owner),
        "namespace": namespace_of(owner),
    }
    annotations = annotations_of(owner)
    if annotations:
        meta["annotations"] = annotations
    meta["ownerReferences"] = [owner_reference(owner)]
    return {
        "apiVersion": c.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def cluster_has_own_podgroup(cluster: dict[str, Any]) -> bool:
    """A RayJob's cluster is ganged by the RayJob's PodGroup, not its own."""
    return labels_of(cluster).get(c.ORIGIN_CRD_LABEL) != "RayJob"


def podgroup_for_cluster(cluster: dict[str, Any]) -> dict[str, Any]:
    members, resources = cluster_sizing(cluster["spec"])
    return _podgroup(cluster, members, resources)


def podgroup_for_rayjob(rayjob: dict[str, Any]) -> dict[str, Any]:
    spec = rayjob["spec"]
    if not spec.get("rayClusterSpec"):
        raise VolcanoError(
            "spec.clusterSelector: gang scheduling does not support a RayJob that references "
            "an existing RayCluster (KubeRay keeps such a RayJob in Initializing)"
        )
    members, resources = cluster_sizing(spec["rayClusterSpec"])
    resources.add_sum(submitter_sizing(rayjob))
    return _podgroup(rayjob, members, resources)


def completion_sizing(live_cluster: dict[str, Any] | None) -> dict[str, Any]:
    """The PodGroup spec fields for a finished RayJob (KubeRay v1.7: recompute, not
    delete). From the live cluster if it exists and is not being deleted (no
    submitter term; suspended groups drop out; a sidecar already in the head
    template counts), else minMember 0 and no resources."""
    if live_cluster is None or (live_cluster.get("metadata") or {}).get("deletionTimestamp"):
        return {"minMember": 0, "minResources": {}}
    members, resources = cluster_sizing(live_cluster["spec"])
    return {"minMember": members, "minResources": resources.to_list()}


def needs_update(existing: dict[str, Any], desired_spec: dict[str, Any]) -> bool:
    """KubeRay's update test: minMember differs, minResources nil, or not quota-equal."""
    spec = existing.get("spec") or {}
    if spec.get("minMember") != desired_spec["minMember"] or spec.get("minResources") is None:
        return True
    have = {k: parse_quantity(v) for k, v in spec["minResources"].items()}
    want = {k: parse_quantity(v) for k, v in desired_spec["minResources"].items()}
    return have != want


def submitter_parent(
    rayjob: dict[str, Any], existing: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Whose PodGroup a RayJob's submitter pod joins: the RayJob's own, or, for a
    clusterSelector RayJob (which has no PodGroup of its own in lahar), the existing
    cluster's (``existing``, or a stand-in named after the selected cluster).
    KubeRay has no answer: it keeps such a RayJob in Initializing."""
    selected = ((rayjob.get("spec") or {}).get("clusterSelector") or {}).get(c.CLUSTER_LABEL)
    if not selected:
        return rayjob
    if existing is not None:
        return existing
    return {"metadata": {"name": selected, "namespace": namespace_of(rayjob)}}


def add_child_metadata(parent: dict[str, Any], child: dict[str, Any], group: str) -> None:
    """AddMetadataToChildResource: queue/priority labels, group annotations, and
    ``schedulerName`` on pods and pod templates (not on a RayCluster)."""
    labels = labels_of(parent)
    meta = child.setdefault("metadata", {})
    for key in (QUEUE_LABEL, PRIORITY_LABEL):
        if labels.get(key):
            meta.setdefault("labels", {})[key] = labels[key]
    annotations = meta.setdefault("annotations", {})
    annotations[GROUP_NAME_ANNOTATION] = naming.podgroup_name(parent)
    annotations[TASK_SPEC_ANNOTATION] = group
    if child.get("kind") not in ("RayCluster",) and "spec" in child:
        child["spec"]["schedulerName"] = SCHEDULER_NAME
