"""The pod half of a RayCluster pass: KubeRay's pod reconciliation rules (§3.4).

Suspension first (delete every pod while ``RayClusterSuspending``), then the
Volcano PodGroup (before any pod, so the scheduler sees the gang first), then the
head (replaced only when it has finished or its Ray container died under
``restartPolicy: Never``; never while Pending), then each worker group in spec
order: unhealthy pods, ``scaleStrategy.workersToDelete``, then the difference
between desired and existing pods. Multi-host groups (``numOfHosts > 1``) are
created and deleted a replica at a time.

Pods are counted from the cache, so every create and delete is recorded in the
scale expectations and a group whose records the cache has not caught up with is
skipped for the pass: a stale cache never causes an extra create or delete.
Errors are raised as :class:`~.status.PassError`, whose ``reason`` becomes the
``ReplicaFailure`` condition.
"""

from __future__ import annotations

from typing import Any

from lahar.kube import rest
from lahar.kuberay import constants as c
from lahar.kuberay import pods as builders
from lahar.kuberay import volcano
from lahar.kuberay.meta import autoscaling_enabled, namespace_of
from lahar.kuberay.operator import kinds
from lahar.kuberay.operator.context import OperatorContext
from lahar.kuberay.operator.expectations import HEAD_GROUP
from lahar.kuberay.operator.podgroups import sync_podgroup
from lahar.kuberay.operator.status import PROVISIONED, SUSPENDED, SUSPENDING, PassError, is_true
from lahar.kuberay.resources import desired_worker_pods, num_of_hosts

Obj = dict[str, Any]


def _labels(pod: Obj) -> dict[str, str]:
    return pod["metadata"].get("labels") or {}


def should_delete(pod: Obj) -> bool:
    """Finished pods, and Running pods whose Ray container died under ``Never``."""
    if pod["metadata"].get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        return True
    if status.get("phase") != "Running":
        return False
    if (pod.get("spec") or {}).get("restartPolicy") != "Never":
        return False
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    ray = containers[0].get("name")
    for cs in status.get("containerStatuses") or ():
        if cs.get("name") == ray and (cs.get("state") or {}).get("terminated"):
            return True
    return False


