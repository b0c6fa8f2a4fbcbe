"""Why a PodGroup is not running, in words: a pure function of the closed session.

``lahar schedule -o text`` prints it, the JSON output carries it as each PodGroup's
reason and message, and the scheduler daemon will write the same text into PodGroup
conditions. The fit-error summary is kube-scheduler's style
("0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint(s).").
"""

from __future__ import annotations

from collections import Counter

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.framework.session import Session

S = TaskStatus


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def explain_skipped(why: str) -> dict[str, str]:
    reason = "QueueNotFound" if why.startswith("queue") else "NotInSession"
    return {"reason": reason, "message": f"not scheduled: {why}"}


def _counted(notes: list[str]) -> list[str]:
    """Distinct notes in first-seen order, with a count when a note repeats."""
    counts = Counter(notes)
    return [f"{n} ({counts[n]} times)" if counts[n] > 1 else n for n in dict.fromkeys(notes)]


def fit_summary(job: JobInfo) -> str:
    """The distinct fit errors of the job's tasks, most frequent first."""
    texts = Counter(err.summary() for err in job.fit_errors.values())
    ordered = sorted(texts.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ordered) == 1:
        return ordered[0][0]
    return "; ".join(f"{_plural(n, 'task')}: {text}" for text, n in ordered)


def explain_job(ssn: Session, job: JobInfo) -> tuple[str, str]:
    """(reason, message) for one session job after close."""
    ready = job.ready_task_num()
    phase = job.out_phase
    if phase in ("Running", "Completed"):
        return (
            "Scheduled",
            f"{ready}/{job.total_tasks} tasks scheduled (minMember {job.min_available})",
        )
    if job.is_pending():
        if job.enqueue_rejected:
            why = "; ".join(dict.fromkeys(job.enqueue_rejected))
            return "NotEnqueued", f"enqueue rejected the PodGroup: {why}"
        if "enqueue" in ssn.conf.actions:
            return "NotEnqueued", "the PodGroup is waiting to be enqueued"
        return "NotEnqueued", "no enqueue action ran and allocate did not admit it"
    if job.invalid:
        short = job.min_available - job.valid_task_num()
        if short > 0:
            return "NotEnoughPods", (
                f"gang short by {_plural(short, 'task')}: {job.valid_task_num()} pods exist "
                f"for minMember {job.min_available}"
            )
        return "NotEnoughPods", job.invalid
    bound_now = sum(1 for t in job.tasks.values() if t.uid in ssn.binds)
    if ssn.job_is_ready(job):
        if bound_now:
            return "Scheduled", f"{_plural(bound_now, 'task')} bound this session"
        return "Scheduled", "minMember reached; waiting for the pods to start"
    pipelined = job.count(S.PIPELINED, S.ALLOCATED)
    parts: list[str] = []
    if pipelined and ssn.job_is_pipelined(job):
        parts.append(
            f"{_plural(pipelined, 'task')} pipelined, waiting for resources being released"
        )
    short = job.min_available - ready - (pipelined if parts else 0)
    if short > 0:
        parts.append(
            f"gang short by {_plural(short, 'task')} ({ready} of minMember "
            f"{job.min_available} placed)"
        )
    if job.fit_errors:
        parts.append(fit_summary(job))
    if not parts or not ssn.job_is_pipelined(job):
        parts.extend(_counted(job.notes))
    if not job.fit_errors and not job.notes and not job.tasks_in(S.PENDING):
        parts.append("no pending pods to place")
    reason = "Pipelined" if pipelined and ssn.job_is_pipelined(job) else "Unschedulable"
    if not parts:
        return reason, "not placed this session"
    return reason, "; ".join(p.rstrip(".") for p in parts) + "."


def explain_text(pod_groups: dict[str, dict[str, str]], skipped_pods: dict[str, str]) -> str:
    """The ``-o text`` report: every PodGroup that is not running, and stray pods."""
    lines: list[str] = []
    for uid, info in pod_groups.items():
        if info["phase"] in ("Running", "Completed"):
            continue
        lines.append(f"PodGroup {uid} ({info['phase']}): {info['reason']}: {info['message']}")
    for key, why in skipped_pods.items():
        lines.append(f"Pod {key}: not scheduled: {why}")
    if not lines:
        lines.append("every PodGroup is running")
    return "\n".join(lines)
