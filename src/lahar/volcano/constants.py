"""Names Volcano puts on the wire: label and annotation keys, phases, events, actions.

Users' tooling (kubectl selectors, dashboards, job scripts reading env vars) depends on
these exact strings, so they live in one place and every module imports them from here.
"""

from __future__ import annotations

from typing import Final

SCHEDULER_NAME: Final = "volcano"
DEFAULT_QUEUE: Final = "default"
ROOT_QUEUE: Final = "root"
DEFAULT_MAX_RETRY: Final = 3
DEFAULT_TASK_PREFIX: Final = "default"  # unnamed task i becomes "default<i>"

BATCH_GROUP: Final = "batch.volcano.sh"
SCHEDULING_GROUP: Final = "scheduling.volcano.sh"
JOB_API_VERSION: Final = "batch.volcano.sh/v1alpha1"
PODGROUP_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"

# pods created by the vcjob controller
JOB_NAME_KEY: Final = "volcano.sh/job-name"
JOB_NAMESPACE_KEY: Final = "volcano.sh/job-namespace"
QUEUE_NAME_KEY: Final = "volcano.sh/queue-name"
TASK_SPEC_KEY: Final = "volcano.sh/task-spec"
TASK_INDEX_KEY: Final = "volcano.sh/task-index"
JOB_VERSION_KEY: Final = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY: Final = "volcano.sh/job-retry-count"
POD_TEMPLATE_KEY: Final = "volcano.sh/template-uid"
GROUP_NAME_KEY: Final = "scheduling.k8s.io/group-name"
NUMA_POLICY_KEY: Final = "volcano.sh/numa-topology-policy"
PREEMPTABLE_KEY: Final = "volcano.sh/preemptable"
COOLDOWN_KEY: Final = "volcano.sh/cooldown-time"
REVOCABLE_ZONE_KEY: Final = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE: Final = "volcano.sh/jdb-max-unavailable"

# queues and namespaces
QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
HIERARCHY_KEY: Final = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_KEY: Final = "volcano.sh/hierarchy-weights"

# vcjob phases
PENDING: Final = "Pending"
ABORTING: Final = "Aborting"
ABORTED: Final = "Aborted"
RUNNING: Final = "Running"
RESTARTING: Final = "Restarting"
COMPLETING: Final = "Completing"
COMPLETED: Final = "Completed"
TERMINATING: Final = "Terminating"
TERMINATED: Final = "Terminated"
FAILED: Final = "Failed"
JOB_PHASES: Final = (
    PENDING,
    ABORTING,
    ABORTED,
    RUNNING,
    RESTARTING,
    COMPLETING,
    COMPLETED,
    TERMINATING,
    TERMINATED,
    FAILED,
)
FINISHED_PHASES: Final = frozenset({ABORTED, COMPLETED, TERMINATED, FAILED})

# lifecycle events (bus/v1alpha1)
ANY_EVENT: Final = "*"
POD_FAILED: Final = "PodFailed"
POD_EVICTED: Final = "PodEvicted"
POD_PENDING: Final = "PodPending"
POD_RUNNING: Final = "PodRunning"
JOB_UNKNOWN: Final = "Unknown"
TASK_COMPLETED: Final = "TaskCompleted"
TASK_FAILED: Final = "TaskFailed"
OUT_OF_SYNC: Final = "OutOfSync"
COMMAND_ISSUED: Final = "CommandIssued"
JOB_UPDATED: Final = "JobUpdated"

# actions
ABORT_JOB: Final = "AbortJob"
RESTART_JOB: Final = "RestartJob"
RESTART_TASK: Final = "RestartTask"
RESTART_POD: Final = "RestartPod"
RESTART_PARTITION: Final = "RestartPartition"
TERMINATE_JOB: Final = "TerminateJob"
COMPLETE_JOB: Final = "CompleteJob"
RESUME_JOB: Final = "ResumeJob"
SYNC_JOB: Final = "SyncJob"
ENQUEUE_JOB: Final = "EnqueueJob"
SYNC_QUEUE: Final = "SyncQueue"
OPEN_QUEUE: Final = "OpenQueue"
CLOSE_QUEUE: Final = "CloseQueue"

# Events and actions a user may put in a lifecycle policy, in the order lahar prints
# them in admission messages (Volcano prints Go map order, which is random).
USER_EVENTS: Final = (
    ANY_EVENT,
    POD_FAILED,
    POD_EVICTED,
    JOB_UNKNOWN,
    TASK_COMPLETED,
    TASK_FAILED,
    JOB_UPDATED,
)
USER_ACTIONS: Final = (
    ABORT_JOB,
    RESTART_JOB,
    RESTART_TASK,
    RESTART_POD,
    RESTART_PARTITION,
    TERMINATE_JOB,
    COMPLETE_JOB,
    RESUME_JOB,
)

# job plugins the controller knows
KNOWN_JOB_PLUGINS: Final = frozenset(
    {"env", "svc", "ssh", "tensorflow", "mpi", "pytorch", "ray", "hcclrank"}
)
