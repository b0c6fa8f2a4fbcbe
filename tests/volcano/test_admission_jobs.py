"""vcjob admission: defaulting and every validation rule, with Volcano's exact messages."""

from __future__ import annotations

import pytest

from lahar.volcano.admission import (
    AdmissionDenied,
    job_create_message,
    job_update_message,
    mutate_job,
    validate_job,
)
from tests.volcano.helpers import container, job, lookup, queue, task

VALID_EVENTS = "[* PodFailed PodEvicted Unknown TaskCompleted TaskFailed JobUpdated]"
VALID_ACTIONS = "[AbortJob RestartJob RestartTask RestartPod RestartPartition TerminateJob CompleteJob ResumeJob]"


def created(j: dict) -> str:
    return job_create_message(mutate_job(j), lookup())


# --- defaulting -------------------------------------------------------------------


def test_mutate_fills_volcano_defaults() -> None:
    j = job(
        "j", {"replicas": 3, "template": {"spec": {"containers": [container()]}}}, task("ps", 2, 1)
    )
    out = mutate_job(j)
    s = out["spec"]
    assert s["queue"] == "default"
    assert s["schedulerName"] == "volcano"
    assert s["maxRetry"] == 3
    assert [t["name"] for t in s["tasks"]] == ["default0", "ps"]
    assert [t["minAvailable"] for t in s["tasks"]] == [3, 1]
    assert [t["maxRetry"] for t in s["tasks"]] == [3, 3]
    assert s["minAvailable"] == 4  # summed after the task defaults
    assert "queue" not in j["spec"]  # the input is not modified


def test_mutate_keeps_what_the_user_set() -> None:
    j = job(
        "j",
        task("w", 4, 2, maxRetry=7),
        queue="q",
        schedulerName="other",
        maxRetry=5,
        minAvailable=1,
    )
    s = mutate_job(j)["spec"]
    assert (s["queue"], s["schedulerName"], s["maxRetry"], s["minAvailable"]) == (
        "q",
        "other",
        5,
        1,
    )
    assert (s["tasks"][0]["minAvailable"], s["tasks"][0]["maxRetry"]) == (2, 7)


def test_mutate_host_network_dns_policy_and_partitions() -> None:
    t = task("w", 6, partitionPolicy={"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2})
    t["template"]["spec"]["hostNetwork"] = True
    s = mutate_job(job("j", t))["spec"]
    assert s["tasks"][0]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert s["tasks"][0]["minAvailable"] == 4  # minPartitions x partitionSize


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ({"mpi": []}, {"mpi": [], "svc": [], "ssh": []}),
        ({"tensorflow": []}, {"tensorflow": [], "svc": []}),
        ({"pytorch": ["--master=m"]}, {"pytorch": ["--master=m"], "svc": []}),
        (
            {"ray": [], "svc": ["--disable-network-policy"]},
            {"ray": [], "svc": ["--disable-network-policy"]},
        ),
        ({"env": []}, {"env": []}),
    ],
)
def test_mutate_plugin_dependencies(plugins: dict, expected: dict) -> None:
    assert (
        mutate_job(job("j", task("master", 1), task("worker", 1), plugins=plugins))["spec"][
            "plugins"
        ]
        == expected
    )


# --- validation on CREATE -----------------------------------------------------------


def test_valid_job_passes() -> None:
    assert created(job("j", task("w", 2))) == ""


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"minAvailable": -1}, "job 'minAvailable' must be >= 0."),
        ({"maxRetry": -1}, "'maxRetry' cannot be less than zero."),
        ({"ttlSecondsAfterFinished": -5}, "'ttlSecondsAfterFinished' cannot be less than zero."),
    ],
)
def test_negative_numbers_are_reported_alone(spec: dict, message: str) -> None:
    assert job_create_message(job("j", task("w", 2), **spec, queue="missing"), lookup()) == message


def test_no_tasks() -> None:
    j = job("j")
    j["spec"]["tasks"] = []
    assert job_create_message(j, lookup()) == "No task specified in job spec"


def test_mpi_master_and_worker_must_exist() -> None:
    j = job("j", task("worker", 1), plugins={"mpi": []})
    assert created(j) == "The specified mpi master task was not found"
    j = job("j", task("launcher", 1), task("w", 1), plugins={"mpi": ["--master=launcher"]})
    assert created(j) == "The specified mpi worker task was not found"
    j = job(
        "j", task("launcher", 1), task("w", 1), plugins={"mpi": ["--master=launcher", "--worker=w"]}
    )
    assert created(j) == ""


def test_task_numbers() -> None:
    assert created(job("j", task("w", 1, 2), minAvailable=1)) == (
        "'minAvailable' is greater than 'replicas' in task: w;"
    )
    j = mutate_job(job("j", task("w", 1)))
    j["spec"]["tasks"][0]["minAvailable"] = -1
    assert job_create_message(j, lookup()) == "'minAvailable' < 0 in task: w;"
    j["spec"]["tasks"][0].update(replicas=-1, minAvailable=0)
    j["spec"]["minAvailable"] = 0
    # As in Volcano, a negative replica count also trips the two comparisons with it.
    assert job_create_message(j, lookup()) == (
        "'replicas' < 0 in task: w; 'minAvailable' is greater than 'replicas' in task: w; "
        "job 'minAvailable' should not be greater than total replicas in tasks;"
    )


