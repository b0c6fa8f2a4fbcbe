"""The vcjob controller: ``batch.volcano.sh/v1alpha1`` Jobs into PodGroups, pods and status.

Each reconcile reads the job, its pods (the owner-uid index) and its PodGroup from the
caches, asks the pure core (:func:`lahar.volcano.jobs.plan`) for one step and carries the
:class:`~lahar.volcano.jobs.plan.Plan` out: get-or-create the PodGroup and the plugin
objects (svc's ConfigMap, Service, NetworkPolicy), create and delete pods, write the
status when it changed, delete the job once its TTL has passed.

Pod changes feed the lifecycle: the pod informer's handlers turn an update or delete into
the events Volcano raises (PodFailed, PodEvicted, TaskCompleted, TaskFailed; see
:func:`lahar.volcano.jobs.policies.pod_events`), buffer them per job and queue the job;
the next reconcile hands them to ``plan`` so the policies (RestartJob, AbortJob, ...)
apply. Events about pods of an older job version (pods the controller itself killed in a
restart) are dropped, as Volcano drops outdated requests.

Staleness: before writing, the controller records what it expects the caches to show
(:mod:`~lahar.volcano.controllers.expectations`) and the job's resourceVersion before its
own status write; a reconcile that finds either outstanding waits for the events instead
of acting on an old picture, so pods are never created twice and a restart never repeats.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections import defaultdict
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.cache import BY_OWNER_UID
from lahar.kube.controller import controller_owner
from lahar.kube.events import EventRecorder
from lahar.kube.factory import InformerFactory
from lahar.kube.reconcile import Request, Result, logger
from lahar.volcano import constants as c
from lahar.volcano.controllers.common import (
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    VCJOBS,
    apply,
    create,
    delete,
    merge_diff,
    patch_merge,
    resource_of,
)
from lahar.volcano.controllers.expectations import Expectations
from lahar.volcano.jobs.plan import Plan, plan
from lahar.volcano.jobs.policies import Request as LifecycleRequest
from lahar.volcano.jobs.policies import pod_events

Obj = dict[str, Any]
_PLAN_STATUS_KEYS = frozenset(
    {
        "state",
        "minAvailable",
        "taskStatusCount",
        "pending",
        "running",
        "succeeded",
        "failed",
        "terminating",
        "unknown",
        "version",
        "retryCount",
        "conditions",
        "controlledResources",
    }
)
_PODGROUP_SPEC_KEYS = ("minMember", "minTaskMember", "minResources", "priorityClassName")


def _version(obj: Obj) -> int:
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(c.JOB_VERSION_KEY, "0")
    try:
        return int(raw)
    except ValueError:
        return 0


def _fingerprint(obj: Obj) -> str:
    return json.dumps({k: v for k, v in obj.items() if k != "status"}, sort_keys=True)


class JobController:
    """Reconciles vcjobs by namespace/name."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        informers: InformerFactory,
        recorder: EventRecorder,
        *,
        expectation_ttl: float = 30.0,
        create_parallelism: int = 16,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.jobs = informers.cache(VCJOBS)
        self.pods = informers.cache(PODS)
        self.podgroups = informers.cache(PODGROUPS)
        self.priority_classes = informers.cache(PRIORITY_CLASSES)
        self.expectations = Expectations(expectation_ttl)
        self.create_parallelism = create_parallelism
        self._events: dict[Request, list[tuple[int, LifecycleRequest]]] = defaultdict(list)
        self._written: dict[Request, str] = {}  # the job's rv before our last status write
        self._versions: dict[Request, int] = {}  # highest status.version we wrote
        self._applied: dict[Request, dict[str, str]] = {}  # plugin objects written

    # -- informer handlers (quick: they only note what happened and return) -------------

    def _job_of(self, obj: Obj) -> Request | None:
        return controller_owner(obj, VCJOBS)

    def on_pod_add(self, pod: Obj) -> None:
        key = self._job_of(pod)
        if key is not None:
            self.expectations.observed_add(key, pod["metadata"]["name"])

    def on_pod_update(self, old: Obj, new: Obj) -> None:
        key = self._job_of(new)
        if key is None:
            return
        if new["metadata"].get("deletionTimestamp"):
            self.expectations.observed_delete(key, new["metadata"].get("uid", ""))
        self._note_events(key, old, new)

    def on_pod_delete(self, pod: Obj) -> None:
        key = self._job_of(pod)
        if key is None:
            return
        self.expectations.observed_delete(key, pod["metadata"].get("uid", ""))
        self._note_events(key, pod, None)

    def on_podgroup_delete(self, pg: Obj) -> None:
        key = self._job_of(pg)
        if key is not None:
            self.expectations.observed_delete(key, pg["metadata"].get("uid", ""))

    def _note_events(self, key: Request, old: Obj, new: Obj | None) -> None:
        job = self.jobs.get(key.name, key.namespace)
        if job is None:
            return
        pods = self.pods.by_index(BY_OWNER_UID, job["metadata"].get("uid", ""))
        for event in pod_events(job, old, new, pods):
            self._events[key].append((_version(new or old), event))

    # -- reconcile ---------------------------------------------------------------------

    def _current_version(self, key: Request, job: Obj) -> int:
        cached = int((job.get("status") or {}).get("version") or 0)
        return max(cached, self._versions.get(key, 0))

    def _take_events(self, key: Request, job: Obj) -> list[tuple[int, LifecycleRequest]]:
        noted = self._events.pop(key, [])
        version = self._current_version(key, job)
        return [(v, e) for v, e in noted if v >= version]

    def _forget(self, key: Request) -> None:
        for store in (self._events, self._written, self._versions, self._applied):
            store.pop(key, None)
        self.expectations.forget(key)

    async def reconcile(self, req: Request) -> Result:
        job = self.jobs.get(req.name, req.namespace)
        if job is None or job["metadata"].get("deletionTimestamp"):
            self._forget(req)
            return Result()
        rv = job["metadata"].get("resourceVersion", "")
        written = self._written.get(req)
        if written is not None:
            if written == rv:
                return Result(requeue_after=1.0)  # our status write is not in the cache yet
            del self._written[req]
        if not self.expectations.satisfied(req):
            return Result(requeue_after=1.0)  # pods we created/deleted are not in the cache yet

        uid = job["metadata"].get("uid", "")
        pods = self.pods.by_index(BY_OWNER_UID, uid)
        pgs = [pg for pg in self.podgroups.by_index(BY_OWNER_UID, uid) if pg["kind"] == "PodGroup"]
        podgroup = pgs[0] if pgs else None
        priorities = {
            pc["metadata"]["name"]: int(pc.get("value") or 0) for pc in self.priority_classes
        }
        events = self._take_events(req, job)
        step = plan(
            job,
            pods,
            podgroup,
            dt.datetime.now(dt.UTC),
            requests=[e for _, e in events],
            priorities=priorities,
        )
        try:
            await self._execute(req, job, pods, podgroup, step)
        except Exception:
            self._events[req][:0] = events  # keep the events for the retry
            raise
        if step.delete_job:
            await delete(
                self.client, VCJOBS, req.namespace, req.name, uid=uid, propagation="Background"
            )
            self._forget(req)
            return Result()
        return Result(requeue_after=step.requeue_after)

    async def _execute(
        self, key: Request, job: Obj, pods: list[Obj], podgroup: Obj | None, step: Plan
    ) -> None:
        ns = key.namespace
        if step.action != c.SYNC_JOB:
            self.recorder.normal(job, "ExecuteAction", f"Start to execute action {step.action}")
        self._podgroup_events(job, podgroup)

        # PodGroup
        if step.delete_podgroup and podgroup is not None:
            pg_uid = podgroup["metadata"].get("uid", "")
            self.expectations.expect(key, deletes=(pg_uid,))
            if not await delete(
                self.client, PODGROUPS, ns, podgroup["metadata"]["name"], uid=pg_uid
            ):
                self.expectations.lower(key, deletes=(pg_uid,))
        if step.create_podgroup is not None:
            try:
                await create(self.client, step.create_podgroup)
            except rest.ApiError as exc:
                self.recorder.warning(job, "PodGroupError", _message(exc))
                raise
        if step.update_podgroup is not None and podgroup is not None:
            patch = {
                k: merge_diff(
                    (podgroup.get("spec") or {}).get(k), step.update_podgroup["spec"].get(k)
                )
                for k in _PODGROUP_SPEC_KEYS
                if (podgroup.get("spec") or {}).get(k) != step.update_podgroup["spec"].get(k)
            }
            if patch:
                await patch_merge(
                    self.client, PODGROUPS, ns, podgroup["metadata"]["name"], {"spec": patch}
                )

        # plugin objects
        await self._plugin_objects(key, job, step)

        # pods: deletions first (a restart frees the names), then creations
        by_name = {p["metadata"]["name"]: p for p in pods}
        await self._delete_pods(key, job, [by_name[n] for n in step.delete_pods if n in by_name])
        await self._create_pods(key, job, step.create_pods)

        # status
        await self._write_status(key, job, step.status)

    def _podgroup_events(self, job: Obj, podgroup: Obj | None) -> None:
        for cond in ((podgroup or {}).get("status") or {}).get("conditions") or ():
            if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
                pg_name = podgroup["metadata"]["name"] if podgroup else ""
                self.recorder.warning(
                    job,
                    "PodGroupPending",
                    f"PodGroup {job['metadata']['namespace']}/{pg_name} is unschedulable: "
                    f"{cond.get('message', '')}",
                )

    async def _plugin_objects(self, key: Request, job: Obj, step: Plan) -> None:
        applied = self._applied.setdefault(key, {})
        for obj in step.delete_objects:
            res = resource_of(obj)
            await delete(self.client, res, key.namespace, obj["metadata"]["name"])
            applied.pop(f"{obj['kind']}/{obj['metadata']['name']}", None)
        for obj in step.apply_objects:
            ident = f"{obj['kind']}/{obj['metadata']['name']}"
            fingerprint = _fingerprint(obj)
            if applied.get(ident) == fingerprint:
                continue
            try:
                await apply(self.client, obj)
            except rest.ApiError as exc:
                self.recorder.warning(job, "PluginError", f"{ident}: {_message(exc)}")
                raise
            applied[ident] = fingerprint

    async def _delete_pods(self, key: Request, job: Obj, pods: list[Obj]) -> None:
        if not pods:
            return
        uids = [p["metadata"].get("uid", "") for p in pods]
        self.expectations.expect(key, deletes=uids)

        async def one(pod: Obj) -> None:
            md = pod["metadata"]
            try:
                await delete(self.client, PODS, key.namespace, md["name"], uid=md.get("uid"))
            except rest.ApiError as exc:
                self.expectations.lower(key, deletes=(md.get("uid", ""),))
                self.recorder.warning(
                    job, "FailedDeletePod", f"deleting pod {md['name']}: {_message(exc)}"
                )
                raise

        await self._bounded(one(p) for p in pods)

    async def _create_pods(self, key: Request, job: Obj, pods: list[Obj]) -> None:
        if not pods:
            return
        names = [p["metadata"]["name"] for p in pods]
        self.expectations.expect(key, adds=names)

        async def one(pod: Obj) -> None:
            name = pod["metadata"]["name"]
            try:
                created = await create(self.client, pod)
            except rest.ApiError as exc:
                self.expectations.lower(key, adds=(name,))
                self.recorder.warning(
                    job, "FailedCreatePod", f"creating pod {name}: {_message(exc)}"
                )
                raise
            if created is None:  # it already existed: no add event is owed to us
                self.expectations.lower(key, adds=(name,))

        await self._bounded(one(p) for p in pods)

    async def _bounded(self, coros: Any) -> None:
        limit = asyncio.Semaphore(self.create_parallelism)

        async def run(coro: Any) -> None:
            async with limit:
                await coro

        results = await asyncio.gather(*(run(co) for co in coros), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    async def _write_status(self, key: Request, job: Obj, status: Obj) -> None:
        old = job.get("status") or {}
        new = {k: v for k, v in old.items() if k not in _PLAN_STATUS_KEYS}
        new.update(status)
        if new == old:
            return
        body = {**job, "status": new}
        rv = job["metadata"].get("resourceVersion", "")
        try:
            reply = await rest.request(
                self.client, "PUT", VCJOBS.path(key.namespace, key.name, "status"), body=body
            )
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return
            if not rest.is_status(exc, 409):
                self.recorder.warning(job, "JobStatusError", _message(exc))
            raise
        if (reply.get("metadata") or {}).get("resourceVersion") != rv:
            self._written[key] = rv  # until the cache moves past rv, the job is stale
        self._versions[key] = max(self._versions.get(key, 0), int(new.get("version") or 0))
        old_phase = (old.get("state") or {}).get("phase", "")
        new_phase = (new.get("state") or {}).get("phase", "")
        if new_phase != old_phase:
            logger(__name__).info("job phase %s -> %s", old_phase or "(none)", new_phase)


def _message(exc: rest.ApiError) -> str:
    return exc.status.message if exc.status is not None and exc.status.message else str(exc)
