"""PodGroup status and scheduling events, written at the end of every session.

What is written (volcano-semantics §5.1, §8), and only when it changed (condition
times and transitionIDs ignored in the comparison):

* ``status.phase`` as the session computed it (Pending/Inqueue/Running/Unknown/
  Completed), and the ``running``/``succeeded``/``failed`` task counts.
* ``status.conditions``: the gang plugin's ``Scheduled`` (reason "tasks in gang are
  ready to be scheduled", Volcano's wording) or ``Unschedulable``. lahar fills the
  ``Unschedulable`` reason and message with the words ``lahar schedule -o text``
  prints (``explain.py``: e.g. reason ``Unschedulable``, message "gang short by 2
  tasks (1 of minMember 3 placed); 0/2 nodes are available: 2 Insufficient cpu."),
  where Volcano writes a fixed reason (NotEnoughResources) and a task histogram.
  A PodGroup left out of the session (its queue does not exist) gets only that
  condition; its phase is not touched, as Volcano does not see it at all.

A PodGroup whose binds this session sends is not written by it: Volcano would write
its ``Scheduled`` condition now (phase still Inqueue: binds in flight do not make it
Running) and its ``Running`` phase in the next session, two writes racing the binds
for the API server. lahar writes both in that next session, once the binds have
landed (and a bind that failed is not announced as scheduled): ~1,600 fewer writes
per 10,000 pods in ``lahar bench e2e``, and the binding session ends sooner.

Events, emitted when the words change rather than every second (the recorder would
fold repeats into one Event anyway, at one PATCH per repeat): on the PodGroup, Warning
``Unschedulable`` while it is Pending/Inqueue/Unknown and not ready (Volcano also
sends it for a gang whose binds are in flight; lahar does not) and Normal
``Scheduled`` when it becomes Running; on each pending pod of such a PodGroup, Warning ``FailedScheduling``
with the same explanation (kube-scheduler's reason), and the same words in the pod's
``PodScheduled=False`` condition (reason ``Unschedulable``, as kube-scheduler and
Volcano set it), at most ``pod_events_per_session`` events and writes per session.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Coroutine
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.events import EventRecorder
from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.daemon.binder import pod_ref
from lahar.scheduler.daemon.cache import PODGROUPS, PODS, SchedulerCache
from lahar.scheduler.daemon.writes import WriteMemo, bounded_gather
from lahar.scheduler.framework.session import Session

__all__ = ["PodGroupWriter"]

log = logging.getLogger("lahar.scheduler.podgroups")
S = TaskStatus
Obj = dict[str, Any]
NOT_RUNNING = ("Pending", "Inqueue", "Unknown")
_VOLATILE = ("lastTransitionTime", "transitionID")


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stable(conditions: list[Obj]) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """Conditions without their times and transition IDs, in type order."""
    return tuple(
        sorted(
            tuple(sorted((k, v) for k, v in c.items() if k not in _VOLATILE))
            for c in conditions
            if isinstance(c, dict)
        )
    )


def merge_conditions(current: list[Obj], wanted: dict[str, Obj], now: str) -> list[Obj]:
    """``wanted`` by type; a condition whose content did not change keeps its old time."""
    old = {c.get("type"): c for c in current if isinstance(c, dict)}
    out: list[Obj] = []
    for ctype, cond in wanted.items():
        cond = {k: v for k, v in cond.items() if v is not None}
        prev = old.get(ctype)
        if prev is not None and _stable([prev]) == _stable([cond]):
            out.append(prev)
        else:
            out.append({**cond, "lastTransitionTime": now})
    return out


class PodGroupWriter:
    """Pushes each session's PodGroup outcomes to the API and to Events."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        cache: SchedulerCache,
        recorder: EventRecorder,
        *,
        workers: int = 16,
        pod_events_per_session: int = 200,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.workers = workers
        self.pod_events_per_session = pod_events_per_session
        self.memo = WriteMemo()
        self.pod_memo = WriteMemo()  # pod uid -> (rv, PodScheduled message written)
        self._told: dict[str, tuple[str, str]] = {}  # PodGroup uid -> (reason, message)
        self._told_pods: dict[str, str] = {}  # pod uid -> message
        self.writes = 0

    def desired(self, job: JobInfo, ssn: Session, explanation: dict[str, str], current: Obj) -> Obj:
        """The status fields the scheduler owns, as this session leaves them."""
        status = current.get("status") or {}
        wanted = {t: dict(c) for t, c in job.conditions.items()}
        unsched = wanted.get("Unschedulable")
        if unsched is not None and unsched.get("transitionID") == ssn.uid:
            unsched["reason"] = explanation.get("reason") or unsched.get("reason")
            unsched["message"] = explanation.get("message") or unsched.get("message")
        return {
            "phase": job.out_phase or status.get("phase") or "Pending",
            "running": job.count(S.RUNNING),
            "succeeded": job.count(S.SUCCEEDED),
            "failed": job.count(S.FAILED),
            "conditions": merge_conditions(status.get("conditions") or [], wanted, _now()),
        }

    @staticmethod
    def _changed(current: Obj, desired: Obj) -> bool:
        status = current.get("status") or {}
        for key in ("phase", "running", "succeeded", "failed"):
            if (status.get(key) or (0 if key != "phase" else "")) != desired[key]:
                return True
        return _stable(status.get("conditions") or []) != _stable(desired["conditions"])

    async def write(self, ssn: Session, pod_groups: dict[str, dict[str, str]]) -> int:
        """Write every changed PodGroup status and emit the session's events.

        A PodGroup this session sent binds for is left to the next session, which sees
        them landed (see the module docstring)."""
        jobs: list[tuple[Obj, Obj]] = []
        tasks = ssn.tasks_by_uid
        binding = {tasks[t].job for t in ssn.binds if t in tasks}
        for uid, job in ssn.jobs.items():
            current = self.cache.podgroups.get_by_key(uid)
            if current is None or uid in binding:
                continue
            explanation = pod_groups.get(uid, {})
            desired = self.desired(job, ssn, explanation, current)
            self._events(job, current, desired, explanation)
            if self._changed(current, desired):
                jobs.append((current, desired))
        for uid in ssn.cluster.skipped_jobs:
            current = self.cache.podgroups.get_by_key(uid)
            info = pod_groups.get(uid)
            if current is None or info is None:
                continue
            status = current.get("status") or {}
            cond = {
                "type": "Unschedulable",
                "status": "True",
                "reason": info["reason"],
                "message": info["message"],
                "transitionID": ssn.uid,
            }
            others = {c.get("type"): c for c in status.get("conditions") or [] if c.get("type")}
            others["Unschedulable"] = cond
            desired = {
                "phase": status.get("phase") or "Pending",
                "running": status.get("running") or 0,
                "succeeded": status.get("succeeded") or 0,
                "failed": status.get("failed") or 0,
                "conditions": merge_conditions(status.get("conditions") or [], others, _now()),
            }
            if self._changed(current, desired):
                jobs.append((current, desired))
        pod_writes = self._pod_events(ssn, pod_groups)
        results = await bounded_gather(
            [*(self._patch(c, d) for c, d in jobs), *pod_writes], self.workers
        )
        for res in results:
            if isinstance(res, Exception):
                log.warning("PodGroup status write failed: %s", res)
        self.memo.retain(self.cache.podgroups.list_keys())
        live = {str(pg["metadata"].get("uid")) for pg in self.cache.podgroups}
        self._told = {k: v for k, v in self._told.items() if k in live}
        return sum(1 for r in results if r is True)

    async def _patch(self, current: Obj, desired: Obj) -> bool:
        md = current["metadata"]
        key = f"{md.get('namespace')}/{md['name']}"
        rv = str(md.get("resourceVersion") or "")
        stable = (
            desired["phase"],
            desired["running"],
            desired["succeeded"],
            desired["failed"],
            _stable(desired["conditions"]),
        )
        if self.memo.already_written(key, rv, stable):
            return False
        try:
            await rest.request(
                self.client,
                "PATCH",
                PODGROUPS.path(md.get("namespace"), md["name"]),
                body={"status": desired},
                content_type="application/merge-patch+json",
            )
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                return False
            raise
        self.memo.record(key, rv, stable)
        self.writes += 1
        return True

    # -- events ------------------------------------------------------------------------

    def _events(self, job: JobInfo, current: Obj, desired: Obj, info: dict[str, str]) -> None:
        uid = str(current["metadata"].get("uid") or job.uid)
        reason, message = info.get("reason", ""), info.get("message", "")
        phase = desired["phase"]
        if phase in NOT_RUNNING and job.tasks and reason != "Scheduled":
            said = ("Unschedulable", message)
            if self._told.get(uid) != said:
                self._told[uid] = said
                self.recorder.warning(current, "Unschedulable", message or reason)
        elif phase in ("Running", "Completed"):
            was = (current.get("status") or {}).get("phase")
            said = ("Scheduled", "")
            if was not in ("Running", "Completed") and self._told.get(uid) != said:
                self._told[uid] = said
                self.recorder.normal(current, "Scheduled", message or "pod group is running")

    def _pod_events(
        self, ssn: Session, pod_groups: dict[str, dict[str, str]]
    ) -> list[Coroutine[Any, Any, bool]]:
        """Events for pending pods whose explanation changed, and the status writes
        that set their ``PodScheduled=False`` condition (returned, to be awaited)."""
        budget = self.pod_events_per_session
        seen: set[str] = set()
        writes: list[Coroutine[Any, Any, bool]] = []
        for uid, job in ssn.jobs.items():
            info = pod_groups.get(uid, {})
            message = info.get("message", "")
            if job.out_phase not in NOT_RUNNING or not message or info["reason"] == "Scheduled":
                continue
            for task in job.tasks_in(S.PENDING):
                if task.gated:
                    continue
                seen.add(task.uid)
                if budget <= 0:
                    continue
                if self._told_pods.get(task.uid) != message:
                    budget -= 1
                    self._told_pods[task.uid] = message
                    self.recorder.warning(
                        pod_ref(task.namespace, task.name, task.uid), "FailedScheduling", message
                    )
                if _pod_condition(task.pod) != ("False", "Unschedulable", message):
                    budget -= 1
                    rv = str(task.pod.get("metadata", {}).get("resourceVersion") or "")
                    writes.append(
                        self._unschedulable(task.namespace, task.name, task.uid, rv, message)
                    )
        self._told_pods = {k: v for k, v in self._told_pods.items() if k in seen}
        self.pod_memo.retain(seen)
        return writes

    async def _unschedulable(
        self, namespace: str, name: str, uid: str, rv: str, message: str
    ) -> bool:
        """``PodScheduled=False, reason Unschedulable`` on a pod, as kube-scheduler and
        Volcano set it (a strategic merge patch: other conditions are kept)."""
        if self.pod_memo.already_written(uid, rv, message):
            return False
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": _now(),
        }
        try:
            await rest.request(
                self.client,
                "PATCH",
                PODS.path(namespace, name, "status"),
                body={"status": {"conditions": [cond]}},
                content_type="application/strategic-merge-patch+json",
            )
        except rest.ApiError as exc:
            if rest.is_status(exc, 404) or rest.is_status(exc, 409):
                return False
            raise
        self.pod_memo.record(uid, rv, message)
        return True


def _pod_condition(pod: Obj) -> tuple[str, str, str] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return (str(cond.get("status")), str(cond.get("reason")), str(cond.get("message")))
    return None