def test_job_min_available_above_replicas() -> None:
    assert created(job("j", task("w", 2), minAvailable=3)) == (
        "job 'minAvailable' should not be greater than total replicas in tasks;"
    )


def test_duplicated_task_name_stops_the_task_loop() -> None:
    assert created(job("j", task("w", 1), task("w", 1))) == "duplicated task name w;"


def test_task_name_must_be_a_dns_label() -> None:
    msg = created(job("j", task("Bad_Name", 1)))
    assert msg.startswith("[a lowercase RFC 1123 label must consist of lower case alphanumeric")
    assert "create pod with name j-Bad_Name-0 validate failed" not in msg  # still a qualified name


def test_generated_pod_name_too_long() -> None:
    name = "j" * 60
    msg = created(job(name, task("worker", 1)))
    assert (
        f"create pod with name {name}-worker-0 validate failed [name part must be no more than 63 characters];"
        in msg
    )


def test_job_name_must_be_qualified() -> None:
    msg = created(job("-bad", task("w", 1)))
    assert (
        "create job with name -bad validate failed [name part must consist of alphanumeric" in msg
    )


@pytest.mark.parametrize(
    ("policies", "error"),
    [
        (
            [{"event": "PodFailed", "exitCode": 1, "action": "AbortJob"}],
            "must not specify event and exitCode simultaneously",
        ),
        ([{"action": "AbortJob"}], "either event and exitCode should be specified"),
        (
            [{"event": "Nope", "action": "AbortJob"}],
            'spec.policies: Invalid value: "Nope": invalid policy event',
        ),
        (
            [{"event": "PodFailed", "action": "SyncJob"}],
            'spec.policies: Invalid value: "SyncJob": invalid policy action',
        ),
        (
            [{"event": "OutOfSync", "action": "AbortJob"}],
            'spec.policies: Invalid value: "OutOfSync": invalid policy event',
        ),
        (
            [
                {"event": "PodFailed", "action": "AbortJob"},
                {"events": ["PodFailed"], "action": "RestartJob"},
            ],
            "duplicate event PodFailed  across different policy",
        ),
        ([{"exitCode": 0, "action": "AbortJob"}], "0 is not a valid error code"),
        (
            [{"exitCode": 3, "action": "AbortJob"}, {"exitCode": 3, "action": "RestartJob"}],
            "duplicate exitCode 3",
        ),
        (
            [{"event": "*", "action": "AbortJob"}, {"event": "PodEvicted", "action": "RestartJob"}],
            "if there's * here, no other policy should be here",
        ),
    ],
)
def test_job_policies(policies: list, error: str) -> None:
    msg = created(job("j", task("w", 1), policies=policies))
    assert msg == (
        f"1 error occurred:\n\t* {error}\n\n valid events are {VALID_EVENTS}, valid actions are {VALID_ACTIONS};"
    )


def test_task_policies_use_the_task_path() -> None:
    msg = created(job("j", task("w", 1, policies=[{"event": "Bogus", "action": "AbortJob"}])))
    assert msg.startswith(
        '1 error occurred:\n\t* spec.tasks.policies: Invalid value: "Bogus": invalid policy event'
    )


def test_valid_policies_pass() -> None:
    policies = [
        {"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"},
        {"event": "TaskCompleted", "action": "CompleteJob"},
        {"exitCode": 137, "action": "RestartTask"},
    ]
    assert created(job("j", task("w", 1), policies=policies)) == ""


def test_unknown_plugin() -> None:
    assert (
        created(job("j", task("w", 1), plugins={"magic": []}))
        == "unable to find job plugin: magic;"
    )


@pytest.mark.parametrize(
    ("volumes", "message"),
    [
        ([{"volumeClaimName": "pvc"}], "mountPath is required;"),
        (
            [
                {"mountPath": "/d", "volumeClaimName": "a"},
                {"mountPath": "/d", "volumeClaimName": "b"},
            ],
            "duplicated mountPath: /d;",
        ),
        ([{"mountPath": "/d"}], "either VolumeClaim or VolumeClaimName must be specified;"),
        (
            [{"mountPath": "/d", "volumeClaimName": "a", "volumeClaim": {}}],
            "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
            "If you want to create a new PVC, you do not need to specify VolumeClaimName",
        ),
    ],
)
def test_volumes(volumes: list, message: str) -> None:
    assert created(job("j", task("w", 1), volumes=volumes)) == message


def test_template_must_have_containers() -> None:
    t = task("w", 1)
    t["template"]["spec"]["containers"] = []
    assert created(job("j", t)) == "spec.task[0].template.spec.containers: Required value."


