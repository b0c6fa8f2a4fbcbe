"""Admission for ``batch.volcano.sh/v1alpha1`` Jobs: defaulting on CREATE, validation on
CREATE and UPDATE, with Volcano's messages.

Validation collects every problem into one message the way Volcano does (fragments
separated by ``;``, trimmed), except for the few checks Volcano makes first and alone
(negative ``minAvailable``/``maxRetry``/TTL, no tasks, missing MPI tasks).
"""

from __future__ import annotations

import copy
import json

from lahar.volcano import constants as c
from lahar.volcano.admission import job_checks as jc
from lahar.volcano.admission.common import (
    AdmissionDenied,
    Obj,
    dns1123_label_errors,
    go_list,
    meta,
    not_found,
    qualified_name_errors,
    spec,
)
from lahar.volcano.lookup import Lookup

VALIDATE_WEBHOOK = "validatejob.volcano.sh"
MUTATE_WEBHOOK = "mutatejob.volcano.sh"

# Distributed-framework plugins that need the svc plugin's hosts file.
_NEEDS_SVC = ("tensorflow", "mpi", "pytorch", "ray")


def mutate_job(job: Obj) -> Obj:
    """The defaulted copy of ``job`` (Volcano's mutating webhook, CREATE only)."""
    out = copy.deepcopy(job)
    s = out.setdefault("spec", {})
    if not s.get("queue"):
        s["queue"] = c.DEFAULT_QUEUE
    if not s.get("schedulerName"):
        s["schedulerName"] = c.SCHEDULER_NAME
    if not s.get("maxRetry"):
        s["maxRetry"] = c.DEFAULT_MAX_RETRY
    for index, task in enumerate(s.get("tasks") or []):
        if not task.get("name"):
            task["name"] = f"{c.DEFAULT_TASK_PREFIX}{index}"
        pod_spec = (task.get("template") or {}).get("spec") or {}
        if pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if task.get("minAvailable") is None:
            partition = task.get("partitionPolicy") or {}
            min_partitions = int(partition.get("minPartitions") or 0)
            if min_partitions > 0:
                task["minAvailable"] = min_partitions * int(partition.get("partitionSize") or 0)
            else:
                task["minAvailable"] = int(task.get("replicas") or 0)
        if not task.get("maxRetry"):
            task["maxRetry"] = c.DEFAULT_MAX_RETRY
    if not s.get("minAvailable"):
        s["minAvailable"] = sum(
            int(t["minAvailable"])
            if t.get("minAvailable") is not None
            else int(t.get("replicas") or 0)
            for t in s.get("tasks") or []
        )
    plugins = s.get("plugins")
    if plugins is not None:
        plugins = dict(plugins)
        if any(name in plugins for name in _NEEDS_SVC) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []
        s["plugins"] = plugins
    return out


def _task_index(tasks: list[Obj], name: str) -> int:
    for i, task in enumerate(tasks):
        if task.get("name") == name:
            return i
    return -1


def _queue_message(queue_name: str, lookup: Lookup) -> str:
    queue = lookup.get_queue(queue_name)
    if queue is None:
        return f" unable to find job queue: {not_found('queue.scheduling.volcano.sh', queue_name)};"
    msg = ""
    state = (queue.get("status") or {}).get("state", "")
    if state != "Open":
        msg += (
            f" can only submit job to queue with state `Open`, queue `{queue_name}` "
            f"status is `{state}`;"
        )
    if queue_name == c.ROOT_QUEUE:
        msg += " can not submit job to root queue;"
    else:
        children = [q for q in lookup.list_queues() if spec(q).get("parent") == queue_name]
        if children:
            msg += (
                f" can only submit job to leaf queue, queue `{queue_name}` has "
                f"{len(children)} child queues;"
            )
    return msg