class PodReconciler:
    def __init__(self, ctx: OperatorContext, cluster: Obj) -> None:
        self.ctx = ctx
        self.cluster = cluster
        self.ns = namespace_of(cluster)
        self.name = cluster["metadata"]["name"]
        self.hook = volcano.add_child_metadata if ctx.options.volcano else None

    # -- writes, each recorded in the expectations --------------------------------------

    async def _create(self, pod: Obj, group: str) -> None:
        kind = "head" if group == HEAD_GROUP else "worker"
        reason = "FailedCreateHeadPod" if kind == "head" else "FailedCreateWorkerPod"
        try:
            created = await kinds.create(self.ctx.client, kinds.PODS, pod)
        except rest.ApiError as exc:
            self.ctx.recorder.warning(self.cluster, f"FailedToCreate{kind.title()}Pod", str(exc))
            raise PassError(f"create {kind} pod: {exc}", reason) from exc
        if created is None:
            raise PassError(f"pod {pod['metadata']['name']} already exists", reason)
        pod_name = created["metadata"]["name"]
        self.ctx.expectations.expect_create(self.ns, self.name, group, pod_name)
        self.ctx.recorder.normal(
            self.cluster, f"Created{kind.title()}Pod", f"Created {kind} Pod {self.ns}/{pod_name}"
        )

    async def _delete(self, pod_name: str, group: str, uid: str | None = None) -> None:
        kind = "head" if group == HEAD_GROUP else "worker"
        reason = "FailedDeleteHeadPod" if kind == "head" else "FailedDeleteWorkerPod"
        try:
            gone = await kinds.delete(self.ctx.client, kinds.PODS, self.ns, pod_name, uid=uid)
        except rest.ApiError as exc:
            raise PassError(f"delete {kind} pod {pod_name}: {exc}", reason) from exc
        self.ctx.expectations.expect_delete(self.ns, self.name, group, pod_name)
        if gone:
            self.ctx.recorder.normal(
                self.cluster,
                f"Deleted{kind.title()}Pod",
                f"Deleted {kind} Pod {self.ns}/{pod_name}",
            )

    def _satisfied(self, group: str) -> bool:
        return self.ctx.expectations.satisfied(self.ns, self.name, group, self.ctx.caches.pods)

    # -- the pass ---------------------------------------------------------------------

    async def run(self) -> None:
        status = self.cluster.get("status") or {}
        pods = self.ctx.cluster_pods(self.ns, self.name)
        if is_true(status, SUSPENDING):
            for pod in pods:
                if not pod["metadata"].get("deletionTimestamp"):
                    try:
                        await self._delete(pod["metadata"]["name"], _group_key(pod))
                    except PassError as exc:
                        raise PassError(str(exc), "FailedDeleteAllPods") from exc
            return
        if is_true(status, SUSPENDED) or self.cluster["spec"].get("suspend"):
            return
        if self.ctx.options.volcano and volcano.cluster_has_own_podgroup(self.cluster):
            try:
                await sync_podgroup(self.ctx, volcano.podgroup_for_cluster(self.cluster))
            except volcano.VolcanoError as exc:
                raise PassError(str(exc)) from exc
        if not await self._head(pods, status):
            return
        for group in self.cluster["spec"].get("workerGroupSpecs") or ():
            await self._group(group)

    async def _head(self, pods: list[Obj], status: Obj) -> bool:
        """Reconcile the head; False when the workers must not be touched this pass."""
        if not self._satisfied(HEAD_GROUP):
            return True
        heads = [p for p in pods if _labels(p).get(c.NODE_TYPE_LABEL) == "head"]
        if len(heads) > 1:
            names = sorted(p["metadata"]["name"] for p in heads)
            raise PassError(f"{len(heads)} head pods found: {names}")
        if heads:
            head = heads[0]
            if should_delete(head):
                await self._delete(head["metadata"]["name"], HEAD_GROUP, head["metadata"]["uid"])
                raise PassError("the head pod has finished; it is recreated on the next pass")
            return True
        annotations = self.cluster["metadata"].get("annotations") or {}
        if (
            is_true(status, PROVISIONED)
            and annotations.get(c.DISABLE_HEAD_RESTART_ANNOTATION) == "true"
        ):
            return False
        pod = builders.build_head_pod(
            self.cluster, self.ctx.options.suffixes, self.hook, self.ctx.options.build
        )
        await self._create(pod, HEAD_GROUP)
        return True

    def _group_pods(self, group_name: str) -> list[Obj]:
        return [
            p
            for p in self.ctx.cluster_pods(self.ns, self.name)
            if _labels(p).get(c.NODE_TYPE_LABEL) == "worker"
            and _labels(p).get(c.GROUP_LABEL) == group_name
        ]

    def _new_worker(self, group: Obj, index: int, replica: str | None, host: int | None) -> Obj:
        return builders.build_worker_pod(
            self.cluster,
            group,
            self.ctx.options.suffixes,
            replica_index=index,
            replica_name=replica,
            host_index=host,
            hook=self.hook,
            options=self.ctx.options.build,
        )

    async def _group(self, group: Obj) -> None:
        group_name = group.get("groupName", "")
        if not self._satisfied(group_name):
            return
        pods = self._group_pods(group_name)
        if group.get("suspend"):
            for pod in pods:
                if not pod["metadata"].get("deletionTimestamp"):
                    await self._delete(pod["metadata"]["name"], group_name, pod["metadata"]["uid"])
            return
        if num_of_hosts(group) > 1:
            await self._multi_host(group, pods)
            return
        doomed = [p for p in pods if should_delete(p)]
        for pod in doomed:
            await self._delete(pod["metadata"]["name"], group_name, pod["metadata"]["uid"])
        if doomed:
            raise PassError(f"group {group_name}: deleted {len(doomed)} finished worker pods")
        to_delete = set((group.get("scaleStrategy") or {}).get("workersToDelete") or ())
        for name in sorted(to_delete):
            await self._delete(name, group_name)
        remaining = [p for p in pods if p["metadata"]["name"] not in to_delete]
        diff = desired_worker_pods(group) - len(remaining)
        if diff > 0:
            used = {_labels(p).get(c.REPLICA_INDEX_LABEL) for p in remaining}
            index = 0
            for _ in range(diff):
                while str(index) in used:
                    index += 1
                used.add(str(index))
                await self._create(self._new_worker(group, index, None, None), group_name)
        elif diff < 0 and not autoscaling_enabled(self.cluster["spec"]):
            for pod in remaining[:-diff]:
                await self._delete(pod["metadata"]["name"], group_name, pod["metadata"]["uid"])

    async def _multi_host(self, group: Obj, pods: list[Obj]) -> None:
        group_name = group.get("groupName", "")
        hosts = num_of_hosts(group)
        replicas: dict[str, list[Obj]] = {}
        for pod in pods:
            replica = _labels(pod).get(c.REPLICA_NAME_LABEL)
            if replica:
                replicas.setdefault(replica, []).append(pod)

        async def drop(members: list[Obj]) -> None:
            for pod in members:
                if not pod["metadata"].get("deletionTimestamp"):
                    await self._delete(pod["metadata"]["name"], group_name, pod["metadata"]["uid"])

        broken = [r for r, members in replicas.items() if len(members) < hosts]
        for replica in broken:
            await drop(replicas[replica])
        if broken:
            raise PassError(f"group {group_name}: incomplete replicas {sorted(broken)} deleted")
        for replica, members in list(replicas.items()):
            if any(should_delete(p) for p in members):
                await drop(members)
                del replicas[replica]
        wanted = set((group.get("scaleStrategy") or {}).get("workersToDelete") or ())
        hit = [
            r
            for r, members in replicas.items()
            if any(p["metadata"]["name"] in wanted for p in members)
        ]
        for replica in hit:
            await drop(replicas[replica])
        if hit:
            raise PassError(f"group {group_name}: replicas {sorted(hit)} deleted (workersToDelete)")
        desired = desired_worker_pods(group) // hosts if hosts else 0
        diff = desired - len(replicas)
        if diff > 0:
            used = {_labels(m[0]).get(c.REPLICA_INDEX_LABEL) for m in replicas.values()}
            index = 0
            for _ in range(diff):
                while str(index) in used:
                    index += 1
                used.add(str(index))
                suffix = self.ctx.options.suffixes.suffix(
                    f"{self.ns}/{self.name}/{group_name}/{index}"
                )
                replica = f"{group_name}-{suffix}"
                for host in range(hosts):
                    await self._create(self._new_worker(group, index, replica, host), group_name)
        elif diff < 0 and not autoscaling_enabled(self.cluster["spec"]):
            for replica in sorted(replicas)[:-diff]:
                await drop(replicas[replica])


def _group_key(pod: Obj) -> str:
    labels = _labels(pod)
    return HEAD_GROUP if labels.get(c.NODE_TYPE_LABEL) == "head" else labels.get(c.GROUP_LABEL, "")
