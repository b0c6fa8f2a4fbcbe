"""Run one scheduling session over a snapshot and collect its decisions.

This is the pure core behind ``lahar schedule`` (and later the daemon and the
simulator): snapshot in, :class:`SessionResult` out, no I/O. Allocated tasks of a job
that is only pipelined are reported under ``pipelined`` together with the tasks
pipelined onto releasing resources: both hold a node for the session without a bind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from lahar.scheduler.actions import action
from lahar.scheduler.api.cluster import ClusterInfo
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.framework.conf import SchedulerConfiguration
from lahar.scheduler.framework.session import Session, open_session
from lahar.scheduler.gcpause import paused_gc

S = TaskStatus


@dataclass
class SessionResult:
    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    pod_groups: dict[str, dict[str, str]] = field(default_factory=dict)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    node_scores: dict[str, dict[str, float]] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "binds": self.binds,
            "evictions": self.evictions,
            "pipelined": self.pipelined,
            "podGroups": self.pod_groups,
            "queues": self.queues,
        }
        if self.node_scores is not None:
            out["nodeScores"] = self.node_scores
        return out


def run_session(
    cluster: ClusterInfo,
    conf: SchedulerConfiguration,
    *,
    seed: int = 0,
    now: float = 0.0,
    record_scores: bool = False,
    timings: dict[str, Any] | None = None,
    node_cache: bool = True,
) -> tuple[Session, SessionResult]:
    """Open a session, run the configured actions, close it and collect the decisions.

    ``timings``, when given, receives the wall-clock seconds of each phase: ``open``,
    ``actions`` (name -> seconds), ``close`` and ``collect`` (for ``lahar bench``), and
    ``cpu``: the process CPU seconds of open, actions and close (steadier than wall time
    on a shared machine).
    ``node_cache=False`` computes every node choice directly (the reference path).
    The cyclic garbage collector is paused meanwhile (see ``scheduler/gcpause.py``).
    """
    with paused_gc():
        return _run(cluster, conf, seed, now, record_scores, timings, node_cache)


def _run(
    cluster: ClusterInfo,
    conf: SchedulerConfiguration,
    seed: int,
    now: float,
    record_scores: bool,
    timings: dict[str, Any] | None,
    node_cache: bool,
) -> tuple[Session, SessionResult]:
    clock = time.perf_counter
    cpu_start = time.process_time()
    start = clock()
    ssn = open_session(cluster, conf, seed=seed, now=now)
    ssn.use_node_cache = node_cache
    if record_scores:
        ssn.score_log = {}
    opened = clock()
    spent: dict[str, float] = {}
    for name in conf.actions:
        execute = action(name)
        if execute is not None:
            begin = clock()
            execute(ssn)
            spent[name] = spent.get(name, 0.0) + clock() - begin
    before_close = clock()
    ssn.close()
    closed = clock()
    cpu = time.process_time() - cpu_start
    result = collect(ssn)
    if timings is not None:
        timings.update(
            open=opened - start,
            actions=spent,
            close=closed - before_close,
            collect=clock() - closed,
            cpu=cpu,
        )
    return ssn, result


def collect(ssn: Session) -> SessionResult:
    from lahar.scheduler.explain import explain_job, explain_skipped

    result = SessionResult()
    tasks = ssn.tasks_by_uid
    result.binds = dict(sorted((tasks[uid].key, node) for uid, node in ssn.binds.items()))
    result.evictions = sorted(tasks[uid].key if uid in tasks else uid for uid in ssn.evictions)
    held = [
        (t.key, t.node)
        for t in tasks.values()
        if t.status in (S.PIPELINED, S.ALLOCATED) and t.node is not None
    ]
    result.pipelined = dict(sorted(held))
    for uid, job in ssn.jobs.items():
        reason, message = explain_job(ssn, job)
        result.pod_groups[uid] = {"phase": job.out_phase, "reason": reason, "message": message}
    for uid, why in ssn.cluster.skipped_jobs.items():
        result.pod_groups[uid] = {"phase": "Pending", **explain_skipped(why)}
    result.pod_groups = dict(sorted(result.pod_groups.items()))
    result.queues = queue_figures(ssn)
    if ssn.score_log is not None:
        result.node_scores = dict(sorted(ssn.score_log.items()))
    if ssn.missing_plugins:
        result.notes.append("not available in this build: " + ", ".join(ssn.missing_plugins))
    unimplemented = [a for a in ssn.conf.actions if action(a) is None]
    if unimplemented:
        result.notes.append("actions not implemented (skipped): " + ", ".join(unimplemented))
    return result


def queue_figures(ssn: Session) -> dict[str, dict[str, Any]]:
    space = ssn.space
    allocated = {name: space.zeros() for name in ssn.queues}
    request = {name: space.zeros() for name in ssn.queues}
    for job in ssn.jobs.values():
        if job.queue in allocated:
            allocated[job.queue] += job.allocated
            request[job.queue] += job.allocated
            for task in job.tasks_in(S.PENDING, S.PIPELINED):
                request[job.queue] += task.resreq
    out: dict[str, dict[str, Any]] = {}
    for name, queue in ssn.queues.items():
        if queue.implicit and name == "root":
            continue
        stats = ssn.queue_stats.get(name)
        deserved = stats.deserved if stats is not None else None
        out[name] = {
            "deserved": space.to_quantities(deserved) if deserved is not None else {},
            "allocated": space.to_quantities(allocated[name]),
            "request": space.to_quantities(request[name]),
            "share": round(float(stats.share), 6) if stats is not None else 0.0,
        }
    return out