def job_create_message(job: Obj, lookup: Lookup) -> str:
    """Why Volcano would refuse to create ``job`` (``""`` when it is fine)."""
    s = spec(job)
    name = meta(job).get("name", "")
    tasks: list[Obj] = s.get("tasks") or []
    if int(s.get("minAvailable") or 0) < 0:
        return "job 'minAvailable' must be >= 0."
    if int(s.get("maxRetry") or 0) < 0:
        return "'maxRetry' cannot be less than zero."
    ttl = s.get("ttlSecondsAfterFinished")
    if ttl is not None and int(ttl) < 0:
        return "'ttlSecondsAfterFinished' cannot be less than zero."
    if not tasks:
        return "No task specified in job spec"
    plugins: dict[str, list[str]] = s.get("plugins") or {}
    if "mpi" in plugins:
        master = jc.plugin_arg(plugins["mpi"], "master", "master")
        worker = jc.plugin_arg(plugins["mpi"], "worker", "worker")
        if _task_index(tasks, master) == -1:
            return "The specified mpi master task was not found"
        if _task_index(tasks, worker) == -1:
            return "The specified mpi worker task was not found"

    msg = ""
    total_replicas = 0
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        task_name = task.get("name", "")
        replicas = int(task.get("replicas") or 0)
        if replicas < 0:
            msg += f" 'replicas' < 0 in task: {task_name};"
        if task.get("minAvailable") is not None:
            if int(task["minAvailable"]) < 0:
                msg += f" 'minAvailable' < 0 in task: {task_name};"
            elif int(task["minAvailable"]) > replicas:
                msg += f" 'minAvailable' is greater than 'replicas' in task: {task_name};"
        total_replicas += replicas
        label_errs = dns1123_label_errors(task_name)
        if label_errs:
            msg += f" {go_list(label_errs)};"
        if task_name in seen:
            msg += f" duplicated task name {task_name};"
            break
        seen.add(task_name)
        policy_err = jc.validate_policies(task.get("policies"), "spec.tasks.policies")
        if policy_err:
            msg += policy_err + jc.valid_events_and_actions()
        pod_name = f"{name}-{task_name}-{index}"
        pod_errs = qualified_name_errors(pod_name)
        if pod_errs:
            msg += f"create pod with name {pod_name} validate failed {go_list(pod_errs)};"
        msg += jc.validate_task_template(task, index)
        msg += jc.validate_partition_policy(task)

    job_name_errs = qualified_name_errors(name)
    if job_name_errs:
        msg += f"create job with name {name} validate failed {go_list(job_name_errs)}"
    if total_replicas < int(s.get("minAvailable") or 0):
        msg += " job 'minAvailable' should not be greater than total replicas in tasks;"
    policy_err = jc.validate_policies(s.get("policies"), "spec.policies")
    if policy_err:
        msg += policy_err + jc.valid_events_and_actions()
    for plugin in plugins:
        if plugin not in c.KNOWN_JOB_PLUGINS:
            msg += f" unable to find job plugin: {plugin};"
    msg += jc.validate_volumes(s.get("volumes"))
    msg += jc.validate_network_topology(s.get("networkTopology"))
    msg += _queue_message(s.get("queue") or c.DEFAULT_QUEUE, lookup)
    if any(t.get("dependsOn") for t in tasks) and not jc.is_dag(tasks):
        msg += (
            " job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);"
        )
    return msg.strip()


_MUTABLE_TASK_FIELDS = ("replicas", "minAvailable")


def job_update_message(old: Obj, new: Obj) -> str:
    """Why Volcano would refuse to update ``old`` into ``new`` (``""`` when fine)."""
    new_spec, old_spec = spec(new), spec(old)
    total = 0
    for task in new_spec.get("tasks") or []:
        replicas = int(task.get("replicas") or 0)
        if replicas < 0:
            return f"'replicas' must be >= 0 in task: {task.get('name', '')}"
        min_available = task.get("minAvailable")
        if min_available is not None and int(min_available) < 0:
            return f"'minAvailable' must be >= 0 in task: {task.get('name', '')}"
        if min_available is not None and int(min_available) > replicas:
            return f"'minAvailable' must be <= 'replicas' in task: {task.get('name', '')};"
        total += replicas
    min_available = int(new_spec.get("minAvailable") or 0)
    if min_available > total:
        return "job 'minAvailable' must not be greater than total replicas"
    if min_available < 0:
        return "job 'minAvailable' must be >= 0"
    if len(old_spec.get("tasks") or []) != len(new_spec.get("tasks") or []):
        return "job updates may not add or remove tasks"

    def frozen(s: Obj) -> str:
        out = copy.deepcopy(s)
        for key in ("minAvailable", "priorityClassName"):
            out.pop(key, None)
        for task in out.get("tasks") or []:
            for key in _MUTABLE_TASK_FIELDS:
                task.pop(key, None)
        for volume in out.get("volumes") or []:
            if volume.get("volumeClaim") is not None:
                volume.pop("volumeClaimName", None)
        return json.dumps(out, sort_keys=True)

    if frozen(old_spec) != frozen(new_spec):
        return (
            "job updates may not change fields other than `minAvailable`, "
            "`tasks[*].replicas under spec`"
        )
    return ""


def validate_job(operation: str, job: Obj | None, old: Obj | None, lookup: Lookup) -> None:
    """Raise :class:`AdmissionDenied` when Volcano's webhook would deny the request."""
    if operation == "CREATE" and job is not None:
        msg = job_create_message(job, lookup)
    elif operation == "UPDATE" and job is not None and old is not None:
        msg = job_update_message(old, job)
    else:
        return
    if msg:
        raise AdmissionDenied(VALIDATE_WEBHOOK, msg)
