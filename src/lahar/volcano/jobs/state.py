"""The vcjob lifecycle state machine as pure functions.

:func:`decide` says, for the current phase and the action the policies chose, how the
pods are handled and how retryCount moves; :func:`next_phase` then reads the new phase
off the counters *after* that pod handling, as Volcano's state handlers do in their
status-update callbacks.

Pod handling (``Decision.kill``):

* ``None``: sync (create missing pods, delete surplus ones);
* ``soft``: delete every pod except Succeeded and Failed ones (abort, terminate,
  complete, and every finished phase);
* ``none``: delete every pod (restart), except on the last retry, where finished pods
  are kept so their logs and exit codes survive;
* ``target``: delete only the pods the request targets (RestartTask, RestartPod,
  RestartPartition), then sync.
"""

from __future__ import annotations

from dataclasses import dataclass

from lahar.volcano import constants as c
from lahar.volcano.jobs import spec as js
from lahar.volcano.jobs.spec import Obj
from lahar.volcano.jobs.status import Counts

KILL_SOFT = "soft"
KILL_NONE = "none"
KILL_TARGET = "target"

TARGET_ACTIONS = frozenset({c.RESTART_TASK, c.RESTART_POD, c.RESTART_PARTITION})
_KILL_TO = {c.ABORT_JOB: c.ABORTING, c.TERMINATE_JOB: c.TERMINATING, c.COMPLETE_JOB: c.COMPLETING}


@dataclass(frozen=True)
class Decision:
    kill: str | None  # KILL_SOFT, KILL_NONE, KILL_TARGET, or None to sync
    phase: str  # the phase the action moves to (== current phase when it does not)
    retry_increment: int = 0

    @property
    def full_kill(self) -> bool:
        return self.kill in (KILL_SOFT, KILL_NONE)


def decide(phase: str, action: str, has_live_pods: bool = True) -> Decision:
    phase = phase or c.PENDING
    if phase in (c.PENDING, c.RUNNING):
        if action == c.RESTART_JOB:
            return Decision(KILL_NONE, c.RESTARTING, retry_increment=1)
        if action in TARGET_ACTIONS:
            return Decision(KILL_TARGET, c.RESTARTING, retry_increment=1)
        if action in _KILL_TO:
            return Decision(KILL_SOFT, _KILL_TO[action])
        return Decision(None, phase)
    if phase == c.RESTARTING:
        if action in TARGET_ACTIONS:
            return Decision(KILL_TARGET, phase)
        if action == c.SYNC_JOB or not has_live_pods:
            return Decision(None, phase)
        return Decision(KILL_NONE, phase)
    if phase in (c.ABORTING, c.ABORTED) and action == c.RESUME_JOB:
        return Decision(KILL_SOFT, c.RESTARTING, retry_increment=1)
    # Aborting, Aborted, Completing, Terminating and the finished phases: keep killing.
    return Decision(KILL_SOFT, phase)


def _running_next(job: Obj, counts: Counts) -> str | None:
    replicas = js.total_replicas(job)
    if replicas == 0:
        return None  # scaled to zero: keep the phase
    min_success = (job.get("spec") or {}).get("minSuccess")
    if min_success is not None and counts.succeeded >= int(min_success):
        return c.COMPLETED
    if counts.succeeded + counts.failed == replicas:
        if js.job_min_available(job) >= js.total_task_min_available(job):
            for i, task in enumerate(js.tasks(job)):
                if task.get("minAvailable") is None:
                    continue
                per_task = counts.tasks.get(js.task_name(task, i))
                if per_task is not None and per_task.get("Succeeded", 0) < int(
                    task["minAvailable"]
                ):
                    return c.FAILED
        if min_success is not None and counts.succeeded < int(min_success):
            return c.FAILED
        if counts.succeeded >= js.job_min_available(job):
            return c.COMPLETED
        return c.FAILED
    if counts.pending > replicas - js.job_min_available(job):
        return c.PENDING  # the gang lost members: wait for them again
    return None


def next_phase(
    job: Obj, phase: str, counts: Counts, retry_count: int, status_min_available: int
) -> str:
    """The phase after this step, given the counters once pods were handled."""
    if phase == c.PENDING:
        if js.job_min_available(job) <= counts.running + counts.succeeded + counts.failed:
            return c.RUNNING
        return phase
    if phase == c.RUNNING:
        return _running_next(job, counts) or phase
    if phase == c.RESTARTING:
        if retry_count >= js.max_retry(job):
            return c.FAILED
        if js.total_replicas(job) - counts.terminating >= status_min_available:
            return c.PENDING
        return phase
    alive = counts.terminating or counts.pending or counts.running
    if phase == c.ABORTING and not alive:
        return c.ABORTED
    if phase == c.COMPLETING and not alive:
        return c.COMPLETED
    if phase == c.TERMINATING and not alive:
        return c.TERMINATED
    return phase
