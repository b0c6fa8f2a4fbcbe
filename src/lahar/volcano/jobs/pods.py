"""Building a vcjob's pods: ``<job>-<task>-<index>`` from the task template, with the
labels, annotations, owner reference and scheduler name Volcano's controller sets, and
the job plugins' changes (``env``, ``svc``) applied.
"""

from __future__ import annotations

import copy

from lahar.volcano import constants as c
from lahar.volcano.jobs import plugins as jp
from lahar.volcano.jobs import spec as js
from lahar.volcano.jobs.spec import Obj

# Job annotations and labels copied onto its pods.
_COPIED_ANNOTATIONS = (c.PREEMPTABLE_KEY, c.COOLDOWN_KEY, c.REVOCABLE_ZONE_KEY)
_COPIED_LABELS = (c.PREEMPTABLE_KEY, c.COOLDOWN_KEY)


def build_pod(job: Obj, task_index: int, index: int) -> Obj:
    """The pod for replica ``index`` of the job's task number ``task_index``."""
    task = js.tasks(job)[task_index]
    tname = js.task_name(task, task_index)
    template = copy.deepcopy(task.get("template") or {})
    tmeta = template.get("metadata") or {}
    status = job.get("status") or {}
    pod_name = js.make_pod_name(js.name(job), tname, index)
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name,
            "namespace": js.namespace(job),
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [js.owner_reference(job)],
        },
        "spec": template.get("spec") or {},
    }
    pod_spec = pod["spec"]
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = (job.get("spec") or {}).get("schedulerName") or c.SCHEDULER_NAME
    if not pod_spec.get("priorityClassName") and (job.get("spec") or {}).get("priorityClassName"):
        pod_spec["priorityClassName"] = job["spec"]["priorityClassName"]

    annotations = pod["metadata"]["annotations"]
    annotations[c.TASK_SPEC_KEY] = tname
    annotations[c.GROUP_NAME_KEY] = js.podgroup_name(job)
    annotations[c.JOB_NAME_KEY] = js.name(job)
    annotations[c.QUEUE_NAME_KEY] = js.queue(job)
    annotations[c.JOB_VERSION_KEY] = str(int(status.get("version") or 0))
    annotations[c.JOB_RETRY_COUNT_KEY] = str(int(status.get("retryCount") or 0))
    annotations[c.POD_TEMPLATE_KEY] = f"{js.name(job)}-{tname}"
    annotations[c.TASK_INDEX_KEY] = str(index)
    if task.get("topologyPolicy"):
        annotations[c.NUMA_POLICY_KEY] = task["topologyPolicy"]
    job_annotations = (job.get("metadata") or {}).get("annotations") or {}
    for key in _COPIED_ANNOTATIONS:
        if key in job_annotations:
            annotations[key] = job_annotations[key]
    if c.JDB_MIN_AVAILABLE in job_annotations:
        annotations[c.JDB_MIN_AVAILABLE] = job_annotations[c.JDB_MIN_AVAILABLE]
    elif c.JDB_MAX_UNAVAILABLE in job_annotations:
        annotations[c.JDB_MAX_UNAVAILABLE] = job_annotations[c.JDB_MAX_UNAVAILABLE]

    labels = pod["metadata"]["labels"]
    labels[c.TASK_INDEX_KEY] = str(index)
    labels[c.JOB_NAME_KEY] = js.name(job)
    labels[c.TASK_SPEC_KEY] = tname
    labels[c.JOB_NAMESPACE_KEY] = js.namespace(job)
    labels[c.QUEUE_NAME_KEY] = js.queue(job)
    job_labels = (job.get("metadata") or {}).get("labels") or {}
    for key in _COPIED_LABELS:
        if key in job_labels:
            labels[key] = job_labels[key]

    jp.apply_pod_plugins(pod, job, index)
    return pod


def desired_pod_names(job: Obj) -> dict[str, tuple[int, int]]:
    """Pod name -> (task position, replica index) for every replica the job wants."""
    out: dict[str, tuple[int, int]] = {}
    for t, task in enumerate(js.tasks(job)):
        tname = js.task_name(task, t)
        for index in range(js.replicas(task)):
            out[js.make_pod_name(js.name(job), tname, index)] = (t, index)
    return out