def test_topology_policy_requires_guaranteed_integer_cpus() -> None:
    t = task("w", 1, topologyPolicy="single-numa-node")
    assert created(job("j", t)) == "spec.task[0] isn't Guaranteed pod, kind=BestEffort"
    t["template"]["spec"]["containers"] = [container(limits={"cpu": "1500m", "memory": "1Gi"})]
    assert created(job("j", t)) == "the cpu request isn't  an integer in spec.task[0] container[0]."
    t["template"]["spec"]["containers"] = [container(limits={"cpu": "2", "memory": "1Gi"})]
    assert created(job("j", t)) == ""
    t["template"]["spec"]["containers"] = [
        container(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})
    ]
    assert created(job("j", t)) == "spec.task[0] isn't Guaranteed pod, kind=Burstable"


def test_queue_must_exist_be_open_and_be_a_leaf() -> None:
    j = mutate_job(job("j", task("w", 1), queue="q"))
    assert (
        job_create_message(j, lookup())
        == 'unable to find job queue: queue.scheduling.volcano.sh "q" not found;'
    )
    assert job_create_message(j, lookup(queue("q", "Closed"))) == (
        "can only submit job to queue with state `Open`, queue `q` status is `Closed`;"
    )
    assert job_create_message(
        j, lookup(queue("q"), queue("c1", parent="q"), queue("c2", parent="q"))
    ) == ("can only submit job to leaf queue, queue `q` has 2 child queues;")
    j["spec"]["queue"] = "root"
    assert job_create_message(j, lookup(queue("root"))) == "can not submit job to root queue;"


def test_depends_on_must_be_a_dag() -> None:
    a = task("a", 1, dependsOn={"name": ["b"]})
    b = task("b", 1, dependsOn={"name": ["a"]})
    assert created(job("j", a, b)) == (
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);"
    )
    assert created(job("j", task("a", 1), task("b", 1, dependsOn={"name": ["a"]}))) == ""


def test_partition_policy() -> None:
    t = task("w", 5, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})
    assert (
        created(job("j", t))
        == "'replicas' must equal 'totalPartitions' * 'partitionSize' in task: w;"
    )
    t = task("w", 4, partitionPolicy={"totalPartitions": 0, "partitionSize": 2})
    assert created(job("j", t)) == "'totalPartitions' must be greater than 0 in task: w;"


def test_network_topology_tiers_are_exclusive() -> None:
    nt = {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}
    assert created(job("j", task("w", 1), networkTopology=nt)) == (
        "must not specify 'highestTierAllowed' and 'highestTierName' at the same time;"
    )


def test_problems_accumulate_in_one_message() -> None:
    msg = created(job("j", task("w", 1, 3), plugins={"magic": []}, queue="nowhere"))
    assert msg == (
        "'minAvailable' is greater than 'replicas' in task: w; job 'minAvailable' should not be "
        "greater than total replicas in tasks; unable to find job plugin: magic; unable to find "
        'job queue: queue.scheduling.volcano.sh "nowhere" not found;'
    )


# --- validation on UPDATE -----------------------------------------------------------


def _base() -> dict:
    return mutate_job(job("j", task("w", 4, 2), task("ps", 1)))


def test_update_may_scale_and_change_priority_class() -> None:
    old, new = _base(), _base()
    new["spec"]["tasks"][0].update(replicas=6, minAvailable=3)
    new["spec"]["minAvailable"] = 4
    new["spec"]["priorityClassName"] = "high"
    assert job_update_message(old, new) == ""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s["tasks"][0].update(replicas=-1, minAvailable=0),
            "'replicas' must be >= 0 in task: w",
        ),
        (
            lambda s: s["tasks"][0].update(minAvailable=5),
            "'minAvailable' must be <= 'replicas' in task: w;",
        ),
        (
            lambda s: s.update(minAvailable=9),
            "job 'minAvailable' must not be greater than total replicas",
        ),
        (lambda s: s.update(minAvailable=-1), "job 'minAvailable' must be >= 0"),
        (lambda s: s["tasks"].pop(), "job updates may not add or remove tasks"),
        (
            lambda s: s.update(queue="other"),
            "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec`",
        ),
        (
            lambda s: s["tasks"][0]["template"]["spec"].update(restartPolicy="Always"),
            "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec`",
        ),
    ],
)
def test_update_rules(change, message: str) -> None:
    old, new = _base(), _base()
    change(new["spec"])
    assert job_update_message(old, new) == message


def test_validate_job_raises_with_the_webhook_name() -> None:
    with pytest.raises(AdmissionDenied) as info:
        validate_job(
            "CREATE",
            mutate_job(job("j", task("w", 1), queue="q")),
            None,
            lookup(queue("q", "Closed")),
        )
    assert info.value.full_message() == (
        'admission webhook "validatejob.volcano.sh" denied the request: can only submit job to '
        "queue with state `Open`, queue `q` status is `Closed`;"
    )
    validate_job("DELETE", None, None, lookup())  # not intercepted
